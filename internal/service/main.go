package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/version"
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
// SIGINT or SIGTERM. It exits 0 after a clean stop, a stop on a signal
// that cut the command short (its error said) or --help, 2 for bad
// configuration and 1 for any other error. With --version among the
// arguments it prints the version and exits 0 without running cmd, so that
// no other flag is checked and no broker is needed.
func Main(name string, cmd Command) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, name, cmd, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is Main without the process: it returns the exit code.
func run(ctx context.Context, name string, cmd Command, args []string, stdout, stderr io.Writer) int {
	if VersionRequested(args) {
		PrintVersion(stdout, name)
		return 0
	}
	err := cmd(ctx, args, stdout, stderr)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// SIGTERM or SIGINT where the command could not stop cleanly
		// (a pod stopped while the service started): a stop that was
		// asked for, not a failure.
		fmt.Fprintf(stderr, "%s: stopped on a signal: %v\n", name, strings.TrimPrefix(err.Error(), name+": "))
		return 0
	}
	return exitCode(name, err, stderr)
}

// VersionRequested reports whether args ask for the version: a --version
// or -version (=true) before any "--". It looks past other flags and
// commands, so that `router --brokers x --version` and `hourglass router
// --version` print the version too.
func VersionRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--version", "-version", "--version=true", "-version=true":
			return true
		}
	}
	return false
}

// PrintVersion writes the program's name and its [version.Info] on one
// line.
func PrintVersion(w io.Writer, name string) {
	fmt.Fprintln(w, name, version.Get())
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
		// An error of the service's own package names it already
		// ("router: ..."): the command's name is not written twice.
		msg := err.Error()
		if !strings.HasPrefix(msg, name+": ") {
			msg = name + ": " + msg
		}
		fmt.Fprintln(stderr, msg)
		return 1
	}
}
