package chstore

import (
	"context"
	"fmt"
	"time"
)

// TaskAttempts returns the close attempts of task id whose rows closed at
// or after from, oldest first, at most limit: each attempt once, with the
// columns of its first row (smallest closed_ms), as a View counts it. It
// reads OutcomesByTaskTable, ordered by task id: a few granules, whatever
// the table holds.
func (s *Store) TaskAttempts(ctx context.Context, id string, from time.Time, limit int) ([]Attempt, error) {
	if limit <= 0 {
		return nil, nil
	}
	f := from.UnixMilli()
	cond := fmt.Sprintf("task_id = %s AND closed_ms >= %d AND day >= %s", quote(id), f, utcDate(f))
	return s.attempts(ctx, "attempts of "+id, taskAttemptsQuery(s.table(OutcomesByTaskTable), cond, limit))
}
