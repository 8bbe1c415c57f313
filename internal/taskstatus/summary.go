package taskstatus

import (
	"fmt"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/term"
)

// Stamp formats unix milliseconds for output: RFC 3339 in UTC with
// milliseconds.
func Stamp(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// ago says how far ms is from now: "in 29m48s" or "5s ago".
func ago(ms int64, now time.Time) string {
	d := time.UnixMilli(ms).Sub(now).Round(time.Millisecond)
	if d < 0 {
		return (-d).String() + " ago"
	}
	return "in " + d.String()
}

// late says how long after the due time ms was: "12ms after due".
func late(ms, due int64) string {
	if due == 0 {
		return ""
	}
	d := time.Duration(ms-due) * time.Millisecond
	if d < 0 {
		return ", " + (-d).String() + " before due"
	}
	return ", " + d.String() + " after due"
}

// summary says in one sentence where d is at now, and what its
// cancellation means for it.
func summary(d *Deadline, now time.Time) string {
	var b strings.Builder
	attempt := ""
	if d.Attempt > 1 {
		attempt = fmt.Sprintf("attempt %d ", d.Attempt)
	}
	switch d.State {
	case StateWaiting, StateOverdue:
		fmt.Fprintf(&b, "%swaiting in %s since %s", attempt, d.Record, Stamp(d.SinceMs))
		if d.Hops > 0 {
			fmt.Fprintf(&b, " after %d hops", d.Hops)
		}
		fmt.Fprintf(&b, ", due %s (%s)", Stamp(d.DueMs), ago(d.DueMs, now))
		if d.State == StateOverdue {
			b.WriteString(": overdue, not forwarded as far as status read (the router is behind, or forwarded it to a topic status did not read)")
		}
	case StateForwarded:
		fmt.Fprintf(&b, "%sforwarded to %s at %s%s; no outcome yet", attempt, d.Record, Stamp(d.SinceMs), late(d.SinceMs, d.DueMs))
	case StateRetrying:
		fmt.Fprintf(&b, "attempt %d failed at %s and is to be retried: %s", max(d.Attempt, 1), Stamp(d.SinceMs), term.Quote(d.Error))
	case StateClosed:
		fmt.Fprintf(&b, "%sclosed at %s, outcome %s", attempt, Stamp(d.SinceMs), term.Quote(d.Outcome))
		if d.Detail != "" {
			fmt.Fprintf(&b, " (%s)", term.Quote(d.Detail))
		}
		fmt.Fprintf(&b, "%s (%s)", late(d.SinceMs, d.DueMs), d.Record)
	case StateCancelled:
		fmt.Fprintf(&b, "cancelled: the router dropped it at %s%s, never forwarded (%s)", Stamp(d.SinceMs), late(d.SinceMs, d.DueMs), d.Record)
	case StateFailed:
		fmt.Fprintf(&b, "%sfailed for good at %s: %s; dead-lettered", attempt, Stamp(d.SinceMs), term.Quote(d.Error))
		if d.Reason != "" {
			fmt.Fprintf(&b, " (%s)", term.Quote(d.Reason))
		}
	case StateDeadLettered:
		fmt.Fprintf(&b, "dead-lettered at %s: %s", Stamp(d.SinceMs), term.Quote(d.Reason))
		if d.Detail != "" {
			fmt.Fprintf(&b, ": %s", term.Quote(d.Detail))
		}
	default:
		b.WriteString("no record read says where it is")
	}
	if c := d.Cancellation; c != nil {
		b.WriteString("; ")
		b.WriteString(cancelText(d, c))
	}
	return b.String()
}

// cancelText says what cancellation c means for d.
func cancelText(d *Deadline, c *CancelRef) string {
	what := fmt.Sprintf("cancellation at %s (%s)", Stamp(c.AtMs), c.Record)
	switch {
	case d.State == StateCancelled && c.Relation == RelationBeforeDue:
		return what + ", made before the due time"
	case d.State == StateCancelled:
		return what + ", made after the due time"
	case c.Relation == RelationAfterForward:
		return what + fmt.Sprintf(" came after the forward at %s: too late", Stamp(d.ForwardedMs))
	case c.Relation == RelationAfterDue && (d.State == StateWaiting || d.State == StateOverdue):
		return what + " came after the due time: the router drops it unless it forwards it first"
	case c.Relation == RelationAfterDue:
		return what + " came after the due time: too late"
	case d.State == StateWaiting || d.State == StateOverdue:
		return what + " came before the due time: the router drops it when due"
	}
	return what + " came before the due time"
}
