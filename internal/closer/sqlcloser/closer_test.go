package sqlcloser_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/dbtest"
	"github.com/hourglass/hourglass/internal/testutil/poll"
)

func TestClose(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// cfg adjusts the Config (and the table, before it is seeded).
		cfg func(*sqlcloser.Config, *bundle)
		// seed is the order's status; "" means no order.
		seed string
		// want are the results of closing the order, one close after the
		// other.
		want []closer.Result
		// wantStatus is the status afterwards; wantClosedAt whether
		// closed_at is set.
		wantStatus   string
		wantClosedAt bool
	}{
		{
			name:         "unpaid is closed",
			seed:         "UNPAID",
			want:         []closer.Result{{Outcome: outcome.Closed}},
			wantStatus:   "CLOSED",
			wantClosedAt: true,
		},
		{
			name:         "second close is already closed",
			seed:         "UNPAID",
			want:         []closer.Result{{Outcome: outcome.Closed}, {Outcome: outcome.AlreadyClosed}, {Outcome: outcome.AlreadyClosed}},
			wantStatus:   "CLOSED",
			wantClosedAt: true,
		},
		{
			name:       "paid is skipped and unchanged",
			seed:       "PAID",
			want:       []closer.Result{{Outcome: outcome.Skipped, Detail: "PAID"}, {Outcome: outcome.Skipped, Detail: "PAID"}},
			wantStatus: "PAID",
		},
		{
			name: "missing is not found",
			want: []closer.Result{{Outcome: outcome.NotFound}},
		},
		{
			name: "several open statuses",
			cfg: func(c *sqlcloser.Config, _ *bundle) {
				c.OpenStatuses = []string{"UNPAID", "PENDING"}
				c.ClosedStatus = "CANCELLED"
			},
			seed:         "PENDING",
			want:         []closer.Result{{Outcome: outcome.Closed}, {Outcome: outcome.AlreadyClosed}},
			wantStatus:   "CANCELLED",
			wantClosedAt: true,
		},
		{
			name: "status not open is skipped",
			cfg: func(c *sqlcloser.Config, _ *bundle) {
				c.OpenStatuses = []string{"PENDING"}
			},
			seed:       "UNPAID",
			want:       []closer.Result{{Outcome: outcome.Skipped, Detail: "UNPAID"}},
			wantStatus: "UNPAID",
		},
		{
			name: "no closed_at column",
			cfg: func(c *sqlcloser.Config, b *bundle) {
				b.exec(t, `ALTER TABLE `+b.table+` DROP COLUMN closed_at`)
				b.closedAt = "NULL"
				c.ClosedAtColumn = "-"
			},
			seed:       "UNPAID",
			want:       []closer.Result{{Outcome: outcome.Closed}, {Outcome: outcome.AlreadyClosed}},
			wantStatus: "CLOSED",
		},
		{
			name: "custom statements",
			cfg: func(c *sqlcloser.Config, b *bundle) {
				c.CloseStatement = b.q(`UPDATE ` + b.table + ` SET status = 'VOID', closed_at = created_at
					WHERE id = CAST($1 AS DECIMAL(20,0)) AND status = 'NEW'`)
				// The lookup reports VOID as CLOSED: the closed status.
				c.StatusStatement = b.q(`SELECT CASE status WHEN 'VOID' THEN 'CLOSED' ELSE lower(status) END
					FROM ` + b.table + ` WHERE id = CAST($1 AS DECIMAL(20,0))`)
			},
			seed:         "NEW",
			want:         []closer.Result{{Outcome: outcome.Closed}, {Outcome: outcome.AlreadyClosed}},
			wantStatus:   "VOID",
			wantClosedAt: true,
		},
		{
			name: "custom status statement of a paid order",
			cfg: func(c *sqlcloser.Config, b *bundle) {
				c.StatusStatement = b.q(`SELECT lower(status) FROM ` + b.table + ` WHERE id = $1`)
			},
			seed:       "PAID",
			want:       []closer.Result{{Outcome: outcome.Skipped, Detail: "paid"}},
			wantStatus: "PAID",
		},
		{
			name: "custom status statement without a row",
			cfg: func(c *sqlcloser.Config, b *bundle) {
				c.StatusStatement = b.q(`SELECT status FROM ` + b.table + ` WHERE id = $1 AND status <> 'PAID'`)
			},
			seed:       "PAID",
			want:       []closer.Result{{Outcome: outcome.NotFound}},
			wantStatus: "PAID",
		},
	}
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					c, b := setup(t, driver, tt.cfg)
					const order = 42
					if tt.seed != "" {
						b.insert(t, order, tt.seed, time.Time{})
						b.insert(t, order+1, tt.seed, time.Time{}) // a neighbour the close must not touch
					}
					before, _ := b.row(t, order)
					for i, want := range tt.want {
						if got := mustClose(t, c, id(order)); got != want {
							t.Fatalf("close %d: got %+v, want %+v", i+1, got, want)
						}
					}
					got, ok := b.row(t, order)
					if !ok {
						if tt.seed != "" {
							t.Fatal("order gone")
						}
						return
					}
					if got.status != tt.wantStatus {
						t.Errorf("status = %q, want %q", got.status, tt.wantStatus)
					}
					if got.closedAt.Valid != tt.wantClosedAt {
						t.Errorf("closed_at = %v, want set = %v", got.closedAt, tt.wantClosedAt)
					}
					if tt.wantStatus == tt.seed && got != before {
						t.Errorf("row changed: %+v, was %+v", got, before)
					}
					if n, _ := b.row(t, order+1); n.status != tt.seed || n.closedAt.Valid {
						t.Errorf("neighbour changed: %+v", n)
					}
				})
			}
		})
	}
}

