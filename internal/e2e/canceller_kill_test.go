package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/closer/httpcloser"
	"github.com/hourglass/hourglass/internal/outcome"
)

// orderService is the HTTP API of an order service that a canceller's
// http closer calls: it applies each close once per Idempotency-Key and
// answers a repeat with already_closed. It can hold the answer to one
// order's first request after applying it, as a service whose answer is
// slow or lost.
type orderService struct {
	mu       sync.Mutex
	applied  map[string]int         // closes applied, by idempotency key
	requests map[string][]time.Time // requests, by idempotency key
	early    []string               // requests before their Hourglass-Due
	answered map[string]error       // by key: how writing the held answer went

	hold    string        // the order id whose first request is held
	held    chan struct{} // closed when that request has arrived
	release chan struct{} // closed by the test to let it answer
}

func newOrderService() *orderService {
	return &orderService{applied: map[string]int{}, requests: map[string][]time.Time{}, answered: map[string]error{}}
}

// holdNext makes the first request for order id wait, once applied, until
// the returned release is called; held is closed when it has arrived.
func (s *orderService) holdNext(id string) (held <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold, s.held, s.release = id, make(chan struct{}), make(chan struct{})
	rel := s.release
	var once sync.Once
	return s.held, func() { once.Do(func() { close(rel) }) }
}

