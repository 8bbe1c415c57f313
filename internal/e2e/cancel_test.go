package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/dbtest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// calledServer records the order ids its close endpoint is called for.
type calledServer struct {
	mu    sync.Mutex
	calls map[string]int
}

func (s *calledServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/orders/"), "/close")
	s.mu.Lock()
	s.calls[id]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, `{"outcome":"closed"}`)
}

func (s *calledServer) called(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[id]
}

// keysOf returns how many records of topic carry each key, reading to the
// topic's end.
func (p *pipe) keysOf(ctx context.Context, topic string) map[string]int {
	p.t.Helper()
	end, err := p.endOffsets(ctx, topic)
	if err != nil {
		p.t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(p.kafkaOpts(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		p.t.Fatal(err)
	}
	defer cl.Close()
	keys := make(map[string]int)
	for n := int64(0); n < end; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			p.t.Fatalf("read %s: %d of %d records", topic, n, end)
		}
		fs.EachRecord(func(r *kgo.Record) { keys[string(r.Key)]++; n++ })
	}
	return keys
}

// scheduler returns a Scheduler of the pipe's tiers and topics, on a
// client closed when the test ends.
func (p *pipe) scheduler() *tiers.Scheduler {
	p.t.Helper()
	cl, err := kgo.NewClient(p.kafkaOpts()...)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(cl.Close)
	s, err := tiers.NewScheduler(cl, p.table, tiers.WithPrefix(p.prefix))
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// TestCancelEveryTarget runs the router and the canceller as processes
// with their default settings, the canceller closing three kinds of task
// through the three closers: sql (a table in Postgres), http (an order
// service) and kafka (a command topic); a fourth set of tasks names a
// custom target topic, which no canceller reads. Half of each set is
// cancelled, acknowledged well before it is due. Then every Hourglass
// process is killed (SIGKILL) and started again, before any is due. Once
// all are due: a cancelled task never reached its target (its row is still
// open, the service was never called for it, no command and no record on
// the custom topic) and has the outcome "cancelled"; every other task
// reached its target.
func TestCancelEveryTarget(t *testing.T) {
	const perKind = 40
	p := newPipe(t, "cancel", "1s,4s", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	db := dbtest.Open(t, "postgres", dbtest.PostgresDSN(t))
	table := dbtest.Table(t, "orders")
	if _, err := db.Exec(`CREATE TABLE ` + table + ` (id text PRIMARY KEY, status text NOT NULL, closed_at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec(`DROP TABLE ` + table) })
	svc := &calledServer{calls: make(map[string]int)}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	commands, custom := p.prefix+"commands", p.prefix+"custom"
	for _, topic := range []string{commands, custom} {
		if _, err := p.adm.CreateTopic(ctx, 2, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	closers := filepath.Join(t.TempDir(), "closers.yaml")
	file := fmt.Sprintf("closers:\n  sql:\n    sql:\n      driver: postgres\n      dsn: {value: %q}\n      table: %s\n"+
		"  http:\n    http:\n      url: %s/orders/{id}/close\n  kafka:\n    kafka:\n      topic: %s\n", dbtest.PostgresDSN(t), table, srv.URL, commands)
	if err := os.WriteFile(closers, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	routerArgs := p.routerArgs("--allowed-targets", p.cancelTopic()+","+custom)
	cancellerArgs := p.cancellerArgs(closers, "canceller-1")
	rt, cn := startProc(t, "router-1", routerArgs...), startProc(t, "canceller-1", cancellerArgs...)
	if err := p.waitRunning(ctx, 1); err != nil {
		t.Fatal(err)
	}

	s := p.scheduler()
	due := time.Now().Add(12 * time.Second)
	cancelled := map[string]bool{}
	var ids []string
	for _, kind := range []string{"sql", "http", "kafka", "custom"} {
		for i := range perKind {
			id := fmt.Sprintf("%s-%d", kind, i)
			task := tiers.Task{ID: id, Due: due.Add(time.Duration(i) * 10 * time.Millisecond), Kind: kind}
			if kind == "custom" {
				task.Kind, task.Target = "", custom
			}
			if kind == "sql" {
				if _, err := db.Exec(`INSERT INTO `+table+` (id, status) VALUES ($1, 'UNPAID')`, id); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Schedule(ctx, task); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			if i%2 == 0 {
				cancelled[id] = true
				if err := s.Cancel(ctx, id, time.Time{}); err != nil {
					t.Fatalf("cancel %s: %v", id, err)
				}
			}
		}
	}
	col := p.collectOutcomes()

	// Every Hourglass process dies at once, after the cancellations were
	// acknowledged and before anything is due; both start again.
	kill(t, rt)
	kill(t, cn)
	if time.Now().After(due) {
		t.Fatal("scheduling took until the due time; the kill would not come before it")
	}
	startProc(t, "router-2", routerArgs...)
	startProc(t, "canceller-2", p.cancellerArgs(closers, "canceller-2")...)

	// Three sets close through the canceller, the custom one is only
	// forwarded; every cancelled task of the four has its event.
	ends := func() bool {
		n, err := p.endOffsets(ctx, custom)
		return err == nil && n >= perKind/2 && col.finals() >= 3*perKind/2 && countOutcome(col, outcome.Cancelled) >= 4*perKind/2
	}
	if err := waitFor(ctx, t, ends); err != nil {
		t.Fatalf("%d closes and %d cancellations: %v", col.finals(), countOutcome(col, outcome.Cancelled), err)
	}
	customKeys := p.keysOf(ctx, custom)
	commandKeys := p.keysOf(ctx, commands)
	var wrong []string
	for _, id := range ids {
		kind, _, _ := strings.Cut(id, "-")
		reached := 0
		switch kind {
		case "sql":
			var status string
			if err := db.QueryRow(`SELECT status FROM `+table+` WHERE id = $1`, id).Scan(&status); err != nil {
				t.Fatal(err)
			}
			if status == "CLOSED" {
				reached = 1
			}
		case "http":
			reached = svc.called(id)
		case "kafka":
			reached = commandKeys[id]
		case "custom":
			reached = customKeys[id]
		}
		switch {
		case cancelled[id] && reached > 0:
			wrong = append(wrong, id+": cancelled, but reached its target")
		case cancelled[id] && !hasOutcome(col, id, outcome.Cancelled):
			wrong = append(wrong, id+": cancelled, without the outcome cancelled")
		case !cancelled[id] && reached == 0:
			wrong = append(wrong, id+": not cancelled, but never reached its target")
		}
	}
	reportList(t, "wrong", wrong, len(ids))
}

// countOutcome counts the tasks that have an event with outcome o.
func countOutcome(c *collector, o outcome.Outcome) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, evs := range c.events {
		for _, ev := range evs {
			if ev.Outcome == o {
				n++
				break
			}
		}
	}
	return n
}

// hasOutcome reports whether task id has an event with outcome o.
func hasOutcome(c *collector, id string, o outcome.Outcome) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range c.events[id] {
		if ev.Outcome == o {
			return true
		}
	}
	return false
}

// TestCancelAcrossRebalance: cancellations acknowledged before their
// deadlines are due are honoured while the partitions of the delay topics
// move between routers: a second router joins, the first leaves, and a
// third, which reads every cancellation from the topic at its start, joins.
func TestCancelAcrossRebalance(t *testing.T) {
	const n = 200
	p := newPipe(t, "cancel-rebalance", "1s,4s", 4)
	store := newStore()
	stopCanceller := start(t, "canceller", p.newCanceller(store).Run)
	stopFirst := start(t, "router-1", p.newRouter("router-1").Run)
	col := p.collectOutcomes()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.waitRunning(ctx, 1); err != nil {
		t.Fatal(err)
	}
	s := p.scheduler()
	due := time.Now().Add(6 * time.Second)
	for i := range n {
		id := fmt.Sprintf("order-%d", i)
		if err := s.Schedule(ctx, tiers.Task{ID: id, Due: due.Add(time.Duration(i) * 20 * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := s.Cancel(ctx, id, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	stopSecond := start(t, "router-2", p.newRouter("router-2").Run)
	if err := p.waitAssigned(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := stopFirst(); err != nil {
		t.Fatalf("graceful stop of router-1: %v", err)
	}
	stopThird := start(t, "router-3", p.newRouter("router-3").Run)
	if err := p.waitAssigned(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if time.Now().After(due) {
		t.Log("the rebalances lasted past the first due time")
	}
	done := func() bool { return col.finals() >= n/2 && countOutcome(col, outcome.Cancelled) >= n/2 }
	if err := waitFor(ctx, t, done); err != nil {
		t.Fatalf("%d closes and %d cancellations of %d each: %v", col.finals(), countOutcome(col, outcome.Cancelled), n/2, err)
	}
	var wrong []string
	for i := range n {
		id := fmt.Sprintf("order-%d", i)
		switch calls := len(store.called(id)); {
		case i%2 == 0 && calls > 0:
			wrong = append(wrong, id+": cancelled, but closed")
		case i%2 == 1 && calls == 0:
			wrong = append(wrong, id+": not cancelled, but never closed")
		}
	}
	reportList(t, "wrong", wrong, n)
	for _, stop := range []func() error{stopSecond, stopThird, stopCanceller} {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}
}
