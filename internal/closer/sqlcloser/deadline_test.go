package sqlcloser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// deadlineColumns are the deadline columns the guard is tested on: the
// column's type and the time zone of the closer's session (empty: UTC).
// A Postgres session far from UTC shows a timestamp column compared as a
// UTC wall clock, and a timestamptz one as an instant.
var deadlineColumns = []struct {
	driver, colType, timeZone string
	micros                    bool // the column keeps microseconds
}{
	{driver: sqlcloser.DriverPostgres, colType: "timestamptz", timeZone: "Asia/Tokyo", micros: true},
	{driver: sqlcloser.DriverPostgres, colType: "timestamp", timeZone: "Asia/Tokyo", micros: true},
	{driver: sqlcloser.DriverMySQL, colType: "DATETIME(3)"},
	{driver: sqlcloser.DriverMySQL, colType: "TIMESTAMP(6) NULL", micros: true},
}

// recordDue is the deadline of the records in deadline tests.
var recordDue = time.Date(2030, 6, 1, 12, 30, 0, 250_000_000, time.UTC)

// setupDeadline returns a Closer guarded by the deadline column
// expires_at of type colType, and its bundle; adjust, when set, adjusts
// the Config first.
func setupDeadline(t *testing.T, driver, colType, timeZone string, adjust func(*sqlcloser.Config, *bundle)) (*sqlcloser.Closer, *bundle) {
	t.Helper()
	return setup(t, driver, func(c *sqlcloser.Config, b *bundle) {
		b.exec(t, `ALTER TABLE `+b.table+` ADD COLUMN expires_at `+colType)
		c.DeadlineColumn = "expires_at"
		if timeZone != "" {
			c.DSN.Value = withParam(b.dsn, "timezone", timeZone)
		}
		if adjust != nil {
			adjust(c, b)
		}
	})
}

// insertDue adds order n created at created (now when zero) with the
// deadline at, NULL when zero, written as the service would: the instant
// for timestamptz, its UTC wall clock for the other types.
func (b *bundle) insertDue(t testing.TB, n int64, status string, created, at time.Time) {
	t.Helper()
	if created.IsZero() {
		created = time.Now()
	}
	var v any
	if !at.IsZero() {
		v = at.UTC()
	}
	b.exec(t, `INSERT INTO `+b.table+` (id, status, created_at, expires_at) VALUES ($1, $2, $3, $4)`, n, status, created.UTC(), v)
}

// dueTask is a first attempt of the record of order n due at due.
func dueTask(n int64, due time.Time) closer.Task {
	return closer.Task{ID: id(n), Kind: "order-timeout", Attempt: 1, Meta: tiers.Meta{Due: due}}
}

