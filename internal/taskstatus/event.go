package taskstatus

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Event types: what a record of the task is.
const (
	// TypeDelay is a record of a delay topic: scheduled, hopped, or
	// rescheduled by the canceller for another close attempt.
	TypeDelay = "delay"
	// TypeForwarded is a record of a target topic: forwarded by the router
	// when due.
	TypeForwarded = "forwarded"
	// TypeOutcome is an outcome event: a close attempt, or a deadline the
	// router dropped as cancelled.
	TypeOutcome = "outcome"
	// TypeDeadLetter is a record of the dead-letter topic.
	TypeDeadLetter = "dead_letter"
	// TypeCancellation is a record of the cancellations topic.
	TypeCancellation = "cancellation"
)

// Sources of an event.
const (
	// SourceKafka: a record read from Kafka.
	SourceKafka = "kafka"
	// SourceClickHouse: a row of the outcomes in ClickHouse, which
	// locates no record.
	SourceClickHouse = "clickhouse"
	// SourceIndex: a record as the deadline index in ClickHouse holds it
	// (chstore.Store.Task), not read from Kafka.
	SourceIndex = "index"
)

// Role is what a topic holds, and so what its records are.
type Role string

// Roles of the topics a task passes through.
const (
	RoleDelay         Role = "delay"
	RoleTarget        Role = "target"
	RoleOutcomes      Role = "outcomes"
	RoleDeadLetter    Role = "dead_letter"
	RoleCancellations Role = "cancellations"
)

// Event is one record of the task, or one row of ClickHouse's outcomes
// table. Times are unix milliseconds; zero fields are unknown or do not
// apply. The field names are stable.
type Event struct {
	// TimeMs is when it happened: the record timestamp of a delay record
	// or a cancellation, the forward time of a forwarded record, the close
	// time of an outcome, the dead-letter time of a dead letter.
	TimeMs int64  `json:"time_ms"`
	Type   string `json:"type"`
	Source string `json:"source"`
	// Topic, Partition and Offset locate the record; a ClickHouse row has
	// none (partition and offset -1).
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// DeadlineMs is the deadline the event belongs to: the task's due
	// time, which a retry keeps while its due time moves on.
	DeadlineMs  int64  `json:"deadline_ms,omitempty"`
	DueMs       int64  `json:"due_ms,omitempty"`
	ScheduledMs int64  `json:"scheduled_ms,omitempty"`
	ForwardedMs int64  `json:"forwarded_ms,omitempty"`
	Tier        string `json:"tier,omitempty"`
	Target      string `json:"target,omitempty"`
	Kind        string `json:"kind,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`
	Hops        int    `json:"hops,omitempty"`
	Path        string `json:"path,omitempty"`
	Outcome     string `json:"outcome,omitempty"`
	Detail      string `json:"detail,omitempty"`
	Error       string `json:"error,omitempty"`
	// Reason is a dead letter's reason code.
	Reason string `json:"reason,omitempty"`
	// Of is the record an outcome reports on, or a dead letter's source,
	// as topic[partition]@offset.
	Of string `json:"of,omitempty"`
	// Withdrawn marks a cancellation's tombstone.
	Withdrawn bool `json:"withdrawn,omitempty"`
	// Invalid says why the record breaks the contract.
	Invalid string `json:"invalid,omitempty"`
	// InClickHouse marks an outcome event that ClickHouse holds too.
	InClickHouse bool `json:"in_clickhouse,omitempty"`
}

// Where is "topic[partition]@offset", or "clickhouse" for a row of the
// outcomes.
func (e *Event) Where() string {
	if e.Source == SourceClickHouse {
		return SourceClickHouse
	}
	return fmt.Sprintf("%s[%d]@%d", e.Topic, e.Partition, e.Offset)
}

