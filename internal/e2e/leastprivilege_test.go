package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// aclOrders is the order service of the ACL tests, which the canceller's
// http closer calls: it closes an order once, answers 503 (retried) to
// the first request for an order in busy, and 422 (dead-lettered) to every
// request for an order in refuse.
type aclOrders struct {
	mu     sync.Mutex
	closes map[string]int
	busy   map[string]bool
	refuse map[string]bool
}

func newACLOrders() *aclOrders {
	return &aclOrders{closes: map[string]int{}, busy: map[string]bool{}, refuse: map[string]bool{}}
}

func (s *aclOrders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/orders/"), "/close")
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !ok:
		http.Error(w, "no such endpoint", http.StatusBadRequest)
	case s.refuse[id]:
		http.Error(w, "order locked", http.StatusUnprocessableEntity)
	case s.busy[id]:
		delete(s.busy, id)
		http.Error(w, "busy", http.StatusServiceUnavailable)
	default:
		s.closes[id]++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"outcome": "closed"}`)
	}
}

func (s *aclOrders) closed(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closes[id]
}

// closersFile writes a closers file that closes every order through the
// http closer of srv, and returns its path.
func closersFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "closers.yaml")
	if err := os.WriteFile(path, []byte("closers:\n  order-timeout:\n    http:\n      url: "+srv.URL+"/orders/{id}/close\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLeastPrivilege runs the whole pipeline on a broker with SASL and
// ACLs on, each service and each command as its own principal with the
// ACLs of docs/security.md (aclTable) and nothing more: topics are
// created, deadlines scheduled (one hops a tier), cancelled and moved (in
// a transaction), closed (one after a retry), recorded in ClickHouse,
// shown by status, and a dead letter is listed and replayed. No principal
// is refused anything on the way, and the services start without
// DescribeConfigs. A producer allowed to write the delay topics is refused
// the cancellations and the outcomes topics.
func TestLeastPrivilege(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := newACLCluster(t, aclTable)
	for _, args := range [][]string{{"topics", "--tiers", aclTiers, "--partitions", "2"}, {"topics", "--check", "--tiers", aclTiers, "--partitions", "2"}} {
		if out, errOut, err := runCmd(t, a.as("topics-admin", args...)...); err != nil {
			t.Fatalf("hourglass %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
	}
	_, ch, store := startClickHouse(ctx, t, "hourglass_acl")
	orders := newACLOrders()
	orders.busy["acl-retried"] = true
	orders.refuse["acl-refused"] = true
	srv := httptest.NewServer(orders)
	defer srv.Close()
	services := []*proc{
		startProc(t, "router", a.as("router", "router", "--tiers", aclTiers, "--http-addr", "127.0.0.1:0", "--log-level", "warn")...),
		startProc(t, "canceller", a.as("canceller", "canceller", "--tiers", aclTiers, "--closers", closersFile(t, srv),
			"--http-addr", "127.0.0.1:0", "--log-level", "warn")...),
		startProc(t, "recorder", a.as("recorder", "recorder", "--clickhouse-addr", ch.Addr, "--clickhouse-database", ch.Database,
			"--http-addr", "127.0.0.1:0", "--log-level", "warn")...),
	}
	for _, g := range []string{"hourglass-router", "hourglass-canceller", "hourglass-recorder"} {
		if err := a.waitGroup(ctx, g); err != nil {
			t.Fatalf("waiting for group %s: %v", g, err)
		}
	}
	table, _ := tiers.Parse(aclTiers)
	p := &pipe{t: t, prefix: tiers.DefaultPrefix, table: table, seeds: a.opts(aclAdmin), prod: a.admin, adm: a.adm}
	col := p.collectOutcomes()

	hourglass := func(principal string, args ...string) string {
		t.Helper()
		out, errOut, err := runCmd(t, a.as(principal, args...)...)
		if err != nil {
			t.Fatalf("hourglass %s as %s: %v\n%s%s", strings.Join(args, " "), principal, err, out, errOut)
		}
		return out
	}
	schedule := func(id, in string) { hourglass("producer", "schedule", "--id", id, "--in", in, "--tiers", aclTiers) }
	schedule("acl-hopped", "2500ms") // waits in the 1s tier, hops to it again
	schedule("acl-cancelled", "3s")
	hourglass("cancel-writer", "cancel", "--id", "acl-cancelled")
	schedule("acl-moved", "4s")
	hourglass("rescheduler", "reschedule", "--id", "acl-moved", "--in", "1s", "--tiers", aclTiers)
	schedule("acl-retried", "0s")
	schedule("acl-refused", "0s")
	checkProducerLimits(ctx, t, a)

	want := map[string][]outcome.Outcome{
		"acl-hopped":    {outcome.Closed},
		"acl-cancelled": {outcome.Cancelled},
		"acl-moved":     {outcome.Closed, outcome.Cancelled},
		"acl-retried":   {outcome.Retry, outcome.Closed},
		"acl-refused":   {outcome.Failed},
	}
	if err := waitFor(ctx, t, func() bool { return col.count() >= 7 }); err != nil {
		t.Fatalf("waiting for the outcomes: %v; have %v", err, outcomesOf(col))
	}
	// The dead letters: the refused close and the producer's record
	// without a due time (checkProducerLimits).
	if err := waitFor(ctx, t, func() bool { n, err := p.endOffsets(ctx, p.dlqTopic()); return err == nil && n >= 2 }); err != nil {
		t.Fatalf("waiting for two dead letters: %v", err)
	}
	list := hourglass("dlq-reader", "dlq", "list", "--format", "json")
	for _, want := range []string{`"key":"acl-refused"`, `"reason":"close_failed"`, `"key":"acl-malformed"`, `"reason":"due_missing"`} {
		if !strings.Contains(list, want) {
			t.Errorf("hourglass dlq list does not show %s:\n%s", want, list)
		}
	}
	orders.mu.Lock()
	delete(orders.refuse, "acl-refused")
	orders.mu.Unlock()
	if out := hourglass("dlq-replayer", "dlq", "replay", "--tiers", aclTiers); !strings.Contains(out, "replayed 1, skipped 1") {
		t.Errorf("hourglass dlq replay: want the refused close replayed and the record without a due time skipped:\n%s", out)
	}
	want["acl-refused"] = append(want["acl-refused"], outcome.Closed)
	if err := waitFor(ctx, t, func() bool { return col.count() >= 8 }); err != nil {
		t.Fatalf("waiting for the replayed close: %v; have %v", err, outcomesOf(col))
	}
	if got := outcomesOf(col); !equalOutcomes(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
	for id, n := range map[string]int{"acl-hopped": 1, "acl-cancelled": 0, "acl-moved": 1, "acl-retried": 1, "acl-refused": 1} {
		if got := orders.closed(id); got != n {
			t.Errorf("%s closed %d times by the order service, want %d", id, got, n)
		}
	}
	col.mu.Lock()
	if ev := col.events["acl-hopped"]; len(ev) == 0 || ev[0].Hops < 1 {
		t.Errorf("acl-hopped: %+v; want a hop through a delay topic", ev)
	}
	col.mu.Unlock()

	checkStatus(t, a, "acl-hopped", taskstatus.StateClosed)
	if err := waitFor(ctx, t, func() bool {
		rows, err := attemptRows(ctx, store, ch.Database)
		return err == nil && len(rows) == col.count()
	}); err != nil {
		t.Errorf("waiting for ClickHouse to hold the %d outcome events: %v", col.count(), err)
	}
	// The recorder indexed every deadline once, at its first record, and
	// the cancellation and the dead letters.
	for id, n := range map[string]int{"acl-hopped": 1, "acl-cancelled": 1, "acl-moved": 2, "acl-retried": 1, "acl-refused": 1} {
		if err := waitFor(ctx, t, func() bool {
			ti, err := store.Task(ctx, id, 10)
			return err == nil && len(ti.Deadlines) == n && (id != "acl-cancelled" || len(ti.Cancels) == 1) && (id != "acl-refused" || len(ti.DeadLetters) == 1)
		}); err != nil {
			ti, _ := store.Task(ctx, id, 10)
			t.Errorf("the index of %s: %+v, want %d deadlines: %v", id, ti, n, err)
		}
	}
	t.Logf("outcomes %v, each recorded in ClickHouse; dead letters listed:\n%s", outcomesOf(col), list)
	for _, s := range services {
		if err := s.signal(syscall.SIGTERM); err != nil {
			t.Errorf("%s stopped with %v, want exit 0", s.name, err)
		}
		out := s.out.String()
		if strings.Contains(out, "AUTHORIZATION_FAILED") {
			t.Errorf("%s was refused something:\n%s", s.name, out)
		}
		if !hasLine(out, "topic configs not checked", "DescribeConfigs") {
			t.Errorf("%s does not say that it could not check the topic configs:\n%s", s.name, out)
		}
	}
}

// checkProducerLimits writes, as the producer, a record without a due
// time to a delay topic (the router dead-letters it), and checks that the
// producer may write neither the cancellations nor the outcomes topic.
func checkProducerLimits(ctx context.Context, t *testing.T, a *aclCluster) {
	t.Helper()
	cl, err := kgo.NewClient(a.opts("producer")...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	delay := tiers.Topic(tiers.DefaultPrefix, 200*time.Millisecond)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: delay, Key: []byte("acl-malformed")}).FirstErr(); err != nil {
		t.Fatalf("producer writing %s: %v", delay, err)
	}
	cancellation, err := tiers.BuildCancellation(tiers.DefaultPrefix, tiers.Cancellation{ID: "acl-hopped", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	event := &kgo.Record{Topic: tiers.OutcomesTopic(tiers.DefaultPrefix), Key: []byte("acl-hopped"), Value: []byte(`{"outcome":"closed"}`)}
	for _, r := range []*kgo.Record{cancellation, event} {
		if err := cl.ProduceSync(ctx, r).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("producer writing %s: %v, want %v", r.Topic, err, kerr.TopicAuthorizationFailed)
		}
	}
}

// checkStatus runs hourglass status id as the status reader and checks
// that it read everything and found the deadline in state.
func checkStatus(t *testing.T, a *aclCluster, id, state string) {
	t.Helper()
	out, errOut, err := runCmd(t, a.as("status-reader", "status", id, "--tiers", aclTiers, "--format", "json")...)
	if err != nil {
		t.Fatalf("hourglass status %s: %v\n%s%s", id, err, out, errOut)
	}
	var st statuscmd.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("hourglass status %s: %v\n%s", id, err, out)
	}
	if !st.Complete || len(st.Deadlines) != 1 || st.Deadlines[0].State != state {
		t.Errorf("hourglass status %s: complete %v, deadlines %+v; want one, %s\n%s", id, st.Complete, st.Deadlines, state, errOut)
	}
}

// outcomesOf returns the outcomes of each task, in topic order.
func outcomesOf(c *collector) map[string][]outcome.Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]outcome.Outcome{}
	for id, evs := range c.events {
		for _, e := range evs {
			out[id] = append(out[id], e.Outcome)
		}
	}
	return out
}

// equalOutcomes compares outcomes per task, in any order: the outcomes of
// one task may come from the router and the canceller, on two partitions.
func equalOutcomes(a, b map[string][]outcome.Outcome) bool {
	if len(a) != len(b) {
		return false
	}
	for id, os := range a {
		if !slices.Equal(slices.Sorted(slices.Values(os)), slices.Sorted(slices.Values(b[id]))) {
			return false
		}
	}
	return true
}
