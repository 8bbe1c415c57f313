package service

import (
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/hourglass/hourglass/internal/cli"
)

// TestExitCode: what Main prints and its exit code for each kind of error.
func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code int
		want string // stderr
	}{
		{"nil", nil, 0, ""},
		{"help", flag.ErrHelp, 0, ""},
		{"command line", UsageError{&cli.CommandLineError{Cmd: "router", Err: errors.New("unknown flag --tier; did you mean --tiers?")}}, 2,
			"router: unknown flag --tier; did you mean --tiers?\nsee router --help\n"},
		{"configuration", UsageError{errors.New("--partitions: 0: want 1 to 10000")}, 2,
			"router: invalid configuration:\n--partitions: 0: want 1 to 10000\n"},
		{"other", errors.New("dial: refused"), 1, "router: dial: refused\n"},
		{"the service's own", errors.New("router: cancellations stopped: disk full"), 1, "router: cancellations stopped: disk full\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			if code := exitCode("router", tt.err, &stderr); code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if stderr.String() != tt.want {
				t.Errorf("stderr:\n%q\nwant:\n%q", stderr.String(), tt.want)
			}
		})
	}
}
