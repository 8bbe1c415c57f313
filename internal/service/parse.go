package service

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/hourglass/hourglass/internal/cli"
)

// ParseArgs parses args into fs. --help returns flag.ErrHelp (Main exits 0
// for it); a bad flag or a stray argument is a UsageError (a bad command
// line wraps a *cli.CommandLineError).
func ParseArgs(fs *cli.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return UsageError{err}
	}
	if len(fs.Args()) > 0 {
		return UsageError{fs.BadArgs("unexpected arguments %q", fs.Args())}
	}
	return nil
}

// Parse parses a service's args into fs and validates them with check,
// which returns the problems of the service's own flags, joined. It reports
// stop when the command has nothing more to do: after --help, or after
// printing the configuration for --check-config.
func Parse(fs *cli.FlagSet, args []string, stdout io.Writer, c *Common, check func() error) (stop bool, err error) {
	if err := ParseArgs(fs, args); err != nil {
		return true, err
	}
	c.PartitionsGiven = fs.Source("partitions") != cli.SourceDefault
	if err := fs.Explain(errors.Join(c.Validate(fs), check())); err != nil {
		return true, UsageError{err}
	}
	if c.CheckConfig {
		fs.PrintConfig(stdout)
		fmt.Fprintln(stdout, "configuration is valid")
		return true, nil
	}
	return false, nil
}

// ReadKey reads a signing key file: at least 16 bytes, a trailing newline
// trimmed. An empty path is no key.
func ReadKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) < 16 {
		return nil, fmt.Errorf("%s: %d bytes; a key needs at least 16", path, len(b))
	}
	return b, nil
}

// ParseLevel parses a log level: debug, info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q: want debug, info, warn or error", s)
	}
	return l, nil
}
