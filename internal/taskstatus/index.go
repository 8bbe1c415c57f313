package taskstatus

import (
	"strings"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// FromIndex returns the events of what the deadline index holds of a
// task (chstore.Store.Task): each
// deadline's first record, the cancellations, the dead letters and the
// close attempts.
func FromIndex(ti *chstore.TaskIndex, prefix string) []Event {
	var out []Event
	for _, d := range ti.Deadlines {
		e := Event{TimeMs: d.RecordMs, Type: TypeDelay, Source: SourceIndex, Topic: d.Topic, Partition: d.Partition, Offset: d.Offset,
			DeadlineMs: d.DueMs, DueMs: d.DueMs, ScheduledMs: d.ScheduledMs, Target: d.Target, Kind: d.Kind}
		if t, ok := record.TierOf(prefix, d.Topic); ok {
			e.Tier = tiers.Name(t)
		}
		out = append(out, e)
	}
	for _, c := range ti.Cancels {
		out = append(out, Event{TimeMs: c.AtMs, Type: TypeCancellation, Source: SourceIndex, Topic: c.Topic, Partition: c.Partition,
			Offset: c.Offset, DueMs: c.DueMs, Withdrawn: c.Withdrawn})
	}
	for _, d := range ti.DeadLetters {
		e := Event{TimeMs: d.DeadMs, Type: TypeDeadLetter, Source: SourceIndex, Topic: d.Topic, Partition: d.Partition, Offset: d.Offset,
			Of: d.Source, DeadlineMs: d.DeadlineMs, DueMs: d.DeadlineMs}
		e.Reason, e.Detail, _ = strings.Cut(d.Reason, ": ")
		out = append(out, e)
	}
	for _, a := range ti.Attempts {
		e := Event{Type: TypeOutcome, Source: SourceClickHouse, Partition: -1, Offset: -1}
		e.FromOutcome(a.Event)
		out = append(out, e)
	}
	for i := range out {
		out[i].clip()
	}
	return out
}
