package sqlcloser_test

import (
	"bytes"
	"context"
	"errors"
	"io"
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

// freezer is a loopback TCP proxy to a database that, once a client sends
// bytes containing trigger, stops passing anything either way on that
// connection and leaves it open: the database host went quiet (a network
// partition, a paused VM, a failover to another address) in the middle of
// a statement, and nothing ever answers or resets the connection.
type freezer struct {
	l       net.Listener
	target  string
	trigger []byte

	mu     sync.Mutex
	frozen int
	conns  []net.Conn
}

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
		freeze := make(chan struct{})
		var once sync.Once
		go func() { // client to server, watching for the trigger
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 && bytes.Contains(buf[:n], f.trigger) {
					once.Do(func() {
						f.mu.Lock()
						f.frozen++
						f.mu.Unlock()
						close(freeze)
					})
					return // the trigger is never delivered; nothing more is read
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
		go func() { // server to client, until frozen
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				select {
				case <-freeze:
					return
				default:
				}
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					if !errors.Is(err, io.EOF) {
						c.Close()
					}
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
