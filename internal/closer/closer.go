// Package closer defines how the canceller closes a task, and the closers
// that need no external system: log (closes nothing, records the close) and
// memory (an in-process order store, for the demo and tests).
package closer

import (
	"context"
	"errors"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// Task is one due task handed to a closer.
type Task struct {
	ID      string     // the record key: the order id
	Kind    string     // hourglass-kind, or the canceller's default kind
	Payload []byte     // the record value, unchanged since it was scheduled
	Meta    tiers.Meta // the contract headers
	Attempt int        // close attempt, from 1
}

// Outcome is what a close found. The values are stable: they are stored in
// ClickHouse and used as metric labels.
type Outcome string

// Outcomes of a close.
const (
	// Closed: the task was open and is now closed (the order is cancelled).
	Closed Outcome = "closed"
	// AlreadyClosed: it was closed before (a duplicate delivery, or closed by
	// another path). Nothing changed.
	AlreadyClosed Outcome = "already_closed"
	// Skipped: it is in a state that must not be closed, such as paid.
	// Result.Detail names the state. Nothing changed.
	Skipped Outcome = "skipped"
	// NotFound: no such task in the store. Nothing changed.
	NotFound Outcome = "not_found"
	// Failed: the close failed; the error says why.
	Failed Outcome = "failed"
)

// Final reports whether o is the outcome of a close that needs nothing more:
// Closed, AlreadyClosed, Skipped or NotFound.
func (o Outcome) Final() bool {
	switch o {
	case Closed, AlreadyClosed, Skipped, NotFound:
		return true
	}
	return false
}

// Result is the outcome of a close with an optional detail ("PAID").
type Result struct {
	Outcome Outcome
	Detail  string
}

// Closer applies a close. Close must be idempotent: the same task may be
// delivered more than once after a crash, and a second close must report
// AlreadyClosed (or Skipped) without changing anything. A returned error is
// retryable unless wrapped with Permanent; a nil error must come with a
// final outcome (see Outcome.Final). Close must honour ctx.
type Closer interface {
	Close(ctx context.Context, t Task) (Result, error)
}

// CloserFunc adapts a function to Closer.
type CloserFunc func(ctx context.Context, t Task) (Result, error)

// Close calls f.
func (f CloserFunc) Close(ctx context.Context, t Task) (Result, error) { return f(ctx, t) }

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying (a malformed payload, a 4xx
// answer). Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
