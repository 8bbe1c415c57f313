package sqlcloser_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/outcome"
)

// reconcileNow is the fake clock's reading in reconcile tests.
var reconcileNow = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

const (
	reconcileDeadline = 30 * time.Minute
	reconcileGrace    = 5 * time.Minute
)

// seedReconcile fills b's table with a mix of orders and returns the ids
// of the missed ones (open, created before now - deadline - grace) in scan
// order.
func seedReconcile(t testing.TB, b *bundle) []string {
	t.Helper()
	cutoff := reconcileNow.Add(-reconcileDeadline - reconcileGrace)
	seed := []struct {
		id      int64
		status  string
		created time.Time
	}{
		// Seven missed orders created at the same instant: with page_size
		// 3 they span three pages. Inserted out of order.
		{14, "UNPAID", reconcileNow.Add(-2 * time.Hour)},
		{10, "UNPAID", reconcileNow.Add(-2 * time.Hour)},
		{16, "UNPAID", reconcileNow.Add(-2 * time.Hour)},
		{12, "UNPAID", reconcileNow.Add(-2 * time.Hour)},
		{11, "UNPAID", reconcileNow.Add(-2 * time.Hour)},
		{15, "UNPAID", reconcileNow.Add(-2 * time.Hour)},
		{13, "UNPAID", reconcileNow.Add(-2 * time.Hour)},
		{21, "UNPAID", reconcileNow.Add(-90 * time.Minute)},
		{20, "UNPAID", reconcileNow.Add(-90 * time.Minute)},
		{22, "UNPAID", cutoff.Add(-time.Microsecond)},       // just missed
		{30, "UNPAID", reconcileNow.Add(-10 * time.Minute)}, // not yet due
		{31, "UNPAID", reconcileNow.Add(-33 * time.Minute)}, // due, within grace
		{32, "UNPAID", cutoff},                              // due exactly grace ago: not yet missed
		{33, "UNPAID", reconcileNow.Add(time.Hour)},         // created in the future (clock skew)
		{40, "PAID", reconcileNow.Add(-2 * time.Hour)},      // paid
		{41, "CLOSED", reconcileNow.Add(-2 * time.Hour)},    // closed
		{42, "CANCELLED", reconcileNow.Add(-3 * time.Hour)}, // another final state
		{43, "PAID", reconcileNow.Add(-2*time.Hour - 1)},    // paid, created next to the missed ones
	}
	for _, o := range seed {
		b.insert(t, o.id, o.status, o.created)
	}
	return []string{"10", "11", "12", "13", "14", "15", "16", "20", "21", "22"}
}

// statuses reads every order's status.
func (b *bundle) statuses(t testing.TB) map[string]string {
	t.Helper()
	rows, err := b.db.Query(`SELECT id, status FROM ` + b.table)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	got := map[string]string{}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			t.Fatal(err)
		}
		got[id] = status
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func reconcileConfig(c *sqlcloser.Config, _ *bundle) {
	c.Reconcile.Deadline = reconcileDeadline
	c.Reconcile.PageSize = 3
}

func reconcile(t testing.TB, c *sqlcloser.Closer, via closer.Closer, o sqlcloser.ReconcileOptions) sqlcloser.ReconcileReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o.Kind = "order-timeout"
	o.Grace = reconcileGrace
	o.Clock = clock.NewFake(reconcileNow)
	rep, err := c.Reconcile(ctx, via, o)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return rep
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	variants := []struct {
		name, driver string
		alter        string // adjusts the order table (%s)
	}{
		{name: "postgres", driver: sqlcloser.DriverPostgres},
		{
			name:   "postgres timestamp without time zone",
			driver: sqlcloser.DriverPostgres,
			alter:  `ALTER TABLE %s ALTER COLUMN created_at TYPE timestamp USING created_at AT TIME ZONE 'UTC'`,
		},
		{name: "mysql", driver: sqlcloser.DriverMySQL},
		{
			name:   "mysql timestamp",
			driver: sqlcloser.DriverMySQL,
			alter:  `ALTER TABLE %s MODIFY created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)`,
		},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			c, b := setup(t, v.driver, func(c *sqlcloser.Config, b *bundle) {
				reconcileConfig(c, b)
				if v.alter != "" {
					b.exec(t, fmt.Sprintf(v.alter, b.table))
				}
			})
			missed := seedReconcile(t, b)
			before := b.statuses(t)
			wantCutoff := reconcileNow.Add(-reconcileDeadline - reconcileGrace)

			// Dry run: finds them all, changes nothing.
			rep := reconcile(t, c, nil, sqlcloser.ReconcileOptions{DryRun: true})
			want := sqlcloser.ReconcileReport{Scanned: len(missed), Outcomes: map[outcome.Outcome]int{}, Cutoff: wantCutoff, Pages: 4}
			if !reflect.DeepEqual(rep, want) {
				t.Errorf("dry run report = %+v, want %+v", rep, want)
			}
			if got := b.statuses(t); !reflect.DeepEqual(got, before) {
				t.Errorf("dry run changed orders: %v, were %v", got, before)
			}

			// The run closes exactly the missed orders, in scan order.
			var progress []int
			rep = reconcile(t, c, nil, sqlcloser.ReconcileOptions{
				Progress: func(r sqlcloser.ReconcileReport) { progress = append(progress, r.Scanned) },
			})
			want = sqlcloser.ReconcileReport{
				Scanned:  len(missed),
				Outcomes: map[outcome.Outcome]int{outcome.Closed: len(missed)},
				Closed:   missed,
				Cutoff:   wantCutoff,
				Pages:    4,
			}
			if !reflect.DeepEqual(rep, want) {
				t.Errorf("report = %+v, want %+v", rep, want)
			}
			if wantProgress := []int{3, 6, 9, 10}; !slices.Equal(progress, wantProgress) {
				t.Errorf("progress = %v, want %v", progress, wantProgress)
			}
			after := b.statuses(t)
			for id, status := range before {
				wantStatus := status
				if slices.Contains(missed, id) {
					wantStatus = "CLOSED"
				}
				if after[id] != wantStatus {
					t.Errorf("order %s is %q, want %q", id, after[id], wantStatus)
				}
			}

			// A second run finds nothing.
			rep = reconcile(t, c, nil, sqlcloser.ReconcileOptions{})
			want = sqlcloser.ReconcileReport{Outcomes: map[outcome.Outcome]int{}, Cutoff: wantCutoff, Pages: 1}
			if !reflect.DeepEqual(rep, want) {
				t.Errorf("second run report = %+v, want %+v", rep, want)
			}

			// The report is JSON for `hourglass reconcile`.
			out, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			if !contains(string(out), `"scanned":0`, `"pages":1`, `"cutoff":"2030-06-01T11:25:00Z"`) {
				t.Errorf("JSON report %s", out)
			}
		})
	}
}

