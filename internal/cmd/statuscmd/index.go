package statuscmd

import (
	"context"
	"fmt"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/taskstatus"
)

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
func lookupIndex(ctx context.Context, cfg chstore.Config, id, prefix string, now func() time.Time) ([]taskstatus.Event, *IndexQ) {
	q := &IndexQ{Database: cfg.WithDefaults().Database}
	start := now()
	ti, err := taskIndex(ctx, cfg, id)
	q.TookMs = now().Sub(start).Milliseconds()
	if err != nil {
		q.Error = err.Error()
		return nil, q
	}
	events := taskstatus.FromIndex(ti, prefix)
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

// indexText says what the lookup in the index found, for the text output.
func indexText(q *IndexQ) string {
	if q.Error != "" {
		return fmt.Sprintf("deadline index in ClickHouse (%s): %s\n", q.Database, q.Error)
	}
	return fmt.Sprintf("looked up in the deadline index in ClickHouse (%s): %d rows in %d ms; --scan reads Kafka too\n", q.Database, q.Rows, q.TookMs)
}