// TestCloseDeadline closes orders whose stored deadline is earlier than the
// record's, equal, later, or NULL: a later one is moved and keeps the
// order as it was; the others close. Closing each again changes nothing.
func TestCloseDeadline(t *testing.T) {
	t.Parallel()
	moved := func(at time.Time) closer.Result {
		return closer.Result{Outcome: outcome.Moved, Detail: at.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	}
	closed, already := closer.Result{Outcome: outcome.Closed}, closer.Result{Outcome: outcome.AlreadyClosed}
	type tc struct {
		name   string
		status string // "" for no order
		stored time.Time
		task   closer.Task
		want   closer.Result
		again  closer.Result // a second close of the same task
		micros bool          // needs a column that keeps microseconds
	}
	later := recordDue.Add(30 * time.Minute)
	cases := []tc{
		{name: "stored earlier", status: "UNPAID", stored: recordDue.Add(-time.Minute), want: closed, again: already},
		{name: "stored equal", status: "UNPAID", stored: recordDue, want: closed, again: already},
		{name: "stored later in the same millisecond", status: "UNPAID", stored: recordDue.Add(999 * time.Microsecond),
			want: closed, again: already, micros: true},
		{name: "stored a millisecond later", status: "UNPAID", stored: recordDue.Add(time.Millisecond),
			want: moved(recordDue.Add(time.Millisecond)), again: moved(recordDue.Add(time.Millisecond))},
		{name: "stored later", status: "UNPAID", stored: later, want: moved(later), again: moved(later)},
		{name: "NULL", status: "UNPAID", want: closed, again: already},
		{name: "paid, stored later", status: "PAID", stored: later,
			want: closer.Result{Outcome: outcome.Skipped, Detail: "PAID"}, again: closer.Result{Outcome: outcome.Skipped, Detail: "PAID"}},
		{name: "closed, stored later", status: "CLOSED", stored: later, want: already, again: already},
		{name: "missing", want: closer.Result{Outcome: outcome.NotFound}, again: closer.Result{Outcome: outcome.NotFound}},
		{name: "retry of the first deadline", status: "UNPAID", stored: later,
			task: closer.Task{Attempt: 3, Meta: tiers.Meta{Due: later.Add(time.Hour), Deadline: recordDue}},
			want: moved(later), again: moved(later)},
		{name: "the record of the new deadline", status: "UNPAID", stored: later,
			task: closer.Task{Meta: tiers.Meta{Due: later}}, want: closed, again: already},
	}
	for _, v := range deadlineColumns {
		t.Run(v.driver+"/"+v.colType, func(t *testing.T) {
			t.Parallel()
			c, b := setupDeadline(t, v.driver, v.colType, v.timeZone, nil)
			b.countChanges(t)
			for i, tt := range cases {
				if tt.micros && !v.micros {
					continue
				}
				n := int64(i + 1)
				t.Run(tt.name, func(t *testing.T) {
					if tt.status != "" {
						b.insertDue(t, n, tt.status, time.Time{}, tt.stored)
					}
					task := tt.task
					task.ID, task.Kind = id(n), "order-timeout"
					if task.Meta.Due.IsZero() {
						task.Meta.Due = recordDue
					}
					for round, want := range []closer.Result{tt.want, tt.again} {
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						got, err := c.Close(ctx, task)
						cancel()
						if err != nil || got != want {
							t.Errorf("close %d = %+v, %v; want %+v", round+1, got, err, want)
						}
					}
					r, _ := b.row(t, n)
					wantChanged := 0
					if tt.want == closed {
						wantChanged = 1
					}
					if r.changes != wantChanged || r.closedAt.Valid != (wantChanged == 1) {
						t.Errorf("order = %+v, want changed %d times", r, wantChanged)
					}
				})
			}
		})
	}
}

// TestCloseBatchDeadline closes open, paid, closed, missing and moved
// orders, with duplicates, in one batch: each close has the outcome it
// would have had on its own, one after the other, only the orders closed
// change, once, and only they release their stock.
func TestCloseBatchDeadline(t *testing.T) {
	t.Parallel()
	later := recordDue.Add(30 * time.Minute)
	for _, v := range deadlineColumns {
		for _, release := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s/release=%t", v.driver, v.colType, release), func(t *testing.T) {
				t.Parallel()
				c, b := setupDeadline(t, v.driver, v.colType, v.timeZone, func(c *sqlcloser.Config, b *bundle) {
					if release {
						c.ReleaseStatement = stockBundle(t, b, 10)
					}
				})
				if !sqlcloser.Batching(c) {
					t.Fatal("not batching")
				}
				b.countChanges(t)
				seed := []struct {
					n      int64
					status string
					stored time.Time
				}{
					{1, "UNPAID", recordDue.Add(-time.Minute)},
					{2, "PAID", later},
					{3, "CLOSED", later},
					// 4 is missing.
					{5, "UNPAID", later},
					{6, "UNPAID", time.Time{}},
					{7, "UNPAID", recordDue.Add(time.Millisecond)},
					{8, "UNPAID", later},
					{9, "UNPAID", later}, // not in the batch
				}
				for _, s := range seed {
					b.insertDue(t, s.n, s.status, time.Time{}, s.stored)
				}
				task := func(s string, due time.Time) closer.Task {
					return closer.Task{ID: s, Kind: "order-timeout", Attempt: 1, Meta: tiers.Meta{Due: due}}
				}
				tasks := []closer.Task{
					task("1", recordDue), task("2", recordDue), task("3", recordDue), task("4", recordDue),
					task("5", recordDue), task("6", recordDue), task("7", recordDue),
					task("1", recordDue), task("5", recordDue), task("01", recordDue), task("05", recordDue),
					// Order 8's old and new deadlines in one batch: the new one
					// closes it, and the old one finds it closed, as when the
					// new one runs first.
					task("8", recordDue), task("8", later),
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				got, errs := sqlcloser.CloseTasks(ctx, c, tasks)
				ms := func(at time.Time) string { return at.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
				closed, already := closer.Result{Outcome: outcome.Closed}, closer.Result{Outcome: outcome.AlreadyClosed}
				moved, moved7 := closer.Result{Outcome: outcome.Moved, Detail: ms(later)}, closer.Result{Outcome: outcome.Moved, Detail: ms(recordDue.Add(time.Millisecond))}
				want := []closer.Result{
					closed, {Outcome: outcome.Skipped, Detail: "PAID"}, already, {Outcome: outcome.NotFound},
					moved, closed, moved7,
					already, moved, already, moved,
					already, closed,
				}
				for i := range tasks {
					if errs[i] != nil || got[i] != want[i] {
						t.Errorf("close %d (%s due %s) = %+v, %v; want %+v", i, tasks[i].ID, ms(tasks[i].Meta.Due), got[i], errs[i], want[i])
					}
				}
				if n := sqlcloser.BatchesRun(c); n != 1 {
					t.Errorf("%d batches ran, want 1", n)
				}
				for n, w := range map[int64]string{1: "CLOSED", 2: "PAID", 3: "CLOSED", 5: "UNPAID", 6: "CLOSED", 7: "UNPAID", 8: "CLOSED", 9: "UNPAID"} {
					r, _ := b.row(t, n)
					changed := 0
					if w == "CLOSED" && n != 3 {
						changed = 1
					}
					if r.status != w || r.changes != changed {
						t.Errorf("order %d = %+v, want %s changed %d times", n, r, w, changed)
					}
					if release {
						if got, wantQty := b.stock(t, n), 3*changed; got != wantQty {
							t.Errorf("order %d: stock %d, want %d", n, got, wantQty)
						}
					}
				}
			})
		}
	}
}

