package hourglasscmd_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/hourglasscmd"
	"github.com/hourglass/hourglass/internal/cmd/routercmd"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
)

// TestCommandLineErrors: a bad command line is reported in the --flag
// spelling, with a suggestion when one is close and the --help of the
// command as it was run; Main exits 2 for it.
func TestCommandLineErrors(t *testing.T) {
	tests := []struct {
		name string
		cmd  service.Command
		args []string
		want string // the whole error
	}{
		{"router unknown flag", routercmd.Run, []string{"--tier", "1m"}, "unknown flag --tier; did you mean --tiers?\nsee router --help"},
		{"hourglass router unknown flag", hourglasscmd.Run, []string{"router", "--tier", "1m"}, "unknown flag --tier; did you mean --tiers?\nsee hourglass router --help"},
		{"unknown flag, nothing close", routercmd.Run, []string{"-bogus"}, "unknown flag --bogus\nsee router --help"},
		{"topics unknown flag", hourglasscmd.Run, []string{"topics", "--chek"}, "unknown flag --chek; did you mean --check?\nsee hourglass topics --help"},
		{"flag without its value", routercmd.Run, []string{"--tiers"}, "--tiers needs a value: --tiers durations\nsee router --help"},
		{"duration without a unit", routercmd.Run, []string{"--session-timeout", "5"}, `--session-timeout: "5" is not a duration; want a number with a unit, like 5s, 250ms or 1m30s` + "\nsee router --help"},
		{"stray argument", routercmd.Run, []string{"extra"}, `unexpected arguments ["extra"]` + "\nsee router --help"},
		{"unknown command", hourglasscmd.Run, []string{"rotuer"}, `unknown command "rotuer"; did you mean router?` + "\nsee hourglass --help"},
		{"no command", hourglasscmd.Run, nil, "no command given; try hourglass demo for a pipeline on this machine"},
		{"dlq without a subcommand", hourglasscmd.Run, []string{"dlq"}, "dlq needs a subcommand: list or replay"},
		{"cancel unknown flag", hourglasscmd.Run, []string{"cancel", "--id", "1", "--dux", "1"}, "unknown flag --dux; did you mean --due?\nsee hourglass cancel --help"},
		{"misspelt command", hourglasscmd.Run, []string{"reshedule"}, `unknown command "reshedule"; did you mean reschedule?` + "\nsee hourglass --help"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := cmdtest.Run(t, tt.cmd, tt.args...)
			var (
				ue service.UsageError
				ce *cli.CommandLineError
			)
			if !errors.As(err, &ue) || !errors.As(err, &ce) {
				t.Fatalf("error %T %v, want a service.UsageError with a *cli.CommandLineError", err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tt.want)
			}
		})
	}
}

// TestNoCommand: hourglass alone prints its usage before the error.
func TestNoCommand(t *testing.T) {
	_, stderr, err := cmdtest.Run(t, hourglasscmd.Run)
	if err == nil {
		t.Fatal("no error")
	}
	if !strings.Contains(stderr, "Usage: hourglass <command> [flags]") || !strings.Contains(stderr, "demo ") {
		t.Errorf("stderr is not the usage:\n%s", stderr)
	}
}

// TestHelpNamesEnv: every flag line of every command's help names its
// environment variable or says it has none, and no help claims that every
// flag has one.
func TestHelpNamesEnv(t *testing.T) {
	for _, cmd := range [][]string{
		{"router"}, {"canceller"}, {"topics"}, {"dlq", "list"}, {"dlq", "replay"},
		{"schedule"}, {"cancel"}, {"reschedule"}, {"status"},
		{"reconcile"}, {"recorder"}, {"report"}, {"demo"}, {"bench"},
	} {
		t.Run(strings.Join(cmd, " "), func(t *testing.T) {
			_, stderr, _ := cmdtest.Run(t, hourglasscmd.Run, append(cmd, "--help")...)
			if strings.Contains(stderr, "each has an environment variable") {
				t.Errorf("help claims every flag has an environment variable:\n%s", stderr)
			}
			n := 0
			for line := range strings.Lines(stderr) {
				if !strings.HasPrefix(line, "  --") {
					continue
				}
				n++
				if !strings.Contains(line, "  (env HOURGLASS_") && !strings.Contains(line, "  (no env") {
					t.Errorf("flag line names no environment variable and does not say it has none: %q", line)
				}
			}
			if n == 0 {
				t.Errorf("no flag lines in the help:\n%s", stderr)
			}
		})
	}
}
