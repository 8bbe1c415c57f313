package chstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"golang.org/x/sync/errgroup"

	"github.com/hourglass/hourglass/internal/outcome"
)

// Tables of the deadline index (see the package documentation).
const (
	// DeadlinesTable holds one row per scheduled deadline.
	DeadlinesTable = "deadlines"
	// CancellationsTable holds one row per record of the cancellations
	// topic.
	CancellationsTable = "cancellations"
	// DeadLettersTable holds one row per dead letter.
	DeadLettersTable = "dead_letters"
	// OutcomesByTaskTable holds the rows of OutcomesTable ordered by task
	// id, for lookups of one task; the recorder fills it (InsertByTask).
	OutcomesByTaskTable = "outcomes_by_task"
)

// Columns of the index tables that InsertIndex names, in its order; the
// tables have a day column besides (the UTC date of inserted_ms).
var (
	DeadlineColumns   = []string{"task_id", "kind", "target", "due_ms", "scheduled_ms", "record_ms", "topic", "partition", "offset", "inserted_ms"}
	CancelColumns     = []string{"task_id", "at_ms", "due_ms", "withdrawn", "topic", "partition", "offset", "inserted_ms"}
	DeadLetterColumns = []string{"task_id", "reason", "source", "dead_ms", "deadline_ms", "topic", "partition", "offset", "inserted_ms"}
)

// Deadline is a scheduled deadline: the record that put the task into a
// delay topic, before any hop or retry.
type Deadline struct {
	TaskID string
	Kind   string // hourglass-kind; "" for the router's default kind
	Target string // hourglass-target; "" for the router's target topic
	DueMs  int64
	// ScheduledMs is hourglass-scheduled, or the record's timestamp
	// without it: what a cancellation is compared with.
	ScheduledMs int64
	RecordMs    int64 // the record's timestamp
	// Topic, Partition and Offset locate the record: the delay topic the
	// deadline was scheduled into.
	Topic     string
	Partition int32
	Offset    int64
}

// Cancel is a record of the cancellations topic (tiers.Cancellation).
type Cancel struct {
	TaskID    string
	AtMs      int64 // when the task was cancelled: the record's timestamp
	DueMs     int64 // the one deadline cancelled; 0: every deadline scheduled until AtMs
	Withdrawn bool  // a tombstone: the task's cancellation is withdrawn
	Topic     string
	Partition int32
	Offset    int64
}

// DeadLetter is a record of the dead-letter topic.
type DeadLetter struct {
	TaskID string
	Reason string // hourglass-dlq-reason
	Source string // hourglass-dlq-source: "topic[partition]@offset"
	DeadMs int64  // hourglass-dlq-time
	// DeadlineMs is the dead record's deadline: hourglass-deadline, or
	// hourglass-due without it; 0 when it has neither, readable.
	DeadlineMs int64
	Topic      string
	// Partition and Offset locate the dead letter in Topic.
	Partition int32
	Offset    int64
}

// IndexRows are rows of the deadline index, inserted together.
type IndexRows struct {
	Deadlines   []Deadline
	Cancels     []Cancel
	DeadLetters []DeadLetter
}

// Len is the number of rows.
func (r *IndexRows) Len() int { return len(r.Deadlines) + len(r.Cancels) + len(r.DeadLetters) }

// Reset empties r, keeping its memory.
func (r *IndexRows) Reset() {
	r.Deadlines, r.Cancels, r.DeadLetters = r.Deadlines[:0], r.Cancels[:0], r.DeadLetters[:0]
}

