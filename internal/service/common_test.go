package service

import (
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/hourglass/hourglass/internal/cli"
)

// TestScaleProcsFlag: --scale-procs is off by default, and on gives a
// scaler wherever there is more than one processor to scale from.
func TestScaleProcsFlag(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--scale-procs"}, runtime.GOMAXPROCS(0) > 1}, // nothing to scale on one processor
		{[]string{"--scale-procs=false"}, false},
	} {
		var c Common
		fs := cli.NewFlagSet("router", "")
		c.Register(fs, "router", "")
		if err := ParseArgs(fs, tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if got := c.Procs(log) != nil; got != tc.want {
			t.Errorf("%q: scaler %v, want %v (GOMAXPROCS %d)", tc.args, got, tc.want, runtime.GOMAXPROCS(0))
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
		errs := c.Validate(fs)
		if tc.ok {
			if len(errs) != 0 {
				t.Errorf("--http-addr %q: %v, want valid", tc.addr, errs)
			}
			continue
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "http-addr") {
			t.Errorf("--http-addr %q: %v, want one problem naming --http-addr", tc.addr, errs)
		}
	}
}
