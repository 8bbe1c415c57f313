// Package closer defines how the canceller closes a task, and the closers
// that need no external system: log (closes nothing, records the close) and
// memory (an in-process order store, for the demo and tests).
package closer

import (
	"context"
	"errors"
	"time"

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
	// Failed: the close failed; the error says why. In an outcome event it
	// marks an attempt that failed for good (the task was dead-lettered);
	// one that will be retried is outcome.Retry.
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

type retryAfterError struct {
	err   error
	after time.Duration
}

func (e retryAfterError) Error() string { return e.err.Error() }
func (e retryAfterError) Unwrap() error { return e.err }

// RetryAfter marks a retryable err with the earliest time to try again,
// such as an HTTP Retry-After answer; the canceller waits at least that
// long before the next attempt. RetryAfter(nil, d) is nil.
func RetryAfter(err error, after time.Duration) error {
	if err == nil {
		return nil
	}
	return retryAfterError{err, after}
}

// RetryAfterOf returns the delay err was marked with by RetryAfter.
func RetryAfterOf(err error) (time.Duration, bool) {
	var r retryAfterError
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}

// Stopper is implemented by closers that hold resources (a connection
// pool, a Kafka client). The canceller calls Stop once, after its last
// close.
type Stopper interface {
	Stop() error
}
