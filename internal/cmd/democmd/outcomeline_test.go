package democmd

import (
	"testing"

	"github.com/hourglass/hourglass/internal/outcome"
)

// TestOutcomeLine: the --serve line of an outcome says what happened in
// words that fit it: a cancelled deadline was not closed.
func TestOutcomeLine(t *testing.T) {
	for _, tc := range []struct {
		ev   outcome.Event
		want string
	}{
		{outcome.Event{TaskID: "order-1", Outcome: outcome.Closed, LatenessMs: 3, Path: "5s"},
			"closed order-1: 3 ms after its due time (path 5s)"},
		{outcome.Event{TaskID: "cli-cancel", Outcome: outcome.Cancelled, Path: "5s"},
			"cancelled cli-cancel: the router dropped the deadline 0 ms after its due time; it never reached its target (path 5s)"},
		{outcome.Event{TaskID: "order-2", Outcome: outcome.Skipped, Detail: "paid", LatenessMs: 1, Path: "1s"},
			"not closed order-2: skipped as paid; checked 1 ms after its due time (path 1s)"},
		{outcome.Event{TaskID: "order-3", Outcome: outcome.AlreadyClosed, Path: "1s"},
			"not closed order-3: it was closed already; checked 0 ms after its due time (path 1s)"},
		{outcome.Event{TaskID: "order-4", Outcome: outcome.Retry, Attempt: 1, Error: "connection refused"},
			"close of order-4 failed, retrying (attempt 1): connection refused"},
	} {
		if got := outcomeLine(tc.ev); got != tc.want {
			t.Errorf("outcomeLine(%s) =\n%q, want\n%q", tc.ev.Outcome, got, tc.want)
		}
	}
}