// InsertIndex inserts rows, one INSERT per table that has some. Inserting
// a row again is harmless: each table is keyed by its record, and queries
// read a record once.
func (s *Store) InsertIndex(ctx context.Context, rows *IndexRows) error {
	now := s.clock.Now().UnixMilli()
	err := insertRows(ctx, s, DeadlinesTable, rows.Deadlines, DeadlineColumns,
		func(d *Deadline) []any {
			return []any{d.TaskID, d.Kind, d.Target, d.DueMs, d.ScheduledMs, d.RecordMs, d.Topic, d.Partition, d.Offset, now}
		})
	if err != nil {
		return err
	}
	err = insertRows(ctx, s, CancellationsTable, rows.Cancels, CancelColumns,
		func(c *Cancel) []any {
			var w uint8
			if c.Withdrawn {
				w = 1
			}
			return []any{c.TaskID, c.AtMs, c.DueMs, w, c.Topic, c.Partition, c.Offset, now}
		})
	if err != nil {
		return err
	}
	return insertRows(ctx, s, DeadLettersTable, rows.DeadLetters, DeadLetterColumns,
		func(d *DeadLetter) []any {
			return []any{d.TaskID, d.Reason, d.Source, d.DeadMs, d.DeadlineMs, d.Topic, d.Partition, d.Offset, now}
		})
}

