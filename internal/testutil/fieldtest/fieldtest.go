// Package fieldtest helps tests read the problems a Validate reports.
package fieldtest

import (
	"errors"

	"github.com/hourglass/hourglass/internal/field"
)

// Fields returns the fields that the problems in err name, in order,
// looking through errors.Join; a problem that is no *field.Error counts as
// its whole message, so that a test sees it too.
func Fields(err error) []string {
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, Fields(e)...)
		}
		return out
	}
	var fe *field.Error
	switch {
	case err == nil:
	case errors.As(err, &fe):
		out = append(out, fe.Field)
	default:
		out = append(out, err.Error())
	}
	return out
}
