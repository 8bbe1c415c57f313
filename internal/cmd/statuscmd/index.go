package statuscmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// SourceIndex marks an event of a record as the deadline index in
// ClickHouse holds it (chstore.Store.Task), not as read from Kafka.
const SourceIndex = "index"

// maxIndexRows bounds the rows of each index table status takes.
const maxIndexRows = 1000

// IndexQ is what the lookup in the deadline index found.
type IndexQ struct {
	Database string `json:"database"`
	// Rows counts the rows found: deadlines, cancellations, dead letters
	// and close attempts.
	Rows int `json:"rows"`
	// TookMs is how long the lookup took.
	TookMs int64  `json:"took_ms"`
	Error  string `json:"error,omitempty"`
}

// lookupIndex looks task id up in the deadline index and the outcomes, and
// returns its events: what status shows without reading Kafka.
func lookupIndex(ctx context.Context, cfg chstore.Config, id, prefix string, now func() time.Time) ([]Event, *IndexQ) {
	q := &IndexQ{Database: cfg.WithDefaults().Database}
	start := now()
	ti, err := taskIndex(ctx, cfg, id)
	q.TookMs = now().Sub(start).Milliseconds()
	if err != nil {
		q.Error = err.Error()
		return nil, q
	}
	events := indexEvents(ti, prefix)
	q.Rows = len(events)
	return events, q
}

func taskIndex(ctx context.Context, cfg chstore.Config, id string) (*chstore.TaskIndex, error) {
	store, err := chstore.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return store.Task(ctx, id, maxIndexRows)
}

// indexEvents are the events of what the index holds of a task: each
// deadline's first record, the cancellations, the dead letters and the
// close attempts.
func indexEvents(ti *chstore.TaskIndex, prefix string) []Event {
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
		e.fromOutcome(a.Event)
		out = append(out, e)
	}
	for i := range out {
		out[i].clip()
	}
	return out
}

// indexText says what the lookup in the index found, for the text output.
func indexText(q *IndexQ) string {
	if q.Error != "" {
		return fmt.Sprintf("deadline index in ClickHouse (%s): %s\n", q.Database, q.Error)
	}
	return fmt.Sprintf("looked up in the deadline index in ClickHouse (%s): %d rows in %d ms; --scan reads Kafka too\n", q.Database, q.Rows, q.TookMs)
}
