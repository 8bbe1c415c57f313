package e2e

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/dbtest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// countingCloser counts the closes it passes on.
type countingCloser struct {
	closer.Closer
	calls atomic.Int64
}

func (c *countingCloser) Close(ctx context.Context, t closer.Task) (closer.Result, error) {
	c.calls.Add(1)
	return c.Closer.Close(ctx, t)
}

// TestDatabaseOutage runs the whole pipeline against a real Postgres that
// is stopped while orders fall due and started again a few seconds later.
// The failed closes must be rescheduled through the delay tiers with
// backoff (a bounded number of attempts, no busy loop), every unpaid order
// must end up closed exactly once and every paid one untouched, and the
// poison records must reach the dead-letter topic with their reasons.
func TestDatabaseOutage(t *testing.T) {
	const orders = 120
	pg := dbtest.StartPostgres(t)
	db := dbtest.Open(t, "postgres", pg.DSN)
	if _, err := db.Exec(`CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL, closed_at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	paid := func(i int) bool { return i%5 == 0 }
	for i := range orders {
		status := "UNPAID"
		if paid(i) {
			status = "PAID"
		}
		if _, err := db.Exec(`INSERT INTO orders (id, status) VALUES ($1, $2)`, i, status); err != nil {
			t.Fatal(err)
		}
	}

	p := newPipe(t, "outage", "200ms,1s", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sc, err := sqlcloser.New(ctx, sqlcloser.Config{Driver: "postgres", DSN: credential.Secret{Value: pg.DSN}, StatementTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sc.Stop() }()
	counted := &countingCloser{Closer: sc}
	cn, err := canceller.New(canceller.Config{
		Prefix: p.prefix, Group: p.cancellerGroup(), Tiers: p.table, Instance: "e2e", SessionTimeout: sessionTimeout,
		MaxInFlight: 20, CloseTimeout: 2 * time.Second, ShutdownTimeout: 10 * time.Second,
		RetryBackoff: 200 * time.Millisecond, RetryBackoffMax: time.Second, MaxAttempts: 50,
	}, canceller.Options{Kafka: p.kafkaOpts(), Closer: counted, Logger: testLogger(t, "canceller")})
	if err != nil {
		t.Fatal(err)
	}
	stopRouter := start(t, "router", p.newRouter("router").Run)
	stopCanceller := start(t, "canceller", cn.Run)
	col := p.collectOutcomes()
	if err := p.waitAssigned(ctx, 1); err != nil {
		t.Fatal(err)
	}

	// The database goes away, then every order and two poison records are
	// scheduled, due within a second.
	pg.Stop(t)
	down := time.Now()
	var cpu0 syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(p.seeds...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var recs []*kgo.Record
	for i := range orders {
		r, err := tiers.BuildRecord(p.prefix, p.table, time.Now(), tiers.Task{
			ID: strconv.Itoa(i), Due: time.Now().Add(time.Duration(i%10) * 100 * time.Millisecond),
		})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	// Not an integer: the database rejects it for good once it is back.
	poison, _ := tiers.BuildRecord(p.prefix, p.table, time.Now(), tiers.Task{ID: "not-a-number", Due: time.Now()})
	// No due time: the router rejects it.
	malformed := &kgo.Record{Topic: p.delayTopic(200 * time.Millisecond), Key: []byte("no-due")}
	recs = append(recs, poison, malformed)
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Closes fail while the database is down: wait until the orders have
	// failed five times, and so gone through the delay tiers five times.
	if err := waitFor(ctx, t, func() bool { return col.retries() >= 5*orders }); err != nil {
		t.Fatalf("%d retries while the database is down, want %d: %v", col.retries(), 5*orders, err)
	}
	outage := time.Since(down)
	callsDown := counted.calls.Load()
	var cpu1 syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1); err != nil {
		t.Fatal(err)
	}
	pg.Start(t)
	up := time.Now()

	// Every order gets its final outcome once the database is back (the
	// poison record fails, which is not final).
	if err := waitFor(ctx, t, func() bool { return col.finals() == orders }); err != nil {
		t.Fatalf("%d of %d orders have a final outcome %v after the database came back: %v", col.finals(), orders, time.Since(up), err)
	}
	recovered := time.Since(up)
	if err := waitFor(ctx, t, func() bool {
		n, _ := p.endOffsets(ctx, p.dlqTopic())
		return n >= 2
	}); err != nil {
		t.Fatalf("poison records: %v", err)
	}
	if err := cmpOr(stopRouter(), stopCanceller()); err != nil {
		t.Fatal(err)
	}

	// The database: every unpaid order closed, every paid one untouched.
	rows, err := db.QueryContext(ctx, `SELECT id, status, closed_at FROM orders ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id       int
			status   string
			closedAt sql.NullTime
		)
		if err := rows.Scan(&id, &status, &closedAt); err != nil {
			t.Fatal(err)
		}
		want := "CLOSED"
		if paid(id) {
			want = "PAID"
		}
		if status != want || closedAt.Valid != (want == "CLOSED") {
			t.Errorf("order %d: %s (closed_at %v), want %s", id, status, closedAt, want)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	// Outcomes: exactly one closed per unpaid order, skipped per paid one;
	// retries before them, all of them while the database was down.
	col.mu.Lock()
	retries, maxAttempt := 0, 0
	for i := range orders {
		evs := col.events[strconv.Itoa(i)]
		closed, skipped := 0, 0
		for _, e := range evs {
			switch e.Outcome {
			case "closed":
				closed++
			case "skipped":
				skipped++
			case outcome.Retry:
				retries++
			default:
				t.Errorf("order %d: outcome %+v", i, e)
			}
			maxAttempt = max(maxAttempt, e.Attempt)
			if e.Outcome != outcome.Retry && e.Attempt > 1 && e.DeadlineMs >= e.DueMs {
				t.Errorf("order %d: attempt %d due %d, not after its deadline %d", i, e.Attempt, e.DueMs, e.DeadlineMs)
			}
		}
		if paid(i) && (skipped != 1 || closed != 0) || !paid(i) && (closed != 1 || skipped != 0) {
			t.Errorf("order %d (paid %v): %d closed, %d skipped: %+v", i, paid(i), closed, skipped, evs)
		}
	}
	col.mu.Unlock()

	// The dead letters: the poison close (permanent: not an integer) and
	// the record without a due time.
	dl := readAll(t, p, p.dlqTopic())
	reasons := map[string]string{}
	for _, r := range dl {
		v, _ := tiers.Header(r.Headers, tiers.HeaderReason)
		reasons[string(r.Key)] = string(v)
	}
	if r := reasons["not-a-number"]; len(r) < 13 || r[:13] != "close_failed:" {
		t.Errorf("not-a-number dead letter reason %q, want close_failed", r)
	}
	if r := reasons["no-due"]; len(r) < 12 || r[:12] != "due_missing:" {
		t.Errorf("no-due dead letter reason %q, want due_missing", r)
	}

	// No busy loop: with backoff from 200ms doubling to 1s, an order is
	// tried at most about 1 + outage/100ms times while the database is
	// down; a loop without backoff makes thousands of attempts.
	cpu := time.Duration(cpu1.Utime.Nano()+cpu1.Stime.Nano()-cpu0.Utime.Nano()-cpu0.Stime.Nano()) * time.Nanosecond
	limit := int64(orders+1) * int64(1+outage/(100*time.Millisecond))
	if callsDown == 0 || callsDown > limit {
		t.Errorf("%d close attempts during the %v outage, want 1..%d", callsDown, outage, limit)
	}
	if retries == 0 {
		t.Error("no retry outcome: the outage did not fail any close")
	}
	t.Logf("outage %v: %d close attempts (%.1f per order), %d retries, highest attempt %d; process CPU %v during the outage (kfake, router and canceller); all %d orders final %v after the database came back",
		outage, callsDown, float64(callsDown)/float64(orders+1), retries, maxAttempt, cpu.Round(time.Millisecond), orders, recovered.Round(time.Millisecond))
}

// readAll returns every record of topic at the time of the call.
func readAll(t *testing.T, p *pipe, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := p.endOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(slices.Clone(p.seeds), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for int64(len(out)) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d of %d records", topic, len(out), n)
		}
		out = append(out, fs.Records()...)
	}
	return out
}
