package cli

import (
	"errors"
	"fmt"
	"maps"

	"github.com/hourglass/hourglass/internal/field"
)

// FlagError is a configuration problem with one flag. A command's checks
// return it so that [FlagSet.Explain] can name the flag with its
// environment variable.
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

// Problems collects a command's configuration problems, each naming its
// flag, for a validation that reports them all at once. It is a plain list
// joined by [errors.Join]: Add keeps each of a command's many checks to a
// line.
type Problems []error

// Add adds the problem of flag.
func (p *Problems) Add(flag, format string, args ...any) {
	*p = append(*p, Errorf(flag, format, args...))
}

// Join adds the problems of err, an error of a check of its own that may
// join several; nil adds none.
func (p *Problems) Join(err error) {
	if err != nil {
		*p = append(*p, err)
	}
}

// IntRange adds the problem of flag's value v when it is outside [lo, hi].
func (p *Problems) IntRange(flag string, v, lo, hi int) {
	if v < lo || v > hi {
		p.Add(flag, "%d: want %d to %d", v, lo, hi)
	}
}

// Err returns the problems joined, or nil if there are none.
func (p Problems) Err() error { return errors.Join(p...) }

// Fields maps the fields of a library's Config, as its *field.Error
// problems name them ("MaxDelay", "Limits.KeyBytes"), to the flags that
// set them ("max-delay").
type Fields map[string]string

// With returns the fields of f and of more, in a new Fields.
func (f Fields) With(more Fields) Fields {
	out := make(Fields, len(f)+len(more))
	maps.Copy(out, f)
	maps.Copy(out, more)
	return out
}

// Flags returns err with each *field.Error in it whose field f maps turned
// into a *FlagError of that flag. The fields its message mentions are
// written as their flags, --name, or as ref returns the flag's name when
// ref is not nil. It looks through errors.Join; a problem of a field f
// lacks, and any other error, is left as it is.
func (f Fields) Flags(err error, ref func(flag string) string) error {
	return field.Map(err, func(e *field.Error) error {
		flag, ok := f[e.Field]
		if !ok {
			return e
		}
		msg := e.Message(func(name string) string {
			other, ok := f[name]
			switch {
			case !ok:
				return name
			case ref != nil:
				return ref(other)
			}
			return "--" + other
		})
		return &FlagError{Flag: flag, Err: errors.New(msg)}
	})
}

// Explain returns err, a problem or the errors.Join of many, with one
// problem a line, each *FlagError naming its flag with its environment
// variable as registered on f. A problem found by two checks is reported
// once. It returns nil for nil.
func (f *FlagSet) Explain(err error) error {
	var out []error
	seen := make(map[string]bool)
	for _, err := range flatten(err, nil) {
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

// flatten appends the errors that err joins, through nested joins, to out.
func flatten(err error, out []error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = flatten(e, out)
		}
		return out
	}
	if err != nil {
		out = append(out, err)
	}
	return out
}
