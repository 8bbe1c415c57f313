package service

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestVersionRequested(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--version"}, true},
		{[]string{"-version"}, true},
		{[]string{"--version=true"}, true},
		{[]string{"--version=false"}, false},
		{[]string{"--brokers", "k:9092", "--version"}, true},
		{[]string{"router", "--version"}, true},
		{[]string{"version"}, false}, // hourglass version is a command of its own
		{[]string{"--help"}, false},
		{[]string{"dlq", "--", "--version"}, false},
		{[]string{"--versions"}, false},
	}
	for _, tt := range tests {
		if got := VersionRequested(tt.args); got != tt.want {
			t.Errorf("VersionRequested(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestRun(t *testing.T) {
	called := false
	fails := func(err error) Command {
		return func(context.Context, []string, io.Writer, io.Writer) error {
			called = true
			return err
		}
	}
	tests := []struct {
		name       string
		args       []string
		err        error
		want       int
		wantCalled bool
		wantStdout string
		wantStderr string
		stopped    bool // a signal stopped the command
	}{
		{name: "clean stop", want: 0, wantCalled: true},
		{name: "help", err: flag.ErrHelp, want: 0, wantCalled: true},
		{name: "usage", err: UsageError{errors.New("--brokers: empty")}, want: 2, wantCalled: true, wantStderr: "router: invalid configuration:\n--brokers: empty\n"},
		{name: "failure", err: errors.New("boom"), want: 1, wantCalled: true, wantStderr: "router: boom\n"},
		{
			name: "stopped while starting", stopped: true, err: fmt.Errorf("router: topics: describe: %w", context.Canceled), want: 0, wantCalled: true,
			wantStderr: "router: stopped on a signal: topics: describe: context canceled\n",
		},
		// Canceled without a signal is a failure.
		{name: "canceled, not stopped", err: context.Canceled, want: 1, wantCalled: true, wantStderr: "router: context canceled\n"},
		{name: "failure after a stop", stopped: true, err: errors.New("boom"), want: 1, wantCalled: true, wantStderr: "router: boom\n"},
		// --version wins over bad flags: the command does not run.
		{name: "version", args: []string{"--brokers", "", "--version"}, err: UsageError{errors.New("--brokers: empty")}, want: 0, wantStdout: "router "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called = false
			var stdout, stderr bytes.Buffer
			ctx := t.Context()
			if tt.stopped {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			got := run(ctx, "router", fails(tt.err), tt.args, &stdout, &stderr)
			if got != tt.want {
				t.Errorf("exit code %d, want %d", got, tt.want)
			}
			if called != tt.wantCalled {
				t.Errorf("command called: %v, want %v", called, tt.wantCalled)
			}
			if !strings.HasPrefix(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout %q, want it to start with %q", stdout.String(), tt.wantStdout)
			}
			if stderr.String() != tt.wantStderr {
				t.Errorf("stderr %q, want %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}