// TestReconcileWhilePipelineRuns: orders the pipeline closes during the
// scan come out already_closed, a failed close is recorded and the scan goes
// on, and Limit stops the run.
func TestReconcileWhilePipelineRuns(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			c, b := setup(t, driver, reconcileConfig)
			missed := seedReconcile(t, b)

			// Limit: the first four only.
			rep := reconcile(t, c, nil, sqlcloser.ReconcileOptions{Limit: 4})
			if rep.Scanned != 4 || !slices.Equal(rep.Closed, missed[:4]) || rep.Pages != 2 {
				t.Errorf("limited run = %+v, want the first 4 of %v closed in 2 pages", rep, missed)
			}

			errBroken := errors.New("closer broken")
			var tasks []closer.Task
			via := closer.CloserFunc(func(ctx context.Context, task closer.Task) (closer.Result, error) {
				tasks = append(tasks, task)
				pipeline := func(id string) {
					if res, err := c.Close(ctx, closer.Task{ID: id}); err != nil || res.Outcome != outcome.Closed {
						t.Errorf("pipeline close %s = %+v, %v", id, res, err)
					}
				}
				switch task.ID {
				case "14":
					pipeline("22") // in a later page: it leaves the scan
				case "16", "20": // the pipeline gets there first
					pipeline(task.ID)
				case "15":
					return closer.Result{Outcome: outcome.Failed}, errBroken
				}
				return c.Close(ctx, task)
			})
			rep = reconcile(t, c, via, sqlcloser.ReconcileOptions{})
			wantOutcomes := map[outcome.Outcome]int{outcome.Closed: 2, outcome.AlreadyClosed: 2, outcome.Failed: 1}
			if rep.Scanned != 5 || !reflect.DeepEqual(rep.Outcomes, wantOutcomes) {
				t.Errorf("report = %+v, want 5 scanned, outcomes %v", rep, wantOutcomes)
			}
			if want := []string{"14", "21"}; !slices.Equal(rep.Closed, want) {
				t.Errorf("closed %v, want %v", rep.Closed, want)
			}
			if len(rep.Failed) != 1 || rep.Failed[0].ID != "15" || !strings.Contains(rep.Failed[0].Error, "closer broken") {
				t.Errorf("failed = %+v, want 15", rep.Failed)
			}
			for _, task := range tasks {
				if task.Kind != "order-timeout" || task.Attempt != 1 {
					t.Errorf("task %+v", task)
				}
			}

			// The rerun closes only the one that failed.
			rep = reconcile(t, c, nil, sqlcloser.ReconcileOptions{})
			if !slices.Equal(rep.Closed, []string{"15"}) || rep.Scanned != 1 {
				t.Errorf("rerun = %+v, want 15 closed", rep)
			}
		})
	}
}

func TestReconcileErrors(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			opts := sqlcloser.ReconcileOptions{Clock: clock.NewFake(reconcileNow)}

			c, _ := setup(t, driver, nil)
			if _, err := c.Reconcile(ctx, nil, opts); err == nil || !strings.Contains(err.Error(), "reconcile.deadline") {
				t.Errorf("Reconcile without a deadline: %v", err)
			}

			c, _ = setup(t, driver, func(c *sqlcloser.Config, b *bundle) {
				reconcileConfig(c, b)
				c.Reconcile.CreatedColumn = "placed_at"
			})
			rep, err := c.Reconcile(ctx, nil, opts)
			if err == nil || !strings.Contains(err.Error(), "page 1") || rep.Pages != 0 {
				t.Errorf("Reconcile on a missing column = %+v, %v", rep, err)
			}
			t.Log(err)

			c, b := setup(t, driver, reconcileConfig)
			seedReconcile(t, b)
			cctx, cancel := context.WithCancel(ctx)
			via := closer.CloserFunc(func(ctx context.Context, task closer.Task) (closer.Result, error) {
				cancel() // hourglass reconcile interrupted during the first close
				return closer.Result{Outcome: outcome.Failed}, ctx.Err()
			})
			rep, err = c.Reconcile(cctx, via, opts)
			if !errors.Is(err, context.Canceled) || rep.Scanned != 1 {
				t.Errorf("interrupted Reconcile = %+v, %v", rep, err)
			}
		})
	}
}
