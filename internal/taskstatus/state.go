package taskstatus

import (
	"cmp"
	"slices"
	"time"

	"github.com/hourglass/hourglass/internal/outcome"
)

// States of a deadline: where it is now.
const (
	// StateWaiting: in a delay topic, not yet due.
	StateWaiting = "waiting"
	// StateOverdue: in a delay topic and due, but not forwarded as far as
	// status read: the router is behind or stopped, or it forwarded to a
	// topic status did not read.
	StateOverdue = "overdue"
	// StateForwarded: in the target topic, without an outcome yet.
	StateForwarded = "forwarded"
	// StateRetrying: a close attempt failed and will be retried.
	StateRetrying = "retrying"
	// StateClosed: a close attempt ended with a final outcome (closed,
	// already_closed, skipped, not_found, moved).
	StateClosed = "closed"
	// StateCancelled: the router dropped the deadline as cancelled.
	StateCancelled = "cancelled"
	// StateFailed: the close failed for good; the task was dead-lettered.
	StateFailed = "failed"
	// StateDeadLettered: in the dead-letter topic without an outcome: the
	// router refused the record, or the close failed.
	StateDeadLettered = "dead_lettered"
	// StateUnknown: only records that say nothing of the state.
	StateUnknown = "unknown"
)

// Relations of a cancellation to the deadline it covers, by the
// cancellation's timestamp.
const (
	// RelationBeforeDue: made before the deadline was due and before any
	// forward: the router drops the deadline.
	RelationBeforeDue = "before_due"
	// RelationAfterDue: made at or after the due time: the deadline may
	// have fired (its outcome says).
	RelationAfterDue = "after_due"
	// RelationAfterForward: made at or after the router forwarded the
	// deadline: too late.
	RelationAfterForward = "after_forward"
)

// Deadline is one deadline of the task and where it is now. Its events
// are those with its DeadlineMs.
type Deadline struct {
	// DeadlineMs is the task's due time for this deadline; 0 when no
	// record of it carried a readable one (a dead letter without a due
	// time).
	DeadlineMs int64 `json:"deadline_ms"`
	// DueMs is the due time of the latest attempt (later than DeadlineMs
	// after a retry).
	DueMs       int64  `json:"due_ms"`
	ScheduledMs int64  `json:"scheduled_ms,omitempty"`
	Kind        string `json:"kind,omitempty"`
	State       string `json:"state"`
	// SinceMs is when the deadline came to its state: the time of the
	// event Record names.
	SinceMs int64 `json:"since_ms"`
	// Record is the record, or "clickhouse" for a row, that shows the
	// state.
	Record      string `json:"record,omitempty"`
	Topic       string `json:"topic,omitempty"` // of Record
	Tier        string `json:"tier,omitempty"`  // waiting, overdue
	Attempt     int    `json:"attempt,omitempty"`
	Hops        int    `json:"hops,omitempty"`
	ForwardedMs int64  `json:"forwarded_ms,omitempty"`
	Target      string `json:"target,omitempty"` // the topic it was forwarded to
	Outcome     string `json:"outcome,omitempty"`
	Detail      string `json:"detail,omitempty"`
	Error       string `json:"error,omitempty"`
	Reason      string `json:"reason,omitempty"` // of the dead letter
	// Cancellation is the cancellation that covers the deadline: the
	// one the router dropped it for, or else the task's latest.
	Cancellation *CancelRef `json:"cancellation,omitempty"`
	// Summary says it all in one sentence, as the text output does.
	Summary string `json:"summary"`
}

// CancelRef is a cancellation that covers a deadline.
type CancelRef struct {
	AtMs int64 `json:"at_ms"`
	// DueMs is the due time it names; 0 for every deadline of the task.
	DueMs  int64  `json:"due_ms,omitempty"`
	Record string `json:"record"`
	// Relation is before_due, after_due or after_forward.
	Relation string `json:"relation"`
	// Latest is set when it is the task's latest cancellation record.
	Latest bool `json:"latest"`
}

// ByTime orders events by time, then by where they are.
func ByTime(a, b *Event) int {
	return cmp.Or(cmp.Compare(a.TimeMs, b.TimeMs), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Offset, b.Offset))
}

// Deadlines groups the events by deadline, oldest deadline first (an
// unknown one last), and says where each is at now.
func Deadlines(events []Event, now time.Time) []Deadline {
	groups := map[int64][]*Event{}
	var cancels []*Event
	for i := range events {
		e := &events[i]
		if e.Type == TypeCancellation {
			if e.Source == SourceKafka || e.Source == SourceIndex {
				cancels = append(cancels, e)
			}
			continue
		}
		groups[e.DeadlineMs] = append(groups[e.DeadlineMs], e)
	}
	slices.SortFunc(cancels, func(a, b *Event) int { return cmp.Compare(a.Offset, b.Offset) })
	keys := make([]int64, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b int64) int {
		return cmp.Or(cmp.Compare(unknownLast(a), unknownLast(b)), cmp.Compare(a, b))
	})
	out := make([]Deadline, 0, len(keys))
	for _, k := range keys {
		evs := groups[k]
		slices.SortFunc(evs, ByTime)
		out = append(out, deadlineOf(k, evs, cancels, now))
	}
	return out
}

// unknownLast orders the unknown deadline, 0, after the others.
func unknownLast(deadlineMs int64) int {
	if deadlineMs == 0 {
		return 1
	}
	return 0
}

// milestones are the events of one deadline that decide its state.
type milestones struct {
	first, delay, forward, retry, ended, dead *Event
}