// Decode returns the event of r, found in a topic of role: what status
// shows of it, copied out of the record, with the text that comes from the
// record cut as an outcome event's is (clip).
func Decode(r *kgo.Record, role Role, prefix string) Event {
	e := Event{TimeMs: r.Timestamp.UnixMilli(), Source: SourceKafka, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	switch role {
	case RoleDelay:
		e.Type = TypeDelay
		if d, ok := record.TierOf(prefix, r.Topic); ok {
			e.Tier = tiers.Name(d)
		}
		e.meta(r)
	case RoleTarget:
		e.Type = TypeForwarded
		e.meta(r)
		if e.ForwardedMs != 0 {
			e.TimeMs = e.ForwardedMs
		}
	case RoleOutcomes:
		e.outcome(r)
	case RoleDeadLetter:
		e.deadLetter(r)
	case RoleCancellations:
		e.Type = TypeCancellation
		c, err := tiers.DecodeCancellation(r)
		if err != nil {
			e.Invalid = err.Error()
		}
		e.DueMs, e.Withdrawn = ms(c.Due), c.Withdrawn
	}
	e.clip()
	return e
}

// clip cuts the text of e that comes from a record to the limits of an
// outcome event's fields, so that what status keeps of a record is
// bounded whatever its headers hold.
func (e *Event) clip() {
	for _, f := range []struct {
		s   *string
		max int
	}{
		{&e.Target, outcome.MaxTopicBytes}, {&e.Kind, outcome.MaxKindBytes}, {&e.Path, outcome.MaxPathBytes},
		{&e.Outcome, outcome.MaxOutcomeBytes}, {&e.Detail, outcome.MaxDetailBytes}, {&e.Error, outcome.MaxErrorBytes},
		{&e.Reason, outcome.MaxKindBytes}, {&e.Of, outcome.MaxTopicBytes + len("[2147483647]@9223372036854775807")},
		{&e.Invalid, outcome.MaxErrorBytes},
	} {
		*f.s = outcome.Clip(*f.s, f.max)
	}
}

// meta fills e from a delay or target record's contract headers.
func (e *Event) meta(r *kgo.Record) {
	m, err := tiers.Decode(r.Headers)
	if err != nil {
		e.Invalid = err.Error()
		e.DueMs = record.HeaderMillis(r, tiers.HeaderDue)
	}
	e.DueMs = max(e.DueMs, ms(m.Due))
	e.DeadlineMs = ms(m.Deadline)
	if e.DeadlineMs == 0 {
		e.DeadlineMs = e.DueMs
	}
	e.ScheduledMs, e.ForwardedMs = ms(m.Scheduled), ms(m.Forwarded)
	e.Target, e.Kind, e.Attempt, e.Hops, e.Path = m.Target, m.Kind, m.Attempt, m.Hops, m.Path
}

// outcome fills e from an outcome event.
func (e *Event) outcome(r *kgo.Record) {
	e.Type = TypeOutcome
	ev, err := outcome.Unmarshal(r.Value)
	if err != nil {
		e.Invalid = err.Error()
		return
	}
	e.FromOutcome(ev)
}

// FromOutcome fills e from an outcome event.
func (e *Event) FromOutcome(ev outcome.Event) {
	e.Outcome, e.Detail, e.Error = string(ev.Outcome), ev.Detail, ev.Error
	e.Kind, e.Attempt, e.Hops, e.Path = ev.Kind, ev.Attempt, ev.Hops, ev.Path
	e.DueMs, e.DeadlineMs, e.ScheduledMs, e.ForwardedMs = ev.DueMs, ev.DeadlineMs, ev.ScheduledMs, ev.ForwardedMs
	if e.DeadlineMs == 0 {
		e.DeadlineMs = e.DueMs
	}
	if ev.ClosedMs != 0 {
		e.TimeMs = ev.ClosedMs
	}
	if ev.Topic != "" {
		e.Of = fmt.Sprintf("%s[%d]@%d", ev.Topic, ev.Partition, ev.Offset)
	}
}

// deadLetter fills e from a dead letter (record.DeadLetter): its headers
// are the dead record's, which may break the contract.
func (e *Event) deadLetter(r *kgo.Record) {
	e.Type = TypeDeadLetter
	if v, ok := tiers.Header(r.Headers, tiers.HeaderReason); ok {
		e.Reason, e.Detail, _ = strings.Cut(string(v), ": ")
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderSource); ok {
		e.Of = string(v)
	}
	if t := record.HeaderMillis(r, tiers.HeaderDeadAt); t != 0 {
		e.TimeMs = t
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderKind); ok {
		e.Kind = string(v)
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderAttempt); ok {
		e.Attempt, _ = strconv.Atoi(string(v))
	}
	e.DueMs = record.HeaderMillis(r, tiers.HeaderDue)
	e.DeadlineMs = record.HeaderMillis(r, tiers.HeaderDeadline)
	if e.DeadlineMs == 0 {
		e.DeadlineMs = e.DueMs
	}
}

// ms returns t in unix milliseconds, 0 for the zero time.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