// TestCloseBatchDeadlineDuplicates closes one moved order 20 times in one
// batch and 20 times in batches run at once: every close is moved and the
// order is not changed; then the record of its new deadline closes it once.
func TestCloseBatchDeadlineDuplicates(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			c, b := setupDeadline(t, driver, map[string]string{sqlcloser.DriverPostgres: "timestamptz", sqlcloser.DriverMySQL: "DATETIME(3)"}[driver], "", nil)
			b.countChanges(t)
			later := recordDue.Add(time.Hour)
			b.insertDue(t, 7, "UNPAID", time.Time{}, later)
			tasks := make([]closer.Task, 20)
			for i := range tasks {
				tasks[i] = dueTask(7, recordDue)
			}
			ctx := context.Background()
			res, errs := sqlcloser.CloseTasks(ctx, c, tasks)
			for i := range res {
				if errs[i] != nil || res[i].Outcome != outcome.Moved {
					t.Errorf("close %d = %+v, %v; want moved", i, res[i], errs[i])
				}
			}
			outcomes := runConcurrently(t, 20, func(i int) (closer.Result, error) {
				var other closer.Task
				if i%2 == 0 {
					other = dueTask(7, later) // the new deadline's record
				} else {
					other = dueTask(int64(100+i), recordDue)
				}
				res, errs := sqlcloser.CloseTasks(ctx, c, []closer.Task{dueTask(7, recordDue), other})
				if i%2 == 0 && errs[1] == nil && res[1].Outcome == outcome.Closed {
					return res[1], nil
				}
				return res[0], errs[0]
			})
			// Ten batches hold the new deadline's record: one closes the
			// order; the old records find it moved, or closed once it is.
			if outcomes[outcome.Closed] != 1 || outcomes[outcome.Moved]+outcomes[outcome.AlreadyClosed] != 19 {
				t.Errorf("outcomes = %v, want 1 closed and 19 moved or already_closed", outcomes)
			}
			if r, _ := b.row(t, 7); r.status != "CLOSED" || r.changes != 1 {
				t.Errorf("order 7 = %+v, want CLOSED, changed once", r)
			}
		})
	}
}

