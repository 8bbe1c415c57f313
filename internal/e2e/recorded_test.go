package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/recorder"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

// flakyOnce fails the first attempt of every seventh order (retryable), so
// that some tasks have two close attempts, then closes through store.
type flakyOnce struct {
	store *orderStore
	mu    sync.Mutex
	seen  map[string]bool
}

func (f *flakyOnce) Close(ctx context.Context, t closer.Task) (closer.Result, error) {
	var n int
	if _, err := fmt.Sscanf(t.ID, "recorded-%d", &n); err != nil {
		return closer.Result{}, fmt.Errorf("task id %q: %w", t.ID, err)
	}
	f.mu.Lock()
	first := !f.seen[t.ID]
	f.seen[t.ID] = true
	f.mu.Unlock()
	if n%7 == 0 && first {
		return closer.Result{}, errors.New("order store busy")
	}
	return f.store.Close(ctx, t)
}

// TestRecordedOutcomes runs router, canceller and recorder against a private
// ClickHouse that is stopped while outcomes flow and started again. In the
// end ClickHouse must count every close attempt of the run exactly once,
// with the outcome, attempt and lateness the canceller produced, and the
// report's totals must agree.
func TestRecordedOutcomes(t *testing.T) {
	const orders = 300
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, cfg, store := startClickHouse(ctx, t, "hourglass_e2e")

	p := newPipe(t, "recorded", "200ms,1s", 2)
	mem := newStore()
	cn, err := canceller.New(canceller.Config{
		Prefix: p.prefix, Group: p.cancellerGroup(), Tiers: p.table, Instance: "e2e", MaxInFlight: 8, SessionTimeout: sessionTimeout,
		RetryBackoff: 200 * time.Millisecond, RetryBackoffMax: 400 * time.Millisecond, ShutdownTimeout: 10 * time.Second,
	}, canceller.Options{Kafka: p.kafkaOpts(), Closer: &flakyOnce{store: mem, seen: map[string]bool{}}, Logger: testLogger(t, "canceller")})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := recorder.New(recorder.Config{
		Topic: p.outcomesTopic(), Group: p.prefix + "recorder", FlushInterval: 100 * time.Millisecond,
		RetryMin: 50 * time.Millisecond, RetryMax: 500 * time.Millisecond, ShutdownTimeout: 10 * time.Second, SessionTimeout: sessionTimeout,
	}, recorder.Options{Kafka: p.kafkaOpts(), Store: store, Logger: testLogger(t, "recorder")})
	if err != nil {
		t.Fatal(err)
	}
	stopRouter := start(t, "router", p.newRouter("router").Run)
	stopCanceller := start(t, "canceller", cn.Run)
	stopRecorder := start(t, "recorder", rec.Run)
	col := p.collectOutcomes()
	if err := p.waitAssigned(ctx, 1); err != nil {
		t.Fatal(err)
	}

	all := mixedOrders("recorded", p.table, orders, 4*time.Second)
	if err := p.schedule(ctx, mem, all, 10, 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// ClickHouse goes away while outcomes are still coming.
	if err := waitFor(ctx, t, func() bool { return col.seen() >= orders/3 }); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	stoppedAt := col.count()
	if err := waitFor(ctx, t, func() bool { return col.finals() == orders }); err != nil {
		t.Fatalf("%d of %d orders final while ClickHouse is down: %v", col.finals(), orders, err)
	}
	t.Logf("ClickHouse stopped after %d outcome events; %d events by the time every order was final", stoppedAt, col.count())
	srv.Start()

	// Every attempt reaches ClickHouse once the recorder catches up.
	total := col.count()
	var rows map[string]row
	if err := waitFor(ctx, t, func() bool {
		rows, err = attemptRows(ctx, store, cfg.Database)
		return err == nil && len(rows) == total
	}); err != nil {
		t.Fatalf("ClickHouse holds %d attempts, want %d (last error %v)", len(rows), total, err)
	}
	if err := cmpOr(cmpOr(stopRouter(), stopCanceller()), stopRecorder()); err != nil {
		t.Fatal(err)
	}

	col.mu.Lock()
	retries := 0
	for _, evs := range col.events {
		for _, e := range evs {
			key := fmt.Sprintf("%s[%d]@%d", e.Topic, e.Partition, e.Offset)
			r, ok := rows[key]
			switch {
			case !ok:
				t.Errorf("attempt %s of %s is not in ClickHouse", key, e.TaskID)
			case r.copies != 1:
				t.Errorf("attempt %s of %s has %d rows", key, e.TaskID, r.copies)
			case r.taskID != e.TaskID || r.outcome != string(e.Outcome) || r.attempt != e.Attempt || r.lateness != e.LatenessMs || r.dueMs != e.DueMs:
				t.Errorf("attempt %s: ClickHouse %+v, canceller %+v", key, r, e)
			}
			if e.Outcome == outcome.Retry {
				retries++
			}
		}
	}
	col.mu.Unlock()
	if want := (orders + 6) / 7; retries != want {
		t.Errorf("%d retry attempts, want %d (every seventh order fails once)", retries, want)
	}

	// The report's view agrees: every attempt once, no duplicates, and one
	// task per order.
	v, err := store.View(ctx, chstore.Window{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	tot, err := v.Totals(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Attempts != int64(total) || tot.Tasks != orders || tot.Duplicates != 0 {
		t.Errorf("report totals %+v, want %d attempts of %d tasks, no duplicates", tot, total, orders)
	}
	t.Logf("%d attempts (%d retries) of %d orders recorded once each across a ClickHouse restart", total, retries, orders)
}

// row is what ClickHouse holds for one attempt.
type row struct {
	taskID   string
	outcome  string
	attempt  int
	lateness int64
	dueMs    int64
	copies   uint64
}

// attemptRows reads every attempt of the outcomes table, by
// "topic[partition]@offset", with its first row's fields and its number of
// rows.
func attemptRows(ctx context.Context, s *chstore.Store, db string) (map[string]row, error) {
	q := "SELECT topic, `partition`, `offset`, argMin(task_id, closed_ms), argMin(outcome, closed_ms), " +
		"toInt64(argMin(attempt, closed_ms)), argMin(lateness_ms, closed_ms), argMin(due_ms, closed_ms), count() " +
		"FROM " + db + "." + chstore.OutcomesTable + " GROUP BY topic, `partition`, `offset`"
	rs, err := s.Conn().Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[string]row{}
	for rs.Next() {
		var (
			topic     string
			partition int32
			offset    int64
			r         row
			attempt   int64
		)
		if err := rs.Scan(&topic, &partition, &offset, &r.taskID, &r.outcome, &attempt, &r.lateness, &r.dueMs, &r.copies); err != nil {
			return nil, err
		}
		r.attempt = int(attempt)
		out[fmt.Sprintf("%s[%d]@%d", topic, partition, offset)] = r
	}
	return out, rs.Err()
}

// TestRecorderKilled runs `hourglass recorder` as a process with the
// default settings (but a 2 s session timeout, so that its replacement gets
// the partitions soon) against a private ClickHouse, kills it with SIGKILL
// once it has inserted events whose commit the broker refused, and starts
// another. Every close attempt of the
// run must be in ClickHouse, each with the canceller's fields; an attempt
// inserted twice (before the kill and again after it, since its batch was
// not committed) counts once in the report, and once ClickHouse has merged
// the table each attempt has one row.
func TestRecorderKilled(t *testing.T) {
	const orders = 600
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, cfg, store := startClickHouse(ctx, t, "hourglass_e2e_kill")

	p := newPipe(t, "recorderkill", "200ms,1s", 2)
	mem := newStore()
	stopRouter := start(t, "router", p.newRouter("router").Run)
	cn := p.newCanceller(mem)
	stopCanceller := start(t, "canceller", cn.Run)
	col := p.collectOutcomes()
	args := []string{
		"recorder",
		"--brokers", cluster.ListenAddrs()[0],
		"--topic-prefix", p.prefix,
		"--group", p.prefix + "recorder",
		"--clickhouse-addr", cfg.Addr,
		"--clickhouse-database", cfg.Database,
		"--session-timeout", "2s",
		"--http-addr", "127.0.0.1:0",
		"--log-level", "warn",
	}
	// The broker refuses recorder-1's commits: whatever it inserts, it has
	// not committed when it is killed.
	refuse := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: p.prefix + "recorder", Err: kerr.CoordinatorNotAvailable, Count: -1})
	defer refuse.Remove()
	first := startProc(t, "recorder-1", args...)
	if err := p.waitRunning(ctx, 1); err != nil {
		t.Fatal(err)
	}
	all := mixedOrders("rk", p.table, orders, 4*time.Second)
	scheduled := make(chan error, 1)
	go func() { scheduled <- p.schedule(ctx, mem, all, 20, 150*time.Millisecond) }()

	// Kill the recorder once it has inserted a batch.
	var (
		rows map[string]row
		err  error
	)
	if err := waitFor(ctx, t, func() bool {
		rows, err = attemptRows(ctx, store, cfg.Database)
		return err == nil && len(rows) > 0
	}); err != nil {
		t.Fatalf("waiting for the first rows in ClickHouse (have %d rows, %d outcomes; %v): %v", len(rows), col.seen(), err, ctx.Err())
	}
	kill(t, first)
	refuse.Remove()
	atKill, finalAtKill := len(rows), col.finals()
	second := startProc(t, "recorder-2", args...)
	// recorder-1's partitions wait out its session timeout, then go to
	// recorder-2.
	if err := waitGroup(ctx, p.prefix+"recorder", 1); err != nil {
		t.Fatalf("waiting for recorder-2 to own the outcomes partitions: %v", err)
	}
	if err := <-scheduled; err != nil {
		t.Fatalf("schedule: %v", err)
	}
	if err := waitFor(ctx, t, func() bool { return col.finals() == orders }); err != nil {
		t.Fatalf("%d of %d orders final: %v", col.finals(), orders, err)
	}
	p.settle(ctx, col, stopRouter, stopCanceller)

	total := col.count()
	if err := waitFor(ctx, t, func() bool {
		rows, err = attemptRows(ctx, store, cfg.Database)
		return err == nil && len(rows) == total
	}); err != nil {
		t.Fatalf("ClickHouse holds %d attempts, want %d (last error %v)", len(rows), total, err)
	}
	if err := second.signal(syscall.SIGTERM); err != nil {
		t.Errorf("recorder-2 stopped with %v, want exit 0", err)
	}

	col.mu.Lock()
	twice := 0
	for _, evs := range col.events {
		for _, e := range evs {
			key := fmt.Sprintf("%s[%d]@%d", e.Topic, e.Partition, e.Offset)
			r, ok := rows[key]
			switch {
			case !ok:
				t.Errorf("attempt %s of %s is not in ClickHouse", key, e.TaskID)
			case r.taskID != e.TaskID || r.outcome != string(e.Outcome) || r.attempt != e.Attempt || r.lateness != e.LatenessMs || r.dueMs != e.DueMs:
				t.Errorf("attempt %s: ClickHouse %+v, canceller %+v", key, r, e)
			}
			if r.copies > 1 {
				twice++
			}
		}
	}
	col.mu.Unlock()
	v, err := store.View(ctx, chstore.Window{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	tot, err := v.Totals(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Attempts != int64(total) || tot.Tasks != orders {
		t.Errorf("report totals %+v, want %d attempts of %d tasks", tot, total, orders)
	}
	if err := store.Conn().Exec(ctx, "OPTIMIZE TABLE `"+cfg.Database+"`."+chstore.OutcomesTable+" FINAL"); err != nil {
		t.Fatal(err)
	}
	merged, err := attemptRows(ctx, store, cfg.Database)
	if err != nil {
		t.Fatal(err)
	}
	for key, r := range merged {
		if r.copies != 1 {
			t.Errorf("attempt %s has %d rows after the merge, want 1", key, r.copies)
		}
	}
	if twice == 0 {
		t.Errorf("no attempt was inserted twice: the kill did not land between an insert and its commit")
	}
	t.Logf("recorder-1 killed with %d attempts in ClickHouse, none committed (%d of %d orders final then); %d attempts of %d orders recorded, %d of them inserted twice (the report counted %d duplicate rows and ignored them)",
		atKill, finalAtKill, orders, total, orders, twice, tot.Duplicates)
}

// startClickHouse starts a private ClickHouse server and opens a store of
// database db on it, with the schema applied; both end with the test.
func startClickHouse(ctx context.Context, t *testing.T, db string) (*chtest.Server, chstore.Config, *chstore.Store) {
	t.Helper()
	srv := chtest.StartServer(t)
	cfg := srv.Config(db)
	store, err := chstore.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if _, err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return srv, cfg, store
}
