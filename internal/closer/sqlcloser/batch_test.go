package sqlcloser_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/dbtest"
)

// closeBatch closes ids in one batch; an error fails the test.
func closeBatch(t testing.TB, c *sqlcloser.Closer, ids ...string) []closer.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, errs := sqlcloser.CloseBatch(ctx, c, ids)
	for i, err := range errs {
		if err != nil {
			t.Errorf("close %s in a batch: %v", ids[i], err)
		}
	}
	return res
}

// TestCloseBatchOutcomes closes open, paid, closed and missing orders, and
// duplicates, in one batch: each close has the outcome it would have had
// on its own, one after the other, and only the open orders change, once.
func TestCloseBatchOutcomes(t *testing.T) {
	t.Parallel()
	variants := []struct {
		name string
		cfg  func(testing.TB, *sqlcloser.Config, *bundle)
		// paid is the Detail of the paid order's skip.
		paid string
	}{
		{name: "default", paid: "PAID"},
		{name: "release statement", paid: "PAID", cfg: func(t testing.TB, c *sqlcloser.Config, b *bundle) {
			c.ReleaseStatement = stockBundle(t, b, 10)
		}},
		{name: "custom status statement", paid: "paid", cfg: func(t testing.TB, c *sqlcloser.Config, b *bundle) {
			c.StatusStatement = b.q(`SELECT CASE status WHEN 'PAID' THEN lower(status) ELSE status END
				FROM ` + b.table + ` WHERE id = $1`)
		}},
		{name: "no closed_at column", paid: "PAID", cfg: func(t testing.TB, c *sqlcloser.Config, b *bundle) {
			b.exec(t, `ALTER TABLE `+b.table+` DROP COLUMN closed_at`)
			b.closedAt = "NULL"
			c.ClosedAtColumn = "-"
		}},
	}
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			for _, v := range variants {
				t.Run(v.name, func(t *testing.T) {
					c, b := setup(t, driver, func(c *sqlcloser.Config, b *bundle) {
						if v.cfg != nil {
							v.cfg(t, c, b)
						}
					})
					if !sqlcloser.Batching(c) {
						t.Fatal("not batching")
					}
					b.countChanges(t)
					for n, status := range map[int64]string{1: "UNPAID", 2: "PAID", 3: "CLOSED", 5: "UNPAID", 6: "UNPAID"} {
						b.insert(t, n, status, time.Time{})
					}
					// 4 is missing; "01" is order 1 again; 6 is not in the batch.
					ids := []string{"1", "2", "3", "4", "5", "1", "5", "01", "2", "4"}
					got := closeBatch(t, c, ids...)
					closed, already := closer.Result{Outcome: outcome.Closed}, closer.Result{Outcome: outcome.AlreadyClosed}
					paid, missing := closer.Result{Outcome: outcome.Skipped, Detail: v.paid}, closer.Result{Outcome: outcome.NotFound}
					want := []closer.Result{closed, paid, already, missing, closed, already, already, already, paid, missing}
					for i := range ids {
						if got[i] != want[i] {
							t.Errorf("close %d (%s) = %+v, want %+v", i, ids[i], got[i], want[i])
						}
					}
					if n := sqlcloser.BatchesRun(c); n != 1 {
						t.Errorf("%d batches ran, want 1", n)
					}
					type state struct {
						status  string
						changes int
					}
					for n, w := range map[int64]state{1: {"CLOSED", 1}, 2: {"PAID", 0}, 3: {"CLOSED", 0}, 5: {"CLOSED", 1}, 6: {"UNPAID", 0}} {
						if r, _ := b.row(t, n); r.status != w.status || r.changes != w.changes {
							t.Errorf("order %d = %+v, want %s changed %d times", n, r, w.status, w.changes)
						}
					}
					if v.name == "release statement" {
						for n, qty := range map[int64]int{1: 3, 2: 0, 3: 0, 5: 3, 6: 0} {
							if got := b.stock(t, n); got != qty {
								t.Errorf("order %d: stock %d, want %d", n, got, qty)
							}
						}
					}
				})
			}
		})
	}
}