// TestCloseDuplicates delivers one close 50 times at once: the row changes
// once.
func TestCloseDuplicates(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			c, b := setup(t, driver, nil)
			b.countChanges(t)
			b.insert(t, 7, "UNPAID", time.Time{})

			const n = 50
			outcomes := runConcurrently(t, n, func(int) (closer.Result, error) { return closeOne(t, c, "7") })
			if outcomes[outcome.Closed] != 1 || outcomes[outcome.AlreadyClosed] != n-1 {
				t.Errorf("outcomes = %v, want 1 closed and %d already_closed", outcomes, n-1)
			}
			first, _ := b.row(t, 7)
			if first.status != "CLOSED" || !first.closedAt.Valid || first.changes != 1 {
				t.Errorf("row = %+v, want CLOSED with closed_at, changed once", first)
			}
			if got := mustClose(t, c, "7"); got.Outcome != outcome.AlreadyClosed {
				t.Errorf("late duplicate: %+v", got)
			}
			if again, _ := b.row(t, 7); again != first {
				t.Errorf("late duplicate changed the row: %+v, was %+v", again, first)
			}
		})
	}
}

// runConcurrently runs f n times at once and counts the outcomes; an
// error fails the test.
func runConcurrently(t testing.TB, n int, f func(i int) (closer.Result, error)) map[outcome.Outcome]int {
	t.Helper()
	var (
		mu       sync.Mutex
		outcomes = map[outcome.Outcome]int{}
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	for i := range n {
		wg.Go(func() {
			<-start
			res, err := f(i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("close %d: %v", i, err)
				return
			}
			outcomes[res.Outcome]++
		})
	}
	close(start)
	wg.Wait()
	return outcomes
}

// TestClosePaymentRace runs a close and a payment of each of 200 orders at
// the same time: each order ends closed or paid, and both sides know which.
func TestClosePaymentRace(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			c, b := setup(t, driver, nil)
			b.countChanges(t)
			const n = 200
			for i := range int64(n) {
				b.insert(t, i, "UNPAID", time.Time{})
			}
			pay := b.q(`UPDATE ` + b.table + ` SET status = 'PAID' WHERE id = $1 AND status = 'UNPAID'`)

			var (
				closes [n]closer.Result
				paid   [n]int64
				wg     sync.WaitGroup
				start  = make(chan struct{})
			)
			for i := range n {
				wg.Go(func() {
					<-start
					res, err := closeOne(t, c, id(int64(i)))
					if err != nil {
						t.Errorf("close %d: %v", i, err)
					}
					closes[i] = res
				})
				wg.Go(func() {
					<-start
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					res, err := b.db.ExecContext(ctx, pay, i)
					if err != nil {
						t.Errorf("pay %d: %v", i, err)
						return
					}
					paid[i], _ = res.RowsAffected()
				})
			}
			close(start)
			wg.Wait()

			checkRace(t, b, closes[:], paid[:], 0)
		})
	}
}

