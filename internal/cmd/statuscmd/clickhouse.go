package statuscmd

import (
	"context"
	"fmt"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/taskstatus"
)

// maxClickHouseRows bounds the attempts status takes from ClickHouse.
const maxClickHouseRows = 1000

// queryClickHouse asks ClickHouse's outcomes table for the attempts of
// task id since from, and returns how to add them to a status: an outcome
// event read from Kafka that ClickHouse holds too is marked InClickHouse,
// and each other row becomes an event of its own. A failure is noted in
// the status's CH, not returned: what Kafka said still stands.
func queryClickHouse(ctx context.Context, cfg chstore.Config, id string, from time.Time) func(*Status) {
	q := &ClickHouseQ{Database: cfg.WithDefaults().Database}
	rows, err := taskAttempts(ctx, cfg, id, from)
	if err != nil {
		q.Error = err.Error()
		return func(st *Status) { st.CH = q }
	}
	q.Rows = len(rows)
	return func(st *Status) {
		st.CH = q
		seen := map[string]*taskstatus.Event{}
		for i := range st.Events {
			if e := &st.Events[i]; e.Type == taskstatus.TypeOutcome && e.Source == taskstatus.SourceKafka {
				seen[attemptKey(e.Of, e.Outcome, e.TimeMs)] = e
			}
		}
		for _, a := range rows {
			e := taskstatus.Event{Type: taskstatus.TypeOutcome, Source: taskstatus.SourceClickHouse, Partition: -1, Offset: -1}
			e.FromOutcome(a.Event)
			if k, ok := seen[attemptKey(e.Of, e.Outcome, e.TimeMs)]; ok {
				k.InClickHouse = true
				continue
			}
			q.Only++
			st.Events = append(st.Events, e)
		}
	}
}

// taskAttempts returns the attempts of task id since from in ClickHouse.
func taskAttempts(ctx context.Context, cfg chstore.Config, id string, from time.Time) ([]chstore.Attempt, error) {
	store, err := chstore.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return store.TaskAttempts(ctx, id, from, maxClickHouseRows)
}

// attemptKey identifies the outcome event of an attempt: the record it
// reports on, its outcome and its close time.
func attemptKey(of, outcome string, closedMs int64) string {
	return fmt.Sprintf("%s %s %d", of, outcome, closedMs)
}
