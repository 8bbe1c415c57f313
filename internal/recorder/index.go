package recorder

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Reasons a record of an indexed topic has no row (the reason label of
// hourglass_recorder_index_skipped_total).
const (
	skipHop     = "hop"          // a deadline moving to a shorter tier: its first record has the row
	skipRetry   = "retry"        // a close attempt rescheduled by the canceller
	skipInvalid = "invalid"      // breaks the record contract; the router dead-letters it
	skipLongKey = "key_too_long" // a task id longer than outcome.MaxTaskIDBytes
)

// Tables of the index rows (the table label of
// hourglass_recorder_index_rows_inserted_total).
var indexTables = []string{chstore.DeadlinesTable, chstore.CancellationsTable, chstore.DeadLettersTable}

// addIndexed adds the row of rec, a record of an indexed topic, to the
// batch: a deadline, a cancellation or a dead letter. It reports why there
// is none, or "".
func (r *Recorder) addIndexed(rec *kgo.Record) string {
	if len(rec.Key) > outcome.MaxTaskIDBytes {
		return skipLongKey
	}
	x := r.cfg.Index
	switch rec.Topic {
	case x.Cancellations:
		c, err := tiers.DecodeCancellation(rec)
		if err != nil {
			return skipInvalid
		}
		row := chstore.Cancel{TaskID: c.ID, AtMs: c.At.UnixMilli(), Withdrawn: c.Withdrawn,
			Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}
		if !c.Due.IsZero() {
			row.DueMs = c.Due.UnixMilli()
		}
		r.index.Cancels = append(r.index.Cancels, row)
	case x.DeadLetters:
		if len(rec.Key) == 0 {
			return skipInvalid // a dead letter of a record without a task id: nothing to look it up by
		}
		reason, _ := tiers.Header(rec.Headers, tiers.HeaderReason)
		source, _ := tiers.Header(rec.Headers, tiers.HeaderSource)
		dead := record.HeaderMillis(rec, tiers.HeaderDeadAt)
		if dead == 0 {
			dead = rec.Timestamp.UnixMilli()
		}
		deadline := record.HeaderMillis(rec, tiers.HeaderDeadline)
		if deadline == 0 {
			deadline = record.HeaderMillis(rec, tiers.HeaderDue)
		}
		r.index.DeadLetters = append(r.index.DeadLetters, chstore.DeadLetter{TaskID: string(rec.Key),
			Reason: outcome.Clip(string(reason), outcome.MaxErrorBytes), Source: outcome.Clip(string(source), outcome.MaxDetailBytes), DeadMs: dead, DeadlineMs: deadline,
			Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset})
	default:
		m, err := tiers.DecodeRecord(rec)
		switch {
		case err != nil:
			return skipInvalid
		case m.Hops > 0:
			return skipHop
		case m.Attempt > 1:
			return skipRetry
		}
		sched := m.Scheduled
		if sched.IsZero() {
			sched = rec.Timestamp
		}
		r.index.Deadlines = append(r.index.Deadlines, chstore.Deadline{TaskID: string(rec.Key), Kind: m.Kind, Target: m.Target,
			DueMs: m.Due.UnixMilli(), ScheduledMs: sched.UnixMilli(), RecordMs: rec.Timestamp.UnixMilli(),
			Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset})
	}
	return ""
}
