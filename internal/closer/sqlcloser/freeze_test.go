package sqlcloser_test

import (
	"bytes"
	"context"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/outcome"
)

// freezer is a loopback TCP proxy to a database that acts when a client
// sends bytes containing trigger: by default it stops passing anything
// either way on that connection and leaves it open, as when the database
// host goes quiet (a network partition, a paused VM, a failover to
// another address) in the middle of a statement, and nothing ever answers
// or resets the connection. With mode cutBefore it ends the connection
// instead of passing the trigger on; with cutAfter it passes the trigger
// on, swallows the server's answer and then ends the connection (the
// client cannot tell whether a COMMIT committed). With most set, only the
// first most triggers act.
type freezer struct {
	l       net.Listener
	target  string
	trigger []byte
	mode    freezeMode
	most    int

	mu     sync.Mutex
	frozen int // triggers acted on
	conns  []net.Conn
}

type freezeMode int

const (
	freeze freezeMode = iota
	cutBefore
	cutAfter
)

func newFreezer(t testing.TB, target string, trigger []byte) *freezer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{l: l, target: target, trigger: trigger}
	go f.serve()
	t.Cleanup(func() { l.Close(); f.cut() })
	return f
}

// cut closes every connection through f. Call it in a t.Cleanup
// registered after the Closer's, so that it runs before the Closer stops.
func (f *freezer) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
}

func (f *freezer) addr() string { return f.l.Addr().String() }

func (f *freezer) frozenConns() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frozen
}

// act reports whether a trigger is to be acted on, and counts it.
func (f *freezer) act() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.most > 0 && f.frozen >= f.most {
		return false
	}
	f.frozen++
	return true
}

func (f *freezer) serve() {
	for {
		c, err := f.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", f.target)
		if err != nil {
			c.Close()
			continue
		}
		f.mu.Lock()
		f.conns = append(f.conns, c, s)
		f.mu.Unlock()
		triggered := make(chan struct{})
		go func() { // client to server, watching for the trigger
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 && bytes.Contains(buf[:n], f.trigger) && f.act() {
					switch f.mode {
					case cutBefore:
						c.Close()
						s.Close()
					case cutAfter:
						close(triggered)
						_, _ = s.Write(buf[:n])
						return
					default:
						close(triggered)
					}
					return // nothing more is read
				}
				if n > 0 {
					if _, werr := s.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					s.Close()
					return
				}
			}
		}()
		go func() { // server to client, until triggered
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				select {
				case <-triggered:
					if f.mode == cutAfter { // the answer is swallowed
						c.Close()
						s.Close()
					}
					return
				default:
				}
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					c.Close()
					return
				}
			}
		}()
	}
}

// throughFreezer returns dsn with its server's address replaced by a
// freezer's that freezes a connection when it sends trigger.
func throughFreezer(t testing.TB, driver, dsn string, trigger []byte) (string, *freezer) {
	t.Helper()
	if driver == sqlcloser.DriverMySQL {
		mc, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		f := newFreezer(t, mc.Addr, trigger)
		mc.Addr = f.addr()
		return mc.FormatDSN(), f
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Fatalf("a Postgres DSN in URL form is needed: %q (%v)", dsn, err)
	}
	f := newFreezer(t, u.Host, trigger)
	u.Host = f.addr()
	return u.String(), f
}

// commitTrigger is a COMMIT as each driver sends it: MySQL COM_QUERY (3)
// "COMMIT", a Postgres simple query "commit".
var commitTrigger = map[string][]byte{
	sqlcloser.DriverMySQL:    []byte("\x03COMMIT"),
	sqlcloser.DriverPostgres: []byte("commit\x00"),
}

// TestCloseCommitHangs: the database stops answering right when a close
// sends its COMMIT (a release statement makes the close a transaction).
// The close must still end within its context, with a retryable error, as
// every other statement of a close does; it must not wait for the TCP
// stack to give up on the connection (about 15 minutes), holding the
// canceller's close slot and the record's offset all that time.
func TestCloseCommitHangs(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			b := newBundle(t, driver)
			cfg := b.config()
			cfg.ReleaseStatement = stockBundle(t, b, 1)
			cfg.StatementTimeout = 500 * time.Millisecond
			dsn, f := throughFreezer(t, driver, b.dsn, commitTrigger[driver])
			cfg.DSN.Value = dsn
			c := newCloser(t, cfg)
			t.Cleanup(f.cut)
			b.insert(t, 0, "UNPAID", time.Time{})

			const closeTimeout = 2 * time.Second
			type result struct {
				res closer.Result
				err error
			}
			done := make(chan result, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
				defer cancel()
				res, err := c.Close(ctx, closer.Task{ID: "0", Kind: "order-timeout", Attempt: 1})
				done <- result{res, err}
			}()
			select {
			case r := <-done:
				if f.frozenConns() != 1 {
					t.Fatalf("the COMMIT was not sent (close = %+v, %v)", r.res, r.err)
				}
				if r.err == nil || closer.IsPermanent(r.err) || r.res.Outcome != outcome.Failed {
					t.Errorf("close whose COMMIT got no answer = %+v, %v; want failed, a retryable error", r.res, r.err)
				}
				t.Logf("close = %v", r.err)
			case <-time.After(closeTimeout + 10*time.Second):
				t.Fatalf("close still running %v after its %v context ended: its COMMIT waits for an answer that never comes", 10*time.Second, closeTimeout)
			}
		})
	}
}