// checkRace checks the orders first, first+1, ... after a close and a
// payment of each ran at the same time: closes are their outcomes, paid
// the rows each payment changed. Each order ends closed or paid, changed
// once, and both sides know which.
func checkRace(t *testing.T, b *bundle, closes []closer.Result, paid []int64, first int64) {
	t.Helper()
	var nClosed, nPaid int
	for i := range closes {
		order := first + int64(i)
		r, _ := b.row(t, order)
		switch r.status {
		case "CLOSED":
			nClosed++
			if closes[i].Outcome != outcome.Closed || paid[i] != 0 || !r.closedAt.Valid {
				t.Errorf("order %d CLOSED: close %+v, payment changed %d rows, closed_at %v", order, closes[i], paid[i], r.closedAt)
			}
		case "PAID":
			nPaid++
			want := closer.Result{Outcome: outcome.Skipped, Detail: "PAID"}
			if closes[i] != want || paid[i] != 1 || r.closedAt.Valid {
				t.Errorf("order %d PAID: close %+v, payment changed %d rows, closed_at %v", order, closes[i], paid[i], r.closedAt)
			}
		default:
			t.Errorf("order %d is %q", order, r.status)
		}
		if r.changes != 1 {
			t.Errorf("order %d changed %d times", order, r.changes)
		}
	}
	t.Logf("%d closed, %d paid", nClosed, nPaid)
}

// stockBundle adds order items and stock: order i holds 3 of sku-i, and
// the release statement returns them.
func stockBundle(t testing.TB, b *bundle, orders int64) (release string) {
	t.Helper()
	items, stock := b.table+"_items", b.table+"_stock"
	b.exec(t, `CREATE TABLE `+items+` (order_id BIGINT NOT NULL, sku VARCHAR(32) NOT NULL, qty INT NOT NULL)`)
	b.drop(t, items)
	b.exec(t, `CREATE TABLE `+stock+` (sku VARCHAR(32) PRIMARY KEY, qty INT NOT NULL)`)
	b.drop(t, stock)
	for i := range orders {
		b.exec(t, `INSERT INTO `+items+` VALUES ($1, $2, 3)`, i, "sku-"+id(i))
		b.exec(t, `INSERT INTO `+stock+` VALUES ($1, 0)`, "sku-"+id(i))
	}
	if b.driver == sqlcloser.DriverMySQL {
		return `UPDATE ` + stock + ` s JOIN ` + items + ` i ON i.sku = s.sku
			SET s.qty = s.qty + i.qty WHERE i.order_id = ?`
	}
	return `UPDATE ` + stock + ` s SET qty = s.qty + i.qty FROM ` + items + ` i
		WHERE i.order_id = $1 AND i.sku = s.sku`
}

func (b *bundle) stock(t testing.TB, order int64) int {
	t.Helper()
	var qty int
	if err := b.db.QueryRow(b.q(`SELECT qty FROM `+b.table+`_stock WHERE sku = $1`), "sku-"+id(order)).Scan(&qty); err != nil {
		t.Fatalf("stock of order %d: %v", order, err)
	}
	return qty
}

func TestCloseRelease(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			b := newBundle(t, driver)
			const orders = 10
			cfg := b.config()
			cfg.ReleaseStatement = stockBundle(t, b, orders)
			c := newCloser(t, cfg)
			for i := range int64(orders) {
				status := "UNPAID"
				if i == 0 {
					status = "PAID"
				}
				b.insert(t, i, status, time.Time{})
			}

			// Ten duplicates of each close at once.
			outcomes := runConcurrently(t, 10*orders, func(i int) (closer.Result, error) {
				return closeOne(t, c, id(int64(i%orders)))
			})
			want := map[outcome.Outcome]int{outcome.Closed: orders - 1, outcome.AlreadyClosed: 9 * (orders - 1), outcome.Skipped: 10}
			if len(outcomes) != len(want) {
				t.Errorf("outcomes = %v, want %v", outcomes, want)
			}
			for o, n := range want {
				if outcomes[o] != n {
					t.Errorf("outcomes = %v, want %v", outcomes, want)
					break
				}
			}
			for i := range int64(orders) {
				wantQty := 3
				if i == 0 {
					wantQty = 0 // paid: nothing released
				}
				if got := b.stock(t, i); got != wantQty {
					t.Errorf("order %d: stock %d, want %d", i, got, wantQty)
				}
			}
		})
	}
}

