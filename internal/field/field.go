package field

import (
	"errors"
	"fmt"
)

// Error is a problem with one field of a configuration.
type Error struct {
	// Field is the Go name of the field, with the struct fields that hold
	// it: "MaxDelay", "Limits.KeyBytes".
	Field  string
	format string
	args   []any
}

// Ref is, as an argument of [Errorf], another field that the message
// mentions, such as the other half of a pair: whoever names Field names it
// the same way.
type Ref string

// Errorf returns an *Error about field f with the message of format and
// args, as fmt.Sprintf writes it.
func Errorf(f, format string, args ...any) error {
	return &Error{Field: f, format: format, args: args}
}

// Error returns the field and the message: "MaxDelay: 0s: must be
// positive".
func (e *Error) Error() string { return e.Field + ": " + e.Message(nil) }

// Message returns the problem without its field, with each [Ref] written
// as name returns it, or as the Go name of its field when name is nil.
func (e *Error) Message(name func(field string) string) string {
	args := make([]any, len(e.args))
	for i, a := range e.args {
		if r, ok := a.(Ref); ok {
			a = string(r)
			if name != nil {
				a = name(string(r))
			}
		}
		args[i] = a
	}
	return fmt.Sprintf(e.format, args...)
}

// Map returns err with each *Error in it replaced by what f returns for
// it, nil dropping it. It looks through errors.Join, which is how a
// Validate returns its problems, and keeps any other error as it is.
func Map(err error, f func(*Error) error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = Map(e, f)
		}
		return errors.Join(out...)
	}
	if e, ok := err.(*Error); ok { //nolint:errorlint // a Validate joins its problems bare; one wrapped in another error is that error's
		return f(e)
	}
	return err
}

// Rename returns err with the field of every *Error in it, and each field
// its message mentions, renamed by rename. It looks through errors.Join, so
// that a Config that checks a part of itself with the part's own Validate
// can report the part's problems under its own field names.
func Rename(err error, rename func(field string) string) error {
	return Map(err, func(e *Error) error {
		args := make([]any, len(e.args))
		for i, a := range e.args {
			if r, ok := a.(Ref); ok {
				a = Ref(rename(string(r)))
			}
			args[i] = a
		}
		return &Error{Field: rename(e.Field), format: e.format, args: args}
	})
}

// In returns err with every field renamed as a field of the struct field
// parent: In("Limits", err) reports KeyBytes as Limits.KeyBytes.
func In(parent string, err error) error {
	return Rename(err, func(f string) string { return parent + "." + f })
}

// Omit returns err without the problems of the field f, looking through
// errors.Join: for a caller that has reported that field's value already,
// such as one that did not parse.
func Omit(err error, f string) error {
	return Map(err, func(e *Error) error {
		if e.Field == f {
			return nil
		}
		return e
	})
}