func (s *orderService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	key := r.Header.Get(httpcloser.HeaderIdempotencyKey)
	id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/orders/"), "/close")
	if key == "" || !ok || r.Method != http.MethodPost {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	due, err := strconv.ParseInt(r.Header.Get(httpcloser.HeaderDue), 10, 64)
	s.mu.Lock()
	if err != nil || now.Before(time.UnixMilli(due)) {
		s.early = append(s.early, fmt.Sprintf("%s at %s, due %q", key, now.Format(time.StampMicro), r.Header.Get(httpcloser.HeaderDue)))
	}
	s.requests[key] = append(s.requests[key], now)
	repeat := s.applied[key] > 0
	if !repeat {
		s.applied[key]++
	}
	var held, release chan struct{}
	if id == s.hold && !repeat {
		held, release = s.held, s.release
		s.hold = ""
	}
	s.mu.Unlock()
	if repeat {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"outcome": "already_closed"}`)
		return
	}
	var gone error
	if held != nil {
		close(held)
		<-release
		gone = r.Context().Err() // the client gave up on the request
	}
	w.Header().Set("Content-Type", "application/json")
	_, err = fmt.Fprint(w, `{"outcome": "closed"}`)
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	if held != nil {
		s.mu.Lock()
		s.answered[key] = cmpOr(gone, err)
		s.mu.Unlock()
	}
}

func idempotencyKey(id string) string { return "hourglass:order-timeout:" + id }

// cancellerArgs returns the command line of a canceller process of p
// closing through closersFile, with instance id; every other setting is the
// service's default.
func (p *pipe) cancellerArgs(closersFile, id string) []string {
	return []string{
		"canceller",
		"--brokers", cluster.ListenAddrs()[0],
		"--tiers", p.table.String(),
		"--topic-prefix", p.prefix,
		"--group", p.cancellerGroup(),
		"--closers", closersFile,
		"--instance-id", id,
		"--http-addr", "127.0.0.1:0",
		"--log-level", "warn",
	}
}

// TestCancellerKilled runs the canceller as a process with the default
// settings and an instance id, closing orders through its http closer
// against an order service. The service applies one order's close and then
// holds its answer; meanwhile the canceller is killed (SIGKILL) and started
// again with the same instance id. The restarted canceller closes the order
// again, which the service recognises by its Idempotency-Key: every order
// is closed exactly once in effect, none before its due time, nothing is
// lost. Then the restarted canceller is stopped (SIGTERM) while another
// close is held: the stop must wait for that close, not cut it off.
func TestCancellerKilled(t *testing.T) {
	const n = 300
	svc := newOrderService()
	srv := httptest.NewServer(svc)
	defer srv.Close()
	closers := filepath.Join(t.TempDir(), "closers.yaml")
	if err := os.WriteFile(closers, []byte("closers:\n  order-timeout:\n    http:\n      url: "+srv.URL+"/orders/{id}/close\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	p := newPipe(t, "cancelkill", "200ms,1s", 3)
	stopRouter := start(t, "router", p.newRouter("router").Run)
	col := p.collectOutcomes()
	args := p.cancellerArgs(closers, "canceller-0")
	first := startProc(t, "canceller-1", args...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := p.waitRunning(ctx, 1); err != nil {
		t.Fatal(err)
	}

	// Orders due over about 2 s; the one to hold is due in the middle.
	store := newStore() // only for schedule's bookkeeping: the service closes
	orders := churnOrders("ck", p.table, n)
	chosen := orders[n/2+1] // below-smallest: due soon after it is scheduled
	held, release := svc.holdNext(chosen.id)
	defer release()
	scheduled := make(chan error, 1)
	go func() { scheduled <- p.schedule(ctx, store, orders, 20, 100*time.Millisecond) }()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatalf("waiting for the close of %s to reach the service: %v", chosen.id, ctx.Err())
	}
	kill(t, first)
	killed := time.Now()
	release()
	second := startProc(t, "canceller-2", args...)

	if err := <-scheduled; err != nil {
		t.Fatalf("schedule: %v", err)
	}
	wctx, wcancel := allDue(ctx, orders, 20*time.Second)
	defer wcancel()
	if err := waitFor(wctx, t, func() bool { return col.finals() >= n }); err != nil {
		t.Fatalf("waiting for every order's final outcome: %v; %s", err, missing(orders, col))
	}
	recovered := time.Since(killed)

	// The stop of the restarted canceller, with a close held: one more
	// order, due at once.
	last := &order{id: "ck-last", class: "last"}
	held, release = svc.holdNext(last.id)
	if err := p.schedule(ctx, store, []*order{last}, 1, time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-wctx.Done():
		t.Fatalf("waiting for the close of %s to reach the service: %v", last.id, wctx.Err())
	}
	second.stopping.Store(true)
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The close takes this long after the stop began: a scenario
	// parameter, well within the default close timeout (10 s).
	select {
	case <-time.After(500 * time.Millisecond):
	case <-second.done:
		t.Fatalf("canceller-2 exited (%v) while a close was running", second.err)
	}
	release()
	select {
	case <-second.done:
		if second.err != nil {
			t.Errorf("canceller-2 stopped with %v, want exit 0", second.err)
		}
	case <-time.After(stopTimeout):
		t.Fatal("canceller-2 did not stop")
	}
	if err := stopRouter(); err != nil {
		t.Errorf("stop router: %v", err)
	}
	events, err := p.endOffsets(ctx, p.outcomesTopic())
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, t, func() bool { return int64(col.count()) >= events }); err != nil {
		t.Fatalf("reading all %d outcome events (have %d): %v", events, col.count(), err)
	}

	all := append(slices.Clone(orders), last)
	svc.mu.Lock()
	defer svc.mu.Unlock()
	col.mu.Lock()
	defer col.mu.Unlock()
	var problems []string
	dups := 0
	for _, o := range all {
		key := idempotencyKey(o.id)
		if svc.applied[key] != 1 {
			problems = append(problems, fmt.Sprintf("%s: applied %d times by the service, want once", o.id, svc.applied[key]))
		}
		evs := col.events[o.id]
		finals := 0
		for _, e := range evs {
			if e.Outcome != outcome.Closed && e.Outcome != outcome.AlreadyClosed {
				problems = append(problems, fmt.Sprintf("%s: outcome %q (%s)", o.id, e.Outcome, e.Error))
			}
			if e.Outcome.Final() {
				finals++
			}
		}
		if finals == 0 {
			problems = append(problems, fmt.Sprintf("%s: no final outcome (%d events)", o.id, len(evs)))
		}
		dups += max(0, finals-1)
	}
	if len(svc.applied) != len(all) {
		problems = append(problems, fmt.Sprintf("%d idempotency keys at the service, want %d (one per order)", len(svc.applied), len(all)))
	}
	for _, e := range svc.early {
		problems = append(problems, "close before its due time: "+e)
	}
	if r := svc.requests[idempotencyKey(chosen.id)]; len(r) < 2 {
		problems = append(problems, fmt.Sprintf("%s: %d requests, want the held one and one from the restarted canceller", chosen.id, len(r)))
	}
	if evs := col.events[chosen.id]; len(evs) == 0 || evs[0].Outcome != outcome.AlreadyClosed {
		problems = append(problems, fmt.Sprintf("%s: outcomes %+v, want already_closed first (the killed canceller wrote none)", chosen.id, evs))
	}
	// The close held during the stop finished and was reported, once.
	if err, ok := svc.answered[idempotencyKey(last.id)]; !ok || err != nil {
		problems = append(problems, fmt.Sprintf("%s: the held answer could not be written (%v, %v): the stop cut the close off", last.id, ok, err))
	}
	if evs := col.events[last.id]; len(evs) != 1 || evs[0].Outcome != outcome.Closed {
		problems = append(problems, fmt.Sprintf("%s: outcomes %+v, want one closed", last.id, evs))
	}
	if len(problems) > 0 {
		t.Errorf("%d problems:\n  %s", len(problems), strings.Join(problems[:min(20, len(problems))], "\n  "))
	}
	var late []int64
	for _, o := range orders {
		if r := svc.requests[idempotencyKey(o.id)]; len(r) > 0 && o.id != chosen.id {
			late = append(late, r[0].Sub(maxTime(time.UnixMilli(o.due.UnixMilli()), o.sent)).Milliseconds())
		}
	}
	lat := checkLateness(t, "first requests", late, time.Second, 3*time.Second)
	t.Logf("canceller-1 killed with %s's close held; every order final %v later; %d duplicate final outcomes; first requests at the service late by %s; %d requests for %s",
		chosen.id, recovered.Round(time.Millisecond), dups, lat, len(svc.requests[idempotencyKey(chosen.id)]), chosen.id)
}