func (m *milestones) add(e *Event) {
	switch e.Type {
	case TypeDelay:
		if m.first == nil {
			m.first = e
		}
		m.delay = e
	case TypeForwarded:
		m.forward = e
	case TypeDeadLetter:
		m.dead = e
	case TypeOutcome:
		switch o := outcome.Outcome(e.Outcome); {
		case o.Ends() && m.ended == nil:
			m.ended = e // the first ending outcome is the one that counts
		case o == outcome.Retry:
			m.retry = e
		}
	}
}

// latest returns the latest of the delay, forward and retry: by time, then
// attempt, then in that order.
func (m *milestones) latest() *Event {
	rank := map[string]int{TypeDelay: 0, TypeForwarded: 1, TypeOutcome: 2}
	var best *Event
	for _, e := range []*Event{m.delay, m.forward, m.retry} {
		if e == nil {
			continue
		}
		if best == nil || cmp.Or(cmp.Compare(e.TimeMs, best.TimeMs), cmp.Compare(max(e.Attempt, 1), max(best.Attempt, 1)),
			cmp.Compare(rank[e.Type], rank[best.Type])) > 0 {
			best = e
		}
	}
	return best
}

// deadlineOf says where the deadline key is, from its events in time
// order and the task's cancellations in offset order.
func deadlineOf(key int64, evs []*Event, cancels []*Event, now time.Time) Deadline {
	d := Deadline{DeadlineMs: key}
	var m milestones
	for _, e := range evs {
		m.add(e)
		d.Kind = cmp.Or(d.Kind, e.Kind)
		d.DueMs = max(d.DueMs, e.DueMs)
		d.ScheduledMs = cmp.Or(d.ScheduledMs, e.ScheduledMs)
	}
	if d.ScheduledMs == 0 && m.first != nil {
		d.ScheduledMs = m.first.TimeMs
	}
	if m.forward != nil {
		d.ForwardedMs, d.Target = m.forward.TimeMs, m.forward.Topic
	}
	switch {
	case m.ended != nil:
		d.setState(outcomeState(m.ended.Outcome), m.ended)
		d.Outcome, d.Detail, d.Error = m.ended.Outcome, m.ended.Detail, m.ended.Error
		if m.dead != nil {
			d.Reason = m.dead.Reason
		}
	case m.dead != nil:
		d.setState(StateDeadLettered, m.dead)
		d.Reason, d.Detail = m.dead.Reason, m.dead.Detail
	default:
		d.fromLatest(m.latest(), now)
	}
	d.Cancellation = cancellation(&d, m, cancels)
	d.Summary = summary(&d, now)
	return d
}

// fromLatest sets the state from the latest delay, forward or retry.
func (d *Deadline) fromLatest(e *Event, now time.Time) {
	if e == nil {
		d.State = StateUnknown
		return
	}
	switch e.Type {
	case TypeDelay:
		d.setState(StateWaiting, e)
		if e.DueMs != 0 && e.DueMs <= now.UnixMilli() {
			d.State = StateOverdue
		}
		d.Tier, d.Hops = e.Tier, e.Hops
	case TypeForwarded:
		d.setState(StateForwarded, e)
	default:
		d.setState(StateRetrying, e)
		d.Error = e.Error
	}
}

func (d *Deadline) setState(state string, e *Event) {
	d.State, d.SinceMs, d.Record, d.Attempt = state, e.TimeMs, e.Where(), e.Attempt
	if e.Source == SourceKafka {
		d.Topic = e.Topic
	}
}

// outcomeState is the state of a deadline whose attempts ended with o.
func outcomeState(o string) string {
	switch outcome.Outcome(o) {
	case outcome.Cancelled:
		return StateCancelled
	case outcome.Failed:
		return StateFailed
	}
	return StateClosed
}

// cancellation returns the cancellation that covers d: for a deadline the
// router dropped, the latest covering one made before the drop; for
// another, the task's latest cancellation if it covers d. A record that
// breaks the contract is not one: the router does not apply it, and the
// cancellation before it stands.
func cancellation(d *Deadline, m milestones, cancels []*Event) *CancelRef {
	var c *Event
	if d.State == StateCancelled {
		for _, e := range slices.Backward(cancels) {
			if e.TimeMs <= m.ended.TimeMs && covers(e, d) {
				c = e
				break
			}
		}
	} else {
		for _, e := range slices.Backward(cancels) {
			if e.Invalid == "" {
				if covers(e, d) {
					c = e
				}
				break
			}
		}
	}
	if c == nil {
		return nil
	}
	ref := &CancelRef{AtMs: c.TimeMs, DueMs: c.DueMs, Record: c.Where(), Relation: RelationBeforeDue, Latest: c == cancels[len(cancels)-1]}
	switch {
	case d.ForwardedMs != 0 && c.TimeMs >= d.ForwardedMs:
		ref.Relation = RelationAfterForward
	case d.DeadlineMs != 0 && c.TimeMs >= d.DeadlineMs:
		ref.Relation = RelationAfterDue
	}
	return ref
}

// covers reports whether cancellation c calls off d, as the router judges
// it (tiers.Cancellation.Covers): it is not withdrawn, was made at or
// after d was scheduled, and names every deadline or d's (its original due
// time, which a retry keeps).
func covers(c *Event, d *Deadline) bool {
	if c.Withdrawn || c.Invalid != "" || (d.ScheduledMs != 0 && d.ScheduledMs > c.TimeMs) {
		return false
	}
	return c.DueMs == 0 || c.DueMs == d.DeadlineMs
}
