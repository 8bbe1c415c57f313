package record

import (
	"errors"

	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// CheckLimits reports the problems of l, each a *field.Error naming its
// field of tiers.Limits (KeyBytes, ...): each limit is at least 1; a key
// is at most what an outcome event keeps of a task id
// (outcome.MaxTaskIDBytes: a longer one would be recorded cut, and
// `hourglass status` could not find its task); and the record they allow,
// with the headers Hourglass adds, fits a dead letter. The router and the
// canceller both check their limits with it, and must have the same: a
// record within the router's limits is forwarded, and refused by the
// canceller it would be dead-lettered unclosed.
func CheckLimits(l tiers.Limits) error {
	var errs []error
	for _, f := range []struct {
		field string
		v     int
	}{
		{"KeyBytes", l.KeyBytes}, {"HeaderBytes", l.HeaderBytes},
		{"Headers", l.Headers}, {"ValueBytes", l.ValueBytes},
	} {
		if f.v < 1 {
			errs = append(errs, field.Errorf(f.field, "%d: must be at least 1", f.v))
		}
	}
	if l.KeyBytes > outcome.MaxTaskIDBytes {
		errs = append(errs, field.Errorf("KeyBytes", "%d: at most %d, the longest task id an outcome event records whole", l.KeyBytes, outcome.MaxTaskIDBytes))
	}
	if sum := l.KeyBytes + l.HeaderBytes + l.ValueBytes; sum > MaxDeadLetterBytes-16<<10 {
		errs = append(errs, field.Errorf("ValueBytes", "key, header and value limits add up to %d bytes: a record that large could not be forwarded (at most %d)",
			sum, MaxDeadLetterBytes-16<<10))
	}
	return errors.Join(errs...)
}
