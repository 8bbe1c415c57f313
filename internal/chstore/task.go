package chstore

import (
	"context"
	"fmt"
	"time"
)

// TaskAttempts returns the close attempts of task id whose rows closed at
// or after from, oldest first, at most limit: each attempt once, with the
// columns of its first row (smallest closed_ms), as a View counts it. The
// table is ordered by the cancel record, not by task, so the query reads
// the task_id column of every partition (month) from from's on: keep from
// recent.
func (s *Store) TaskAttempts(ctx context.Context, id string, from time.Time, limit int) ([]Attempt, error) {
	if limit <= 0 {
		return nil, nil
	}
	f := from.UnixMilli()
	q := fmt.Sprintf("SELECT argMin(task_id, closed_ms), argMin(kind, closed_ms), argMin(outcome, closed_ms),"+
		" argMin(detail, closed_ms), argMin(error, closed_ms), argMin(attempt, closed_ms), argMin(hops, closed_ms),"+
		" argMin(path, closed_ms), argMin(scheduled_ms, closed_ms), argMin(due_ms, closed_ms), argMin(deadline_ms, closed_ms),"+
		" argMin(forwarded_ms, closed_ms), min(closed_ms) AS first, argMin(lateness_ms, closed_ms), argMin(instance, closed_ms),"+
		" topic, `partition`, `offset`, toInt64(count())"+
		" FROM %s WHERE task_id = %s AND closed_ms >= %d AND day >= %s"+
		" GROUP BY topic, `partition`, `offset` ORDER BY first, topic, `partition`, `offset` LIMIT %d",
		s.table(OutcomesTable), quote(id), f, utcDate(f), limit)
	return s.attempts(ctx, "attempts of "+id, q)
}
