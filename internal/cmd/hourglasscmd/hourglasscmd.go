package hourglasscmd

import (
	"github.com/hourglass/hourglass/internal/cmd/benchcmd"
	"github.com/hourglass/hourglass/internal/cmd/cancellercmd"
	"github.com/hourglass/hourglass/internal/cmd/consolecmd"
	"github.com/hourglass/hourglass/internal/cmd/democmd"
	"github.com/hourglass/hourglass/internal/cmd/dlqcmd"
	"github.com/hourglass/hourglass/internal/cmd/reconcilecmd"
	"github.com/hourglass/hourglass/internal/cmd/recordercmd"
	"github.com/hourglass/hourglass/internal/cmd/reportcmd"
	"github.com/hourglass/hourglass/internal/cmd/routercmd"
	"github.com/hourglass/hourglass/internal/cmd/schedulecmd"
	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/cmd/topicscmd"

	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/suggest"
)

const hourglassUsage = `hourglass is the Hourglass tool.

Usage: hourglass <command> [flags]

Commands:
  demo        run a complete local pipeline on an embedded broker, with a demo order source
  bench       measure the pipeline on an embedded broker and print one JSON line
  topics      create or check the pipeline's topics
  schedule    schedule one deadline (a record of a delay topic)
  cancel      cancel a task's deadlines (a record of the cancellations topic)
  reschedule  move a task's deadline: cancel and schedule in one transaction
  status      show where a task is: waiting, forwarded, closed, cancelled or dead-lettered
  dlq         list and replay dead letters
  reconcile   close overdue unpaid orders the pipeline missed (scans the order table)
  recorder    run the recorder service: outcome events into ClickHouse
  report      summarize a time window of outcomes from ClickHouse (text, json, html)
  console     serve a web console: forecast, outcomes, task timelines, dead letters, actions
  router      run the router service (same as the router binary)
  canceller   run the canceller service (same as the canceller binary)
  version     print the version, VCS revision and Go version (also --version)

Run "hourglass <command> --help" for a command's flags.
`

var subcommands = map[string]service.Command{
	"demo":       democmd.Run,
	"bench":      benchcmd.Run,
	"topics":     topicscmd.Run,
	"schedule":   schedulecmd.Schedule,
	"cancel":     schedulecmd.Cancel,
	"reschedule": schedulecmd.Reschedule,
	"status":     statuscmd.Run,
	"dlq":        dlqcmd.Run,
	"reconcile":  reconcilecmd.Run,
	"recorder":   recordercmd.Run,
	"report":     reportcmd.Run,
	"console":    consolecmd.Run,
	"router":     routercmd.Run,
	"canceller":  cancellercmd.Run,
	"version":    runVersion,
}

const versionUsage = `Usage: hourglass version

Prints the version, the VCS revision with its time and whether the tree was
modified, and the Go version and platform the binary was built with. Every
binary and command also takes --version.
`

// runVersion is `hourglass version`.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if slices.Contains([]string{"-h", "-help", "--help"}, args[0]) {
			fmt.Fprint(stderr, versionUsage)
			return flag.ErrHelp
		}
		return service.UsageError{Err: fmt.Errorf("version takes no arguments, got %q", args)}
	}
	service.PrintVersion(stdout, "hourglass")
	return nil
}

// Run is the hourglass tool: it dispatches to its subcommands. Without a
// command it prints the usage and returns a UsageError that says so.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
		fmt.Fprint(stderr, hourglassUsage)
		if len(args) == 0 {
			return service.UsageError{Err: &cli.CommandLineError{Err: errors.New("no command given; try hourglass demo for a pipeline on this machine")}}
		}
		return flag.ErrHelp
	}
	cmd, ok := subcommands[args[0]]
	if !ok {
		names := make([]string, 0, len(subcommands))
		for n := range subcommands {
			names = append(names, n)
		}
		slices.Sort(names)
		err := fmt.Errorf("unknown command %q; commands: %s", args[0], strings.Join(names, ", "))
		if s := suggest.Closest(args[0], names); s != "" {
			err = fmt.Errorf("unknown command %q; did you mean %s?", args[0], s)
		}
		return service.UsageError{Err: &cli.CommandLineError{Cmd: "hourglass", Err: err}}
	}
	err := cmd(ctx, args[1:], stdout, stderr)
	// The hint of a bad command line names the command as run here.
	var ce *cli.CommandLineError
	if errors.As(err, &ce) && ce.Cmd != "" && !strings.HasPrefix(ce.Cmd, "hourglass ") {
		ce.Cmd = "hourglass " + ce.Cmd
	}
	return err
}
