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
var All = []Outcome{Closed, AlreadyClosed, Skipped, NotFound, Retry, Failed}

// Final reports whether o is the outcome of a close that needs nothing more:
// Closed, AlreadyClosed, Skipped or NotFound. Failed ends a task too, but
// with an error; it is not final in this sense.
func (o Outcome) Final() bool {
	switch o {
	case Closed, AlreadyClosed, Skipped, NotFound:
		return true
	}
	return false
}

// Ends reports whether o ends a task's attempts: a final outcome, or Failed
// (the task went to the dead-letter topic). Retry and no outcome do not.
func (o Outcome) Ends() bool { return o.Final() || o == Failed }
