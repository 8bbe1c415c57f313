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
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
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

// Parse parses a service's args into fs and validates them with check. It
// reports stop when the command has nothing more to do: after --help, or
// after printing the configuration for --check-config.
func Parse(fs *cli.FlagSet, args []string, stdout io.Writer, c *Common, check func() Checks) (stop bool, err error) {
	if err := ParseArgs(fs, args); err != nil {
		return true, err
	}
	errs := append(c.Validate(fs), check()...)
	if err := fs.Explain(errs); err != nil {
		return true, UsageError{err}
	}
	if c.CheckConfig {
		fs.PrintConfig(stdout)
		fmt.Fprintln(stdout, "configuration is valid")
		return true, nil
	}
	return false, nil
}

// Checks collects configuration problems, each naming its flag.
type Checks []error

// Add adds a problem with flag.
func (c *Checks) Add(flag, format string, args ...any) {
	*c = append(*c, cli.Errorf(flag, format, args...))
}

// IntRange reports v outside [lo, hi].
func (c *Checks) IntRange(flag string, v, lo, hi int) {
	if v < lo || v > hi {
		c.Add(flag, "%d: want %d to %d", v, lo, hi)
	}
}

// Replication reports a replication factor other than -1 (the broker's) or
// 1 to 32.
func (c *Checks) Replication(flag string, v int) {
	if v == 0 || v < -1 || v > 32 {
		c.Add(flag, "%d: want -1 (broker default) or 1 to 32", v)
	}
}

// Tiers parses the value of --tiers, reporting a bad one.
func (c *Checks) Tiers(raw string) tiers.Table {
	t, err := topics.ParseTiers(raw)
	if err != nil {
		*c = append(*c, err)
	}
	return t
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
