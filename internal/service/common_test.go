package service

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/hourglass/hourglass/internal/cli"
)

// TestScaleProcsDeprecated: --scale-procs, from the command line or the
// environment, is still accepted and valid, and LogDeprecated warns once
// that it is ignored; without it nothing is logged.
func TestScaleProcsDeprecated(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string // HOURGLASS_SCALE_PROCS
		want int    // warnings
	}{
		{nil, "", 0},
		{[]string{"--scale-procs"}, "", 1},
		{[]string{"--scale-procs=true"}, "", 1},
		{[]string{"--scale-procs=false"}, "", 0},
		{nil, "true", 1},
		{[]string{"--scale-procs=false"}, "true", 0}, // the flag wins
	} {
		t.Setenv("HOURGLASS_SCALE_PROCS", tc.env)
		var c Common
		fs := cli.NewFlagSet("router", "")
		c.Register(fs, "router", "")
		if err := ParseArgs(fs, tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if err := c.Validate(fs); err != nil {
			t.Errorf("%q: %v, want valid", tc.args, err)
		}
		var out bytes.Buffer
		c.LogDeprecated(slog.New(slog.NewTextHandler(&out, nil)))
		lines := strings.Count(out.String(), "\n")
		if lines != tc.want || tc.want > 0 && (!strings.Contains(out.String(), "level=WARN") || !strings.Contains(out.String(), "--scale-procs")) {
			t.Errorf("%q, HOURGLASS_SCALE_PROCS=%q: logged %q, want %d warning naming --scale-procs", tc.args, tc.env, out.String(), tc.want)
		}
	}
}

// TestHTTPAddrPort: a --http-addr whose port is not 0 to 65535 is a bad
// configuration naming the flag, not a listen error after the topics were
// created; port 0 (any free port) and an empty address (no server) are
// valid.
func TestHTTPAddrPort(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:8080", true},
		{":8080", true},
		{"127.0.0.1:0", true},
		{"", true},
		{"127.0.0.1:99999", false},
		{"127.0.0.1:-1", false},
		{"127.0.0.1:http", false},
		{"127.0.0.1:", false},
		{"garbage", false},
	} {
		var c Common
		fs := cli.NewFlagSet("router", "")
		c.Register(fs, "router", "127.0.0.1:8080")
		if err := ParseArgs(fs, []string{"--http-addr=" + tc.addr}); err != nil {
			t.Fatalf("%q: %v", tc.addr, err)
		}
		err := c.Validate(fs)
		if tc.ok {
			if err != nil {
				t.Errorf("--http-addr %q: %v, want valid", tc.addr, err)
			}
			continue
		}
		var fe *cli.FlagError
		if !errors.As(err, &fe) || fe.Flag != "http-addr" || strings.Contains(err.Error(), "\n") {
			t.Errorf("--http-addr %q: %v, want one problem naming --http-addr", tc.addr, err)
		}
	}
}