func TestCloseReleaseFails(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()

			t.Run("permanent", func(t *testing.T) {
				b := newBundle(t, driver)
				cfg := b.config()
				cfg.ReleaseStatement = b.q(`UPDATE ` + b.table + `_nothere SET qty = qty + 1 WHERE order_id = $1`)
				c := newCloser(t, cfg)
				b.insert(t, 1, "UNPAID", time.Time{})
				res, err := closeOne(t, c, "1")
				if err == nil || !closer.IsPermanent(err) || res.Outcome != outcome.Failed {
					t.Fatalf("Close = %+v, %v; want failed, a permanent error", res, err)
				}
				if !contains(err.Error(), `close "1"`, "release") {
					t.Errorf("error %q does not name the operation and the id", err)
				}
				if r, _ := b.row(t, 1); r.status != "UNPAID" || r.closedAt.Valid {
					t.Errorf("close not rolled back: %+v", r)
				}
			})

			t.Run("retryable", func(t *testing.T) {
				// The stock row is locked by a transaction of ours: the
				// release waits past statement_timeout.
				b := newBundle(t, driver)
				cfg := b.config()
				cfg.ReleaseStatement = stockBundle(t, b, 1)
				cfg.StatementTimeout = 300 * time.Millisecond
				c := newCloser(t, cfg)
				b.insert(t, 0, "UNPAID", time.Time{})

				ctx := context.Background()
				lock, err := b.db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = lock.Rollback() }()
				if _, err := lock.ExecContext(ctx, b.q(`UPDATE `+b.table+`_stock SET qty = qty WHERE sku = $1`), "sku-0"); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				res, err := closeOne(t, c, "0")
				took := time.Since(start)
				if err == nil || closer.IsPermanent(err) || res.Outcome != outcome.Failed {
					t.Fatalf("Close = %+v, %v; want failed, a retryable error", res, err)
				}
				if took > 5*time.Second {
					t.Errorf("Close took %s with statement_timeout 300ms", took)
				}
				t.Logf("blocked release: %v after %s", err, took)
				if err := lock.Rollback(); err != nil {
					t.Fatal(err)
				}
				// MySQL rolls the close back when it notices the
				// connection the driver closed; wait for it, bounded.
				waitFor(t, 10*time.Second, func() bool {
					r, _ := b.row(t, 0)
					return r.status == "UNPAID" && !r.closedAt.Valid
				}, "close rolled back")
				if got := b.stock(t, 0); got != 0 {
					t.Errorf("stock %d after a failed release, want 0", got)
				}
				// The retry closes and releases once.
				if got := mustClose(t, c, "0"); got.Outcome != outcome.Closed {
					t.Errorf("retry: %+v", got)
				}
				if got := b.stock(t, 0); got != 3 {
					t.Errorf("stock %d after the retry, want 3", got)
				}
			})
		})
	}
}

// waitFor polls cond until it holds or limit passes.
func waitFor(t testing.TB, limit time.Duration, cond func() bool, what string) {
	t.Helper()
	poll.Until(t, limit, what, cond, nil)
}

func TestCloseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  func(*sqlcloser.Config, *bundle)
		id   string
		// wantPermanent: the error is marked closer.Permanent.
		wantPermanent bool
		wantIn        []string // substrings of the error
	}{
		{
			name:          "id not an integer",
			id:            "12abc",
			wantPermanent: true,
			wantIn:        []string{`close "12abc"`},
		},
		{
			name:          "id out of range",
			id:            "99999999999999999999",
			wantPermanent: true,
			wantIn:        []string{`close "99999999999999999999"`},
		},
		{
			name:          "empty id",
			id:            "",
			wantPermanent: true,
		},
		{
			name:          "table does not exist",
			cfg:           func(c *sqlcloser.Config, b *bundle) { c.Table = b.table + "_nothere" },
			id:            "1",
			wantPermanent: true,
			wantIn:        []string{`close "1"`, "_nothere"},
		},
		{
			name:          "column does not exist",
			cfg:           func(c *sqlcloser.Config, _ *bundle) { c.StatusColumn = "state" },
			id:            "1",
			wantPermanent: true,
		},
		{
			name: "syntax error in a custom statement",
			cfg: func(c *sqlcloser.Config, b *bundle) {
				c.CloseStatement = b.q(`UPDATE ` + b.table + ` SET status = 'CLOSED' WHERE WHERE id = $1`)
			},
			id:            "1",
			wantPermanent: true,
		},
		{
			name: "custom statement changing two rows",
			cfg: func(c *sqlcloser.Config, b *bundle) {
				c.CloseStatement = b.q(`UPDATE ` + b.table + ` SET status = 'CLOSED' WHERE id <> CAST($1 AS DECIMAL(20,0))`)
			},
			id:            "5",
			wantPermanent: true,
			wantIn:        []string{"changed 2 rows"},
		},
	}
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					c, b := setup(t, driver, tt.cfg)
					b.insert(t, 1, "UNPAID", time.Time{})
					b.insert(t, 2, "UNPAID", time.Time{})
					res, err := closeOne(t, c, tt.id)
					if err == nil {
						t.Fatalf("Close = %+v, want an error", res)
					}
					t.Logf("%v", err)
					if res.Outcome != outcome.Failed {
						t.Errorf("outcome %q, want failed", res.Outcome)
					}
					if got := closer.IsPermanent(err); got != tt.wantPermanent {
						t.Errorf("permanent = %v, want %v", got, tt.wantPermanent)
					}
					if !contains(err.Error(), tt.wantIn...) {
						t.Errorf("error %q does not hold %q", err, tt.wantIn)
					}
					for _, n := range []int64{1, 2} {
						if r, _ := b.row(t, n); r.status != "UNPAID" {
							t.Errorf("order %d is %q", n, r.status)
						}
					}
				})
			}

			t.Run("context canceled", func(t *testing.T) {
				c, b := setup(t, driver, nil)
				b.insert(t, 1, "UNPAID", time.Time{})
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				res, err := c.Close(ctx, closer.Task{ID: "1"})
				if !errors.Is(err, context.Canceled) || closer.IsPermanent(err) || res.Outcome != outcome.Failed {
					t.Fatalf("Close = %+v, %v; want failed, context.Canceled", res, err)
				}
			})
		})
	}
}

