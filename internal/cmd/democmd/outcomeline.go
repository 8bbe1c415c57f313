package democmd

import (
	"fmt"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/term"
)

// outcomeLine is the line --serve prints for an outcome of a task that is
// not a demo order: what happened to it, in words that fit the outcome (a
// cancelled deadline was dropped by the router, not closed).
func outcomeLine(ev outcome.Event) string {
	id := term.Quote(ev.TaskID)
	when := fmt.Sprintf("%d ms after its due time", ev.LatenessMs)
	switch ev.Outcome {
	case outcome.Closed:
		return fmt.Sprintf("closed %s: %s (path %s)", id, when, ev.Path)
	case outcome.Cancelled:
		return fmt.Sprintf("cancelled %s: the router dropped the deadline %s; it never reached its target (path %s)", id, when, ev.Path)
	case outcome.AlreadyClosed:
		return fmt.Sprintf("not closed %s: it was closed already; checked %s (path %s)", id, when, ev.Path)
	case outcome.Skipped:
		return fmt.Sprintf("not closed %s: skipped as %s; checked %s (path %s)", id, term.Quote(ev.Detail), when, ev.Path)
	case outcome.NotFound:
		return fmt.Sprintf("not closed %s: no such order in the store; checked %s (path %s)", id, when, ev.Path)
	case outcome.Retry:
		return fmt.Sprintf("close of %s failed, retrying (attempt %d): %s", id, ev.Attempt, term.Quote(ev.Error))
	case outcome.Failed:
		return fmt.Sprintf("close of %s failed for good, dead-lettered (attempt %d): %s", id, ev.Attempt, term.Quote(ev.Error))
	default:
		return fmt.Sprintf("%s %s: %s (path %s)", term.Quote(string(ev.Outcome)), id, when, ev.Path)
	}
}
