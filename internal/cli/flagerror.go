package cli

import (
	"errors"
	"fmt"
)

// FlagError is a configuration problem with one flag. Config validators
// return it so that the command can name the flag and its environment
// variable.
type FlagError struct {
	Flag string
	Err  error
}

// Errorf returns a *FlagError for flag.
func Errorf(flag, format string, args ...any) error {
	return &FlagError{Flag: flag, Err: fmt.Errorf(format, args...)}
}

func (e *FlagError) Error() string { return "--" + e.Flag + ": " + e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// Explain joins errs into one error, one line each, naming each *FlagError's
// flag with its environment variable as registered on f. A problem found
// by two checks is reported once. It returns nil for no errors.
func (f *FlagSet) Explain(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	out := make([]error, 0, len(errs))
	seen := make(map[string]bool, len(errs))
	for _, err := range errs {
		var fe *FlagError
		if errors.As(err, &fe) {
			err = fmt.Errorf("%s: %w", f.Name(fe.Flag), fe.Err)
		}
		if seen[err.Error()] {
			continue
		}
		seen[err.Error()] = true
		out = append(out, err)
	}
	return errors.Join(out...)
}

// Problems collects configuration problems, each naming its flag, for a
// Validate that reports them all at once.
type Problems []error

// Add adds the problem of flag.
func (p *Problems) Add(flag, format string, args ...any) {
	*p = append(*p, Errorf(flag, format, args...))
}
