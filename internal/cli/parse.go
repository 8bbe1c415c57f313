package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/hourglass/hourglass/internal/suggest"
)

// Parse parses args (without the program name), then applies the environment
// variable of every flag not set on the command line. An environment variable
// that is unset or empty leaves the default.
//
// Flags are written --name value, --name=value, or with one dash; a bool
// flag takes no value (--tls) or an attached one (--tls=false). Parsing
// stops at the first argument that is not a flag (unless
// [FlagSet.Interspersed]), or after "--"; [FlagSet.Args] returns the rest.
//
// A bad command line is a *[CommandLineError] in the --flag spelling: an
// unknown flag (`unknown flag --tier; did you mean --tiers?`), a flag
// without its value, a value that does not parse (`--max-delay: "abc" is
// not a duration ...`). Environment values that do not parse are all
// reported, joined, each naming the variable and the flag
// (`HOURGLASS_MAX_DELAY (--max-delay): "abc" is not a duration ...`). For -h
// or --help Parse writes Usage and returns flag.ErrHelp. Parse prints
// nothing else: the caller prints the error.
func (f *FlagSet) Parse(args []string) error {
	onCommandLine, rest, err := f.parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		f.Usage()
		return err
	}
	if err != nil {
		return &CommandLineError{Cmd: f.name, Err: err}
	}
	f.args = rest

	var errs []error
	for _, e := range f.entries {
		if onCommandLine[e.name] {
			e.source = SourceFlag
			continue
		}
		if e.env == "" {
			continue
		}
		v, ok := f.lookupEnv(e.env)
		if !ok || v == "" {
			continue
		}
		if err := e.val.parse(v); err != nil {
			errs = append(errs, fmt.Errorf("%s (--%s): %w", e.env, e.name, err))
			continue
		}
		e.source = SourceEnv
	}
	return errors.Join(errs...)
}

// parseArgs sets the flags given in args and returns their names and the
// arguments after them (with Interspersed, every argument that is not a
// flag).
func (f *FlagSet) parseArgs(args []string) (set map[string]bool, rest []string, err error) {
	set = make(map[string]bool)
	for len(args) > 0 {
		arg := args[0]
		if arg == "--" {
			return set, append(rest, args[1:]...), nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			if !f.interspersed {
				return set, args, nil
			}
			rest, args = append(rest, arg), args[1:]
			continue
		}
		args = args[1:]
		name := strings.TrimPrefix(arg[1:], "-")
		name, value, hasValue := strings.Cut(name, "=")
		if name == "" || name[0] == '-' {
			return nil, nil, fmt.Errorf("bad flag syntax %q: write --name value or --name=value", arg)
		}
		e, ok := f.byName[name]
		if !ok {
			if name == "h" || name == "help" {
				return nil, nil, flag.ErrHelp
			}
			return nil, nil, f.unknown(name)
		}
		if !hasValue {
			switch {
			case e.isBool():
				value = "true"
			case len(args) == 0 || f.isFlag(args[0]):
				return nil, nil, fmt.Errorf("--%s needs a value: --%s %s", name, name, e.arg)
			default:
				value, args = args[0], args[1:]
			}
		}
		if err := e.val.parse(value); err != nil {
			return nil, nil, fmt.Errorf("--%s: %w", name, err)
		}
		set[name] = true
	}
	return set, rest, nil
}

// Interspersed lets arguments that are not flags come between flags, as in
// `status --format json 42 --since 1h`: Parse then reads every flag, and
// Args returns the other arguments in order. After "--" every argument is
// one of those, even one that begins with a dash.
func (f *FlagSet) Interspersed() { f.interspersed = true }

// isFlag reports whether arg is one of f's flags, such as --tiers, which
// means the flag before it was given no value.
func (f *FlagSet) isFlag(arg string) bool {
	if !strings.HasPrefix(arg, "-") {
		return false
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(arg[1:], "-"), "=")
	_, ok := f.byName[name]
	return ok
}

// unknown is the error of an unknown flag, with the closest registered
// flag, if one is close.
func (f *FlagSet) unknown(name string) error {
	names := make([]string, len(f.entries))
	for i, e := range f.entries {
		names[i] = e.name
	}
	if s := suggest.Closest(name, names); s != "" {
		return fmt.Errorf("unknown flag --%s; did you mean --%s?", name, s)
	}
	return fmt.Errorf("unknown flag --%s", name)
}

// CommandLineError is a bad command line: an unknown flag, a flag without
// its value, a value that does not parse, a missing or unknown command. Its
// message ends with a hint to run Cmd --help, unless Cmd is empty.
type CommandLineError struct {
	// Cmd is the command whose usage explains the command line, such as
	// "router" or "hourglass dlq list"; empty for no hint.
	Cmd string
	Err error
}

func (e *CommandLineError) Error() string {
	if e.Cmd == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + "\nsee " + e.Cmd + " --help"
}

func (e *CommandLineError) Unwrap() error { return e.Err }

// BadArgs returns a *CommandLineError about the command line of f, such as
// an argument that f's command does not take.
func (f *FlagSet) BadArgs(format string, args ...any) error {
	return &CommandLineError{Cmd: f.name, Err: fmt.Errorf(format, args...)}
}
