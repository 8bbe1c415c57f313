package closer

import (
	"context"
	"errors"
	"time"

	"github.com/hourglass/hourglass/internal/outcome"
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

// Result is the outcome of a close with an optional detail ("PAID").
type Result struct {
	Outcome outcome.Outcome
	Detail  string
}

// Closer applies a close. Close must be idempotent: the same task may be
// delivered more than once after a crash, and a second close must report
// outcome.AlreadyClosed (or outcome.Skipped) without changing anything. A
// returned error is retryable unless wrapped with Permanent; a nil error
// must come with a final outcome (see outcome.Outcome.Final). Close must honour ctx.
type Closer interface {
	Close(ctx context.Context, t Task) (Result, error)
}

// Batcher is implemented by a closer that applies the closes in flight at
// the same moment together (one statement, one request, one produce
// batch), so that more closes in flight cost it no more requests. The
// canceller lets more records close at once when every closer batches
// (canceller.DefaultMaxInFlightBatched).
type Batcher interface {
	Batches() bool
}

// Batches reports whether c batches (see Batcher).
func Batches(c Closer) bool {
	b, ok := c.(Batcher)
	return ok && b.Batches()
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
