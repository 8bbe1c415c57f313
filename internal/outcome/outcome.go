package outcome

// Outcome is what a close attempt found. The values are stable: they are
// the outcome field of an event, a ClickHouse column and a metric label.
// The zero value is no outcome (a close that returned an error).
type Outcome string

// Outcomes of a close attempt, in the order reports list them (All).
const (
	// Closed: the task was open and is now closed (the order is cancelled).
	Closed Outcome = "closed"
	// AlreadyClosed: it was closed before (a duplicate delivery, or closed by
	// another path). Nothing changed.
	AlreadyClosed Outcome = "already_closed"
	// Skipped: it is in a state that must not be closed, such as paid.
	// The detail names the state. Nothing changed.
	Skipped Outcome = "skipped"
	// NotFound: no such task in the store. Nothing changed.
	NotFound Outcome = "not_found"
	// Moved: the store holds a later deadline for the task than the record
	// (the deadline was extended there), so the close waits for that one.
	// Nothing changed.
	Moved Outcome = "moved"
	// Cancelled: the task was cancelled before it was due (a record of the
	// cancellations topic); the router dropped the deadline, which never
	// reached its target. Only the router reports it.
	Cancelled Outcome = "cancelled"
	// Retry: the attempt failed with a retryable error and the task was
	// rescheduled for another attempt. Only events carry it; a closer
	// never returns it.
	Retry Outcome = "retry"
	// Failed: the close failed; the error says why. In an event it marks
	// an attempt that failed for good (the task went to the dead-letter
	// topic); one that will be retried is Retry.
	Failed Outcome = "failed"
)

// All is every outcome, in the order reports list them.
var All = []Outcome{Closed, AlreadyClosed, Skipped, NotFound, Moved, Cancelled, Retry, Failed}

// Final reports whether o is the outcome of a close that needs nothing more:
// Closed, AlreadyClosed, Skipped, NotFound or Moved: the outcomes a closer
// may return. Cancelled ends a task without a close; Failed ends a task too, but
// with an error; it is not final in this sense.
func (o Outcome) Final() bool {
	switch o {
	case Closed, AlreadyClosed, Skipped, NotFound, Moved:
		return true
	}
	return false
}

// Ends reports whether o ends a task's attempts: a final outcome,
// Cancelled, or Failed (the task went to the dead-letter topic). Retry and
// no outcome do not.
func (o Outcome) Ends() bool { return o.Final() || o == Cancelled || o == Failed }