// TestCloseOutage stops the database under a Closer: closes fail promptly
// with retryable errors, and work again on the same Closer once the
// database is back.
func TestCloseOutage(t *testing.T) {
	t.Parallel()
	pg := dbtest.StartPostgres(t)
	cfg := sqlcloser.Config{Driver: sqlcloser.DriverPostgres, StatementTimeout: 2 * time.Second}
	cfg.DSN.Value = pg.DSN
	b := &bundle{driver: sqlcloser.DriverPostgres, dsn: pg.DSN, table: "orders", closedAt: "closed_at"}
	b.db = dbtest.Open(t, b.driver, b.dsn)
	b.exec(t, `CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
		closed_at timestamptz, changes int NOT NULL DEFAULT 0)`)
	for i := range int64(20) {
		b.insert(t, i, "UNPAID", time.Time{})
	}
	c := newCloser(t, cfg)
	// Fill the pool with connections that the outage will break.
	runConcurrently(t, 5, func(i int) (closer.Result, error) { return closeOne(t, c, id(int64(i))) })

	pg.Stop(t)
	for i := int64(5); i < 10; i++ {
		start := time.Now()
		res, err := closeOne(t, c, id(i))
		took := time.Since(start)
		if err == nil || closer.IsPermanent(err) || res.Outcome != outcome.Failed {
			t.Fatalf("close %d while down = %+v, %v; want failed, a retryable error", i, res, err)
		}
		if took > 3*cfg.StatementTimeout {
			t.Errorf("close %d while down took %s", i, took)
		}
		t.Logf("down: %v (%s)", err, took.Round(time.Millisecond))
	}

	pg.Start(t)
	for i := int64(10); i < 15; i++ {
		if res := mustClose(t, c, id(i)); res.Outcome != outcome.Closed {
			t.Fatalf("close %d after restart = %+v", i, res)
		}
	}

	// A restart while idle leaves the pool's connections stale: the next
	// close still works.
	runConcurrently(t, 5, func(i int) (closer.Result, error) { return closeOne(t, c, id(int64(i+15))) })
	pg.Stop(t)
	pg.Start(t)
	if res := mustClose(t, c, "0"); res.Outcome != outcome.AlreadyClosed {
		t.Fatalf("close 0 after an idle restart = %+v", res)
	}

	b.db = dbtest.Open(t, b.driver, b.dsn) // the old pool's connections are stale
	for i := range int64(20) {
		want := "CLOSED"
		if i >= 5 && i < 10 {
			want = "UNPAID" // the closes while down failed
		}
		if r, _ := b.row(t, i); r.status != want {
			t.Errorf("order %d is %q, want %q", i, r.status, want)
		}
	}
}

// seed inserts the unpaid orders 1 to n.
func (b *bundle) seed(t testing.TB, n int) {
	t.Helper()
	if b.driver == sqlcloser.DriverPostgres {
		b.exec(t, `INSERT INTO `+b.table+` (id, status) SELECT g, 'UNPAID' FROM generate_series(1, $1::int) g`, n)
		return
	}
	const batch = 1000
	for first := 1; first <= n; first += batch {
		var sb strings.Builder
		sb.WriteString(`INSERT INTO ` + b.table + ` (id, status) VALUES `)
		for i := first; i < first+batch && i <= n; i++ {
			if i > first {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "(%d, 'UNPAID')", i)
		}
		b.exec(t, sb.String())
	}
}

// TestCloseAfterServerEndsConnections has Postgres end the closer's pooled
// connections (as a restart, a failover or an idle-session timeout does)
// right after they were used: the next closes must find the connections dead
// before using them and work on new ones, not fail with "unexpected EOF".
func TestCloseAfterServerEndsConnections(t *testing.T) {
	t.Parallel()
	b := newBundle(t, sqlcloser.DriverPostgres)
	app := strings.ReplaceAll(b.table, ".", "_")
	cfg := b.config()
	cfg.DSN.Value = withParam(b.dsn, "application_name", app)
	for i := range int64(20) {
		b.insert(t, i, "UNPAID", time.Time{})
	}
	c := newCloser(t, cfg)
	for round := range int64(4) {
		// Fill the pool with connections used just now.
		runConcurrently(t, 5, func(i int) (closer.Result, error) { return closeOne(t, c, id(round*5+int64(i))) })
		var ended int
		if err := b.db.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&ended); err != nil {
			t.Fatal(err)
		}
		if ended == 0 {
			t.Fatalf("round %d: no connection of %s to end", round, app)
		}
		poll.Until(t, 10*time.Second, "the server to end the closer's connections", func() bool {
			var left int
			return b.db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&left) == nil && left == 0
		}, nil)
		// Every order of this round is closed: a close on a dead
		// connection would fail instead of reporting already_closed.
		for i := range int64(5) {
			res, err := closeOne(t, c, id(round*5+i))
			if err != nil || res.Outcome != outcome.AlreadyClosed {
				t.Fatalf("round %d: close %d on a pool whose connections the server ended = %+v, %v; want already_closed", round, round*5+i, res, err)
			}
		}
	}
}

// withParam adds a connection parameter to a Postgres DSN in URL or
// keyword/value form.
func withParam(dsn, key, value string) string {
	switch {
	case !strings.Contains(dsn, "://"):
		return dsn + " " + key + "=" + value
	case strings.Contains(dsn, "?"):
		return dsn + "&" + key + "=" + value
	}
	return dsn + "?" + key + "=" + value
}