// TestCloseDeadlineErrors: a task without a deadline fails permanently,
// alone and in a batch, and New refuses a deadline column that is missing
// or not a timestamp, naming deadline_column.
func TestCloseDeadlineErrors(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			c, b := setupDeadline(t, driver, map[string]string{sqlcloser.DriverPostgres: "timestamptz", sqlcloser.DriverMySQL: "DATETIME(3)"}[driver], "", nil)
			b.insert(t, 1, "UNPAID", time.Time{})
			b.insert(t, 2, "UNPAID", time.Time{})
			if res, err := closeOne(t, c, "1"); err == nil || !closer.IsPermanent(err) || res.Outcome != outcome.Failed ||
				!contains(err.Error(), `close "1"`, "no deadline", "deadline_column expires_at") {
				t.Errorf("close without a deadline = %+v, %v; want failed, a permanent error naming deadline_column", res, err)
			}
			res, errs := sqlcloser.CloseTasks(context.Background(), c, []closer.Task{{ID: "1"}, dueTask(2, recordDue)})
			if errs[0] == nil || !closer.IsPermanent(errs[0]) || errs[1] != nil || res[1].Outcome != outcome.Closed {
				t.Errorf("batch = %+v, %v; want the first failed, the second closed", res, errs)
			}
			if r, _ := b.row(t, 1); r.status != "UNPAID" {
				t.Errorf("order 1 = %+v, want UNPAID", r)
			}

			for _, tt := range []struct{ column, alter, wantIn string }{
				{column: "expires_on", wantIn: "has no column expires_on"},
				{column: "expires_ms", alter: "ALTER TABLE %s ADD COLUMN expires_ms BIGINT", wantIn: "not a timestamp"},
			} {
				if tt.alter != "" {
					b.exec(t, fmt.Sprintf(tt.alter, b.table))
				}
				cfg := b.config()
				cfg.DeadlineColumn = tt.column
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				c, err := sqlcloser.New(ctx, cfg)
				cancel()
				if err == nil {
					_ = c.Stop()
					t.Fatalf("New with deadline_column %s: no error", tt.column)
				}
				if !strings.Contains(err.Error(), "deadline_column: ") || !strings.Contains(err.Error(), tt.wantIn) {
					t.Errorf("New with deadline_column %s = %v, want deadline_column: ... %s", tt.column, err, tt.wantIn)
				}
			}
		})
	}
}

// TestReconcileDeadline: reconcile closes a missed order only when its
// stored deadline is grace before the run, or NULL; an order whose
// deadline moved later is moved, and left open.
func TestReconcileDeadline(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			c, b := setupDeadline(t, driver, map[string]string{sqlcloser.DriverPostgres: "timestamp", sqlcloser.DriverMySQL: "DATETIME(3)"}[driver], "",
				reconcileConfig)
			created := reconcileNow.Add(-2 * time.Hour)
			runDue := reconcileNow.Add(-reconcileGrace)
			for n, stored := range map[int64]time.Time{
				1: created.Add(reconcileDeadline), // the first deadline
				2: {},                             // NULL
				3: runDue,                         // just due
				4: runDue.Add(time.Millisecond),   // due within the grace
				5: reconcileNow.Add(time.Hour),    // moved past the run
			} {
				b.insertDue(t, n, "UNPAID", created, stored)
			}
			rep := reconcile(t, c, nil, sqlcloser.ReconcileOptions{})
			want := map[outcome.Outcome]int{outcome.Closed: 3, outcome.Moved: 2}
			if rep.Scanned != 5 || fmt.Sprint(rep.Outcomes) != fmt.Sprint(want) || fmt.Sprint(rep.Closed) != "[1 2 3]" {
				t.Errorf("report = %+v, want 5 scanned, outcomes %v, 1 2 3 closed", rep, want)
			}
		})
	}
}
