package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hourglass/hourglass/internal/cli"
)

// Command is the entry point of a command: it runs until done or until ctx is
// canceled and returns nil after a clean stop.
type Command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// UsageError is a bad command line or configuration; Main exits 2 for it.
// Main prints a bad command line (a *cli.CommandLineError) as it is and
// anything else as an invalid configuration.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Main runs cmd with the process's arguments and stops it gracefully on
// SIGINT or SIGTERM. It exits 0 after a clean stop or --help, 2 for bad
// configuration and 1 for any other error.
func Main(name string, cmd Command) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := cmd(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(name, err, os.Stderr))
}

func exitCode(name string, err error, stderr io.Writer) int {
	var (
		ue UsageError
		ce *cli.CommandLineError
	)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ce):
		fmt.Fprintf(stderr, "%s: %v\n", name, ce)
		return 2
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: invalid configuration:\n%v\n", name, ue.Err)
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
}
