package service

import (
	"io"
	"log/slog"
	"runtime"
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