// TestCloseBatchDuplicates closes one order 20 times in one batch and 20
// times in batches run at once: it is closed once.
func TestCloseBatchDuplicates(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			c, b := setup(t, driver, nil)
			b.countChanges(t)
			b.insert(t, 7, "UNPAID", time.Time{})
			b.insert(t, 8, "UNPAID", time.Time{})
			ids := make([]string, 20)
			for i := range ids {
				ids[i] = id(7 + int64(i%2))
			}
			res := closeBatch(t, c, ids...)
			for i, r := range res {
				want := outcome.AlreadyClosed
				if i < 2 {
					want = outcome.Closed
				}
				if r.Outcome != want {
					t.Errorf("close %d = %+v, want %s", i, r, want)
				}
			}

			b.insert(t, 9, "UNPAID", time.Time{})
			outcomes := runConcurrently(t, 20, func(i int) (closer.Result, error) {
				res, errs := sqlcloser.CloseBatch(context.Background(), c, []string{"9", id(int64(10 + i))})
				return res[0], errs[0]
			})
			if outcomes[outcome.Closed] != 1 || outcomes[outcome.AlreadyClosed] != 19 {
				t.Errorf("outcomes = %v, want 1 closed and 19 already_closed", outcomes)
			}
			for _, n := range []int64{7, 8, 9} {
				if r, _ := b.row(t, n); r.status != "CLOSED" || r.changes != 1 {
					t.Errorf("order %d = %+v, want CLOSED, changed once", n, r)
				}
			}
		})
	}
}

// TestCloseBatchReleaseFails closes five orders in one batch, the release
// of one of which fails: the batch is rolled back and each order closes on
// its own, so that only that one fails, and closes when retried.
func TestCloseBatchReleaseFails(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			b := newBundle(t, driver)
			cfg := b.config()
			cfg.ReleaseStatement = stockBundle(t, b, 5)
			c := newCloser(t, cfg)
			b.exec(t, `ALTER TABLE `+b.table+`_stock ADD CHECK (qty <= 100)`)
			b.exec(t, `UPDATE `+b.table+`_stock SET qty = 99 WHERE sku = 'sku-3'`) // its release breaks the check
			for i := range int64(5) {
				b.insert(t, i, "UNPAID", time.Time{})
			}
			ctx := context.Background()
			res, errs := sqlcloser.CloseBatch(ctx, c, []string{"0", "1", "2", "3", "4"})
			for i := range 5 {
				if i == 3 {
					if errs[i] == nil || !closer.IsPermanent(errs[i]) || res[i].Outcome != outcome.Failed {
						t.Errorf("close 3 = %+v, %v; want failed, a permanent error", res[i], errs[i])
					}
					continue
				}
				if errs[i] != nil || res[i].Outcome != outcome.Closed {
					t.Errorf("close %d = %+v, %v; want closed", i, res[i], errs[i])
				}
				if got := b.stock(t, int64(i)); got != 3 {
					t.Errorf("order %d: stock %d, want 3", i, got)
				}
			}
			if r, _ := b.row(t, 3); r.status != "UNPAID" || r.closedAt.Valid || b.stock(t, 3) != 99 {
				t.Errorf("order 3 not rolled back: %+v, stock %d", r, b.stock(t, 3))
			}
			if n := sqlcloser.BatchesRun(c); n != 0 {
				t.Errorf("%d batches succeeded, want 0", n)
			}

			// The retry, once the stock is fixed, closes and releases once,
			// in a batch with orders already closed.
			b.exec(t, `UPDATE `+b.table+`_stock SET qty = 0 WHERE sku = 'sku-3'`)
			got := closeBatch(t, c, "3", "0", "3")
			want := []outcome.Outcome{outcome.Closed, outcome.AlreadyClosed, outcome.AlreadyClosed}
			for i := range got {
				if got[i].Outcome != want[i] {
					t.Errorf("retry %d = %+v, want %s", i, got[i], want[i])
				}
			}
			for i := range int64(5) {
				if got := b.stock(t, i); got != 3 {
					t.Errorf("after the retry, order %d: stock %d, want 3", i, got)
				}
			}
		})
	}
}

// TestCloseBatchPaymentRace is TestClosePaymentRace with the closes in
// batches of 50: each order ends closed or paid, and both sides know which.
func TestCloseBatchPaymentRace(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			c, b := setup(t, driver, nil)
			b.countChanges(t)
			const n, batch = 200, 50
			b.seed(t, n)
			pay := b.q(`UPDATE ` + b.table + ` SET status = 'PAID' WHERE id = $1 AND status = 'UNPAID'`)

			var (
				closes [n + 1]closer.Result
				paid   [n + 1]int64
				wg     sync.WaitGroup
				start  = make(chan struct{})
			)
			for first := 1; first <= n; first += batch {
				wg.Go(func() {
					ids := make([]string, batch)
					for i := range ids {
						ids[i] = id(int64(first + i))
					}
					<-start
					res := closeBatch(t, c, ids...)
					copy(closes[first:], res)
				})
			}
			for i := 1; i <= n; i++ {
				wg.Go(func() {
					<-start
					res, err := b.db.ExecContext(context.Background(), pay, i)
					if err != nil {
						t.Errorf("pay %d: %v", i, err)
						return
					}
					paid[i], _ = res.RowsAffected()
				})
			}
			close(start)
			wg.Wait()
			// A batch that failed falls back to closes on their own, which
			// would pass the check below without the batch's race.
			if sqlcloser.BatchesRun(c) == 0 {
				t.Fatal("no batch succeeded: every order closed on its own")
			}
			checkRace(t, b, closes[1:], paid[1:], 1)
		})
	}
}

