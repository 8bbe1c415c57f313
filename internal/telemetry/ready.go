package telemetry

import (
	"errors"
	"fmt"
)

// ErrNotRunning is the readiness error of a service that is starting or
// stopping.
var ErrNotRunning = errors.New("not consuming: starting or stopping")

// Condition is one thing a service needs to be ready (/readyz): Check
// returns why it does not hold, or nil.
type Condition struct {
	Name  string
	Check func() error
}

// NotReady returns why a service is not ready, or nil: ErrNotRunning unless
// running, else every condition that does not hold, each named.
func NotReady(running bool, conds ...Condition) error {
	if !running {
		return ErrNotRunning
	}
	var errs []error
	for _, c := range conds {
		if err := c.Check(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}
