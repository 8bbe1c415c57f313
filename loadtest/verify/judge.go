package verify

import "github.com/hourglass/hourglass/internal/outcome"

// WrongOutcome reports whether ev, the first outcome that ended a task, is
// wrong for it: a paid task must be skipped as PAID, and an unpaid one must
// be neither skipped nor failed.
func WrongOutcome(paid bool, ev *outcome.Event) bool {
	skippedPaid := ev.Outcome == outcome.Skipped && ev.Detail == "PAID"
	if paid {
		return !skippedPaid
	}
	return ev.Outcome == outcome.Skipped || ev.Outcome == outcome.Failed
}

// LatenessMs is the lateness of ev, the first outcome that ended a task due
// at dueMs and scheduled at scheduledMs: closed_ms minus the later of the
// two, since a task due in the past cannot close before it was scheduled.
func LatenessMs(ev *outcome.Event, dueMs, scheduledMs int64) int64 {
	return ev.ClosedMs - max(dueMs, scheduledMs)
}