// TestCloseBatchBadID closes an id that is not a valid key in a batch
// with valid ones: only its own close fails.
func TestCloseBatchBadID(t *testing.T) {
	t.Parallel()
	c, b := setup(t, sqlcloser.DriverPostgres, nil)
	b.insert(t, 1, "UNPAID", time.Time{})
	b.insert(t, 2, "UNPAID", time.Time{})
	res, errs := sqlcloser.CloseBatch(context.Background(), c, []string{"1", "abc", "2"})
	if errs[1] == nil || !closer.IsPermanent(errs[1]) || res[1].Outcome != outcome.Failed {
		t.Errorf("close abc = %+v, %v; want failed, a permanent error", res[1], errs[1])
	}
	for _, i := range []int{0, 2} {
		if errs[i] != nil || res[i].Outcome != outcome.Closed {
			t.Errorf("close %d = %+v, %v; want closed", i+1, res[i], errs[i])
		}
	}
}

// TestCloseBatches: with the default config, a close alone goes out
// alone, closes that come together go out in batches (on Postgres also as
// few as 10; on MySQL at least 16), and max_batch 1 turns batching off.
func TestCloseBatches(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			c, b := setup(t, driver, nil)
			const n = 400
			b.seed(t, n)
			if got := mustClose(t, c, "1"); got.Outcome != outcome.Closed || sqlcloser.BatchesRun(c) != 0 {
				t.Errorf("close alone = %+v after %d batches; want closed, no batch", got, sqlcloser.BatchesRun(c))
			}
			outcomes := runConcurrently(t, n/2, func(i int) (closer.Result, error) { return closeOne(t, c, id(int64(i+1))) })
			if outcomes[outcome.Closed] != n/2-1 || outcomes[outcome.AlreadyClosed] != 1 {
				t.Errorf("outcomes = %v, want %d closed, 1 already_closed", outcomes, n/2-1)
			}
			if sqlcloser.BatchesRun(c) == 0 {
				t.Error("no batch ran")
			}
			t.Logf("%d closes at once ran in %d batches and alone", n/2, sqlcloser.BatchesRun(c))

			// Rounds of 10 closes at once: while two batches run, the
			// others are ready at the same moment and go out together;
			// on MySQL, fewer than 16 close on their own.
			before := sqlcloser.BatchesRun(c)
			for round := range 20 {
				if driver == sqlcloser.DriverPostgres && sqlcloser.BatchesRun(c) > before {
					break
				}
				first := n/2 + 10*round
				outcomes := runConcurrently(t, 10, func(i int) (closer.Result, error) { return closeOne(t, c, id(int64(first+i+1))) })
				if outcomes[outcome.Closed] != 10 {
					t.Fatalf("round %d: outcomes %v, want 10 closed", round, outcomes)
				}
			}
			if ran := sqlcloser.BatchesRun(c) > before; ran != (driver == sqlcloser.DriverPostgres) {
				t.Errorf("rounds of 10 closes at once ran batches: %t", ran)
			}

			off := newCloser(t, func() sqlcloser.Config { cfg := b.config(); cfg.MaxBatch = 1; return cfg }())
			if sqlcloser.Batching(off) {
				t.Error("max_batch 1 batches")
			}
		})
	}
}