// insertRows inserts rows into table as one batch naming columns; values
// gives a row's values in their order.
func insertRows[T any](ctx context.Context, s *Store, table string, rows []T, columns []string, values func(*T) []any) error {
	if len(rows) == 0 {
		return nil
	}
	q := "INSERT INTO " + s.table(table) + " (`" + strings.Join(columns, "`, `") + "`)"
	b, err := s.conn.PrepareBatch(ctx, q)
	if err != nil {
		return fmt.Errorf("insert %d rows into %s: prepare: %w", len(rows), s.table(table), err)
	}
	for i := range rows {
		if err := b.Append(values(&rows[i])...); err != nil {
			_ = b.Abort() // the error to report is Append's
			return fmt.Errorf("insert %d rows into %s: row %d: %w", len(rows), s.table(table), i, err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert %d rows into %s: %w", len(rows), s.table(table), err)
	}
	return nil
}

// TaskIndex is what the index holds of one task.
type TaskIndex struct {
	Deadlines   []Deadline   // by due time
	Cancels     []Cancel     // by offset: the last is the task's cancellation
	DeadLetters []DeadLetter // by time
	Attempts    []Attempt    // by close time, each attempt once
}

// Task returns what the index and the outcomes hold of task id, at most
// limit rows of each kind. Every table it reads is ordered by task id, so a
// lookup reads a few granules of each, whatever the tables hold; the four
// queries run at once.
func (s *Store) Task(ctx context.Context, id string, limit int) (*TaskIndex, error) {
	var t TaskIndex
	if limit <= 0 {
		return &t, nil
	}
	key := "task_id = " + quote(id)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		q := fmt.Sprintf("SELECT any(kind), any(target), any(due_ms) AS due, any(scheduled_ms), any(record_ms), topic, `partition`, `offset`"+
			" FROM %s WHERE %s GROUP BY topic, `partition`, `offset` ORDER BY due, topic, `partition`, `offset` LIMIT %d",
			s.table(DeadlinesTable), key, limit)
		return s.query(ctx, "deadlines of "+id, q, func(scan func(...any) error) error {
			d := Deadline{TaskID: id}
			if err := scan(&d.Kind, &d.Target, &d.DueMs, &d.ScheduledMs, &d.RecordMs, &d.Topic, &d.Partition, &d.Offset); err != nil {
				return err
			}
			t.Deadlines = append(t.Deadlines, d)
			return nil
		})
	})
	g.Go(func() error {
		// The newest rows, returned oldest first.
		q := fmt.Sprintf("SELECT * FROM (SELECT any(at_ms), any(due_ms), any(withdrawn), topic, `partition`, `offset`"+
			" FROM %s WHERE %s GROUP BY topic, `partition`, `offset` ORDER BY `offset` DESC LIMIT %d) ORDER BY `offset`",
			s.table(CancellationsTable), key, limit)
		return s.query(ctx, "cancellations of "+id, q, func(scan func(...any) error) error {
			c := Cancel{TaskID: id}
			var w uint8
			if err := scan(&c.AtMs, &c.DueMs, &w, &c.Topic, &c.Partition, &c.Offset); err != nil {
				return err
			}
			c.Withdrawn = w != 0
			t.Cancels = append(t.Cancels, c)
			return nil
		})
	})
	g.Go(func() error {
		q := fmt.Sprintf("SELECT any(reason), any(source), any(dead_ms) AS dead, any(deadline_ms), topic, `partition`, `offset`"+
			" FROM %s WHERE %s GROUP BY topic, `partition`, `offset` ORDER BY dead, `offset` LIMIT %d",
			s.table(DeadLettersTable), key, limit)
		return s.query(ctx, "dead letters of "+id, q, func(scan func(...any) error) error {
			d := DeadLetter{TaskID: id}
			if err := scan(&d.Reason, &d.Source, &d.DeadMs, &d.DeadlineMs, &d.Topic, &d.Partition, &d.Offset); err != nil {
				return err
			}
			t.DeadLetters = append(t.DeadLetters, d)
			return nil
		})
	})
	g.Go(func() error {
		var err error
		t.Attempts, err = s.attempts(ctx, "attempts of "+id, taskAttemptsQuery(s.table(OutcomesByTaskTable), key, limit))
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, noIndex(err)
	}
	return &t, nil
}

// codeUnknownTable is ClickHouse's UNKNOWN_TABLE error code.
const codeUnknownTable = 60

// noIndex adds to err, when ClickHouse does not know a table, that the
// schema lacks the deadline index: the migrations were not applied.
func noIndex(err error) error {
	var ex *clickhouse.Exception
	if errors.As(err, &ex) && ex.Code == codeUnknownTable {
		return fmt.Errorf("%w (the schema lacks the deadline index, version %d: apply the migrations, `hourglass recorder --migrate-only`)", err, SchemaVersion())
	}
	return err
}

// Due is how many deadlines of one kind and target fall due in one minute
// and are still open: not closed, failed or cancelled by an outcome, nor
// called off by a cancellation in the index, nor dead-lettered.
type Due struct {
	Minute time.Time
	Kind   string
	Target string
	Count  int64
}

// maxForecast bounds the window of a forecast, and maxForecastRows its
// rows (minutes by kinds by targets).
const (
	maxForecast     = 31 * 24 * time.Hour
	maxForecastRows = 100_000
)

// Forecast returns the open deadlines due in [from, to) per minute, kind
// and target, in that order; minutes with none are left out. A deadline is
// open until an outcome ends it (outcome.Outcome.Ends), a cancellation the
// index holds covers it (tiers.Cancellation.Covers), or it is
// dead-lettered (a close no closer could make): a window that
// starts in the past shows what is overdue. It reads the due_ms column of
// the whole deadlines table, and of the outcomes and cancellations the
// window's tasks have.
func (s *Store) Forecast(ctx context.Context, from, to time.Time) ([]Due, error) {
	w := Window{From: from, To: to}
	if err := w.check(); err != nil {
		return nil, err
	}
	if to.Sub(from) > maxForecast {
		return nil, fmt.Errorf("forecast window of %v is longer than %v", to.Sub(from), maxForecast)
	}
	f, t := w.ms()
	q := "SELECT intDiv(due, 60000) * 60000 AS minute, kind, target, toInt64(count())\nFROM (" +
		OpenDeadlinesQuery(s.db, strconv.FormatInt(f, 10), strconv.FormatInt(t, 10)) +
		fmt.Sprintf(")\nGROUP BY minute, kind, target ORDER BY minute, kind, target LIMIT %d", maxForecastRows)
	var out []Due
	err := s.query(ctx, "forecast", q, func(scan func(...any) error) error {
		var d Due
		var minute int64
		if err := scan(&minute, &d.Kind, &d.Target, &d.Count); err != nil {
			return err
		}
		d.Minute = time.UnixMilli(minute).UTC()
		out = append(out, d)
		return nil
	})
	return out, noIndex(err)
}

// forecastSkew is how much earlier than its deadline's due time an outcome
// may have closed and still end it: clocks of hosts differ.
const forecastSkew = time.Minute

// OpenDeadlinesQuery is the query of the open deadlines due in [from, to),
// one row each (task_id, due, kind, target), that Store.Forecast counts and
// the ClickHouse dashboard's due load panels run: db is the quoted database
// (or the dashboard's ${database}), from and to are SQL expressions of unix
// milliseconds. A deadline is a task's due time, however many records
// scheduled it (a producer's retry, a replayed dead letter), and the newest
// of them stands against a cancellation; the task's cancellation is its
// newest record of the compacted topic (one partition per key). A deadline
// is open until an outcome ends it, its cancellation covers it, or it is
// dead-lettered.
func OpenDeadlinesQuery(db, from, to string) string {
	var ended []string
	for _, o := range outcome.All {
		if o.Ends() {
			ended = append(ended, quote(string(o)))
		}
	}
	table := func(name string) string { return db + ".`" + name + "`" }
	inWindow := fmt.Sprintf("due_ms >= %s AND due_ms < %s", from, to)
	tasks := fmt.Sprintf("task_id IN (SELECT task_id FROM %s WHERE %s)", table(DeadlinesTable), inWindow)
	closedFrom := fmt.Sprintf("%s - %d", from, forecastSkew.Milliseconds())
	return fmt.Sprintf(`SELECT task_id, due, kind, target FROM (
    SELECT task_id, due_ms AS due, any(kind) AS kind, any(target) AS target, max(scheduled_ms) AS scheduled
    FROM %[1]s WHERE %[2]s GROUP BY task_id, due_ms
) ANY LEFT JOIN (
    SELECT task_id, argMax(at_ms, `+"`offset`"+`) AS c_at, argMax(due_ms, `+"`offset`"+`) AS c_due, argMax(withdrawn, `+"`offset`"+`) AS c_withdrawn
    FROM %[3]s WHERE %[4]s GROUP BY task_id
) USING task_id
WHERE NOT (c_at > 0 AND c_withdrawn = 0 AND scheduled <= c_at AND (c_due = 0 OR c_due = due))
  AND (task_id, due) NOT IN (
    SELECT task_id, if(deadline_ms != 0, deadline_ms, due_ms) FROM %[5]s
    WHERE %[4]s AND outcome IN (%[6]s) AND closed_ms >= %[7]s AND day >= toDate(toDateTime(intDiv(%[7]s, 1000), 'UTC'))
  )
  AND (task_id, due) NOT IN (SELECT task_id, deadline_ms FROM %[8]s WHERE %[4]s)`,
		table(DeadlinesTable), inWindow, table(CancellationsTable), tasks, table(OutcomesTable),
		strings.Join(ended, ", "), closedFrom, table(DeadLettersTable))
}

// taskAttemptsQuery is the query of the attempts whose rows cond selects
// in table, each once with its first row, oldest first.
func taskAttemptsQuery(table, cond string, limit int) string {
	return fmt.Sprintf("SELECT argMin(task_id, closed_ms), argMin(kind, closed_ms), argMin(outcome, closed_ms),"+
		" argMin(detail, closed_ms), argMin(error, closed_ms), argMin(attempt, closed_ms), argMin(hops, closed_ms),"+
		" argMin(path, closed_ms), argMin(scheduled_ms, closed_ms), argMin(due_ms, closed_ms), argMin(deadline_ms, closed_ms),"+
		" argMin(forwarded_ms, closed_ms), min(closed_ms) AS first, argMin(lateness_ms, closed_ms), argMin(instance, closed_ms),"+
		" topic, `partition`, `offset`, toInt64(count())"+
		" FROM %s WHERE %s GROUP BY topic, `partition`, `offset` ORDER BY first, topic, `partition`, `offset` LIMIT %d",
		table, cond, limit)
}