// TestCloseFailedHoldsNoLock: a close whose release statement waits for a
// lock (the stock row is held by another transaction) fails after its
// statement timeout, and holds nothing after it returned: the order's
// payment, which comes next, is not kept waiting by a transaction that the
// closer has already given up. On MySQL the server goes on running a
// statement whose connection the driver closed, for up to
// innodb_lock_wait_timeout (50s by default), with the order row locked by
// the close's update.
func TestCloseFailedHoldsNoLock(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			b := newBundle(t, driver)
			cfg := b.config()
			cfg.ReleaseStatement = stockBundle(t, b, 1)
			cfg.StatementTimeout = 500 * time.Millisecond
			b.exec(t, `CREATE INDEX `+b.table+`_io ON `+b.table+`_items (order_id)`)
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
			res, err := closeOne(t, c, "0")
			if err == nil || closer.IsPermanent(err) || res.Outcome != outcome.Failed {
				t.Fatalf("close while the stock is locked = %+v, %v; want failed, a retryable error", res, err)
			}

			// The customer pays, while the stock stays locked, waiting at
			// most 5s for the order row (the server alone would hold it 50s).
			conn, err := b.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			setWait := `SET SESSION innodb_lock_wait_timeout = 5`
			if driver == sqlcloser.DriverPostgres {
				setWait = `SET lock_timeout = '5s'`
			}
			if _, err := conn.ExecContext(ctx, setWait); err != nil {
				t.Fatal(err)
			}
			pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			if _, err := conn.ExecContext(pctx, b.q(`UPDATE `+b.table+` SET status = 'PAID' WHERE id = $1 AND status = 'UNPAID'`), 0); err != nil {
				t.Errorf("payment after the close failed: %v; the failed close still holds the order row", err)
			}
			if err := lock.Rollback(); err != nil {
				t.Fatal(err)
			}
			if r, _ := b.row(t, 0); r.status != "PAID" {
				t.Errorf("order 0 is %q, want PAID", r.status)
			}
		})
	}
}

// TestCloseCommitCut ends the connection of a close's COMMIT, once, before
// the COMMIT reaches the server (nothing committed) or after the server
// answered it (committed, but the closer cannot know): a close alone
// fails with a retryable error and its retry reports what the first did;
// a batch runs again order by order and reports each order as it is.
// Either way each order is closed, and its stock released, exactly once.
func TestCloseCommitCut(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		for _, mode := range []freezeMode{cutBefore, cutAfter} {
			name := map[freezeMode]string{cutBefore: "before", cutAfter: "after"}[mode]
			t.Run(driver+"/"+name, func(t *testing.T) {
				t.Parallel()
				b := newBundle(t, driver)
				cfg := b.config()
				cfg.ReleaseStatement = stockBundle(t, b, 4)
				cfg.StatementTimeout = 2 * time.Second
				b.countChanges(t)
				dsn, f := throughFreezer(t, driver, b.dsn, commitTrigger[driver])
				cfg.DSN.Value = dsn
				c := newCloser(t, cfg)
				t.Cleanup(f.cut)
				for i := range int64(4) {
					b.insert(t, i, "UNPAID", time.Time{})
				}
				want := map[freezeMode]outcome.Outcome{cutBefore: outcome.Closed, cutAfter: outcome.AlreadyClosed}[mode]

				// Alone: the first close fails, its retry finds what it did.
				f.mu.Lock()
				f.mode, f.most = mode, 1
				f.mu.Unlock()
				if res, err := closeOne(t, c, "0"); err == nil || closer.IsPermanent(err) || res.Outcome != outcome.Failed {
					t.Fatalf("close 0 whose COMMIT was cut = %+v, %v; want failed, a retryable error", res, err)
				}
				if got := mustClose(t, c, "0"); got.Outcome != want {
					t.Errorf("retry of close 0 = %+v, want %s", got, want)
				}

				// A batch: it runs again order by order.
				f.mu.Lock()
				f.most = 2
				f.mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res, errs := sqlcloser.CloseBatch(ctx, c, []string{"1", "2", "3"})
				if f.frozenConns() != 2 {
					t.Fatalf("%d COMMITs cut, want 2", f.frozenConns())
				}
				for i := range res {
					if errs[i] != nil || res[i].Outcome != want {
						t.Errorf("close %d in a batch whose COMMIT was cut = %+v, %v; want %s", i+1, res[i], errs[i], want)
					}
				}
				for i := range int64(4) {
					if r, _ := b.row(t, i); r.status != "CLOSED" || r.changes != 1 {
						t.Errorf("order %d = %+v, want closed once", i, r)
					}
					if got := b.stock(t, i); got != 3 {
						t.Errorf("order %d: stock %d, want 3", i, got)
					}
				}
			})
		}
	}
}