// TestCloseBatchStringKeys closes string ids in batches: an id longer than
// the key column matches no order (it is not cut short to match
// another), and two ids that the column's collation matches to one order
// close it once, for the first.
func TestCloseBatchStringKeys(t *testing.T) {
	t.Parallel()
	keys := map[string][]string{
		sqlcloser.DriverPostgres: {"varchar(3)", "char(3)", "text"},
		sqlcloser.DriverMySQL:    {"VARCHAR(3) COLLATE utf8mb4_general_ci"},
	}
	for _, driver := range drivers {
		for _, keyType := range keys[driver] {
			t.Run(driver+"/"+keyType, func(t *testing.T) {
				t.Parallel()
				b := &bundle{driver: driver, dsn: dsnOf(t, driver), closedAt: "closed_at"}
				b.db = dbtest.Open(t, driver, b.dsn)
				b.table = dbtest.Table(t, "orders")
				b.exec(t, `CREATE TABLE `+b.table+` (id `+keyType+` PRIMARY KEY, status VARCHAR(16) NOT NULL, closed_at `+
					map[string]string{sqlcloser.DriverPostgres: "timestamptz", sqlcloser.DriverMySQL: "DATETIME(6)"}[driver]+` NULL)`)
				b.drop(t, b.table)
				for _, k := range []string{"abc", "zzz"} {
					b.exec(t, `INSERT INTO `+b.table+` (id, status) VALUES ($1, 'UNPAID')`, k)
				}
				c := newCloser(t, b.config())
				if !sqlcloser.Batching(c) {
					t.Fatal("not batching")
				}
				got := closeBatch(t, c, "abcd", "zzz", "abcdef")
				want := []outcome.Outcome{outcome.NotFound, outcome.Closed, outcome.NotFound}
				if driver == sqlcloser.DriverMySQL {
					// MySQL compares "abcd" with the VARCHAR(3) "abc" as it is.
					got = append(got, closeBatch(t, c, "ABC", "abc")...)
					want = append(want, outcome.Closed, outcome.AlreadyClosed)
				}
				for i := range got {
					if got[i].Outcome != want[i] {
						t.Errorf("close %d = %+v, want %s", i, got[i], want[i])
					}
				}
				var status string
				if err := b.db.QueryRow(b.q(`SELECT status FROM `+b.table+` WHERE id = $1`), "abc").Scan(&status); err != nil {
					t.Fatal(err)
				}
				if wantStatus := map[string]string{sqlcloser.DriverPostgres: "UNPAID", sqlcloser.DriverMySQL: "CLOSED"}[driver]; status != wantStatus {
					t.Errorf("order abc is %s, want %s", status, wantStatus)
				}
			})
		}
	}
}

// TestCloseBatchReleaseBlocked closes three orders in one batch while the
// stock of one of them is locked: the batch times out and is rolled back,
// the two others close on their own, the blocked one fails with a
// retryable error, and closes once retried.
func TestCloseBatchReleaseBlocked(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			b := newBundle(t, driver)
			cfg := b.config()
			cfg.ReleaseStatement = stockBundle(t, b, 3)
			cfg.StatementTimeout = 300 * time.Millisecond
			// Each release then reads and locks the rows of its order
			// only, as in a real schema: on MySQL a release scanning
			// every item would wait for sku-1 too, batched or not.
			b.exec(t, `CREATE INDEX `+b.table+`_io ON `+b.table+`_items (order_id)`)
			c := newCloser(t, cfg)
			for i := range int64(3) {
				b.insert(t, i, "UNPAID", time.Time{})
			}
			ctx := context.Background()
			lock, err := b.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = lock.Rollback() }()
			if _, err := lock.ExecContext(ctx, b.q(`UPDATE `+b.table+`_stock SET qty = qty WHERE sku = $1`), "sku-1"); err != nil {
				t.Fatal(err)
			}
			res, errs := sqlcloser.CloseBatch(ctx, c, []string{"0", "1", "2"})
			if errs[1] == nil || closer.IsPermanent(errs[1]) || res[1].Outcome != outcome.Failed {
				t.Errorf("close 1 = %+v, %v; want failed, a retryable error", res[1], errs[1])
			}
			for _, i := range []int{0, 2} {
				if errs[i] != nil || res[i].Outcome != outcome.Closed {
					t.Errorf("close %d = %+v, %v; want closed", i, res[i], errs[i])
				}
			}
			if err := lock.Rollback(); err != nil {
				t.Fatal(err)
			}
			// MySQL rolls the close back when it notices the connection
			// the driver closed; wait for it, bounded.
			waitFor(t, 10*time.Second, func() bool {
				r, _ := b.row(t, 1)
				return r.status == "UNPAID" && !r.closedAt.Valid
			}, "close 1 rolled back")
			if got := closeBatch(t, c, "1", "0"); got[0].Outcome != outcome.Closed || got[1].Outcome != outcome.AlreadyClosed {
				t.Errorf("retry = %+v, want closed, already_closed", got)
			}
			for i := range int64(3) {
				if got := b.stock(t, i); got != 3 {
					t.Errorf("order %d: stock %d, want 3", i, got)
				}
			}
		})
	}
}
