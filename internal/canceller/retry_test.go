package canceller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/time/rate"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestRetry: a retryable failure reschedules the task through the delay
// tier of its backoff with the next attempt, its deadline and the cancel
// topic as target; delivered again (as the router would), it closes. The
// last attempt that fails goes to the dead-letter topic.
func TestRetry(t *testing.T) {
	table, err := tiers.Parse("1s,10s,1m")
	if err != nil {
		t.Fatal(err)
	}
	cr := closer.CloserFunc(func(_ context.Context, tk closer.Task) (closer.Result, error) {
		switch {
		case tk.ID == "busy":
			return closer.Result{}, closer.RetryAfter(errors.New("503 from orders"), 45*time.Second)
		case tk.ID == "down" || tk.Attempt < 3:
			return closer.Result{}, errors.New("db down")
		}
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setup(t, Config{Tiers: table, RetryBackoff: 4 * time.Second, RetryBackoffMax: 8 * time.Second, MaxAttempts: 3}, cr)
	due := t0.Add(-time.Second)
	off := b.produce(t, "flaky", "v", hdrMillis(tiers.HeaderDue, due), hdr(tiers.HeaderKind, "reminder"), hdr("x-trace", "t1"))
	b.waitStats(t, func(s Stats) bool { return s.Retried == 1 })

	// Attempt 1 failed: backoff 4s, of which the upper half is random.
	retries := b.read(t, tiers.Topic(b.cfg.Prefix, time.Second), "flaky")
	r := retries[0]
	m, err := tiers.DecodeRecord(r)
	if err != nil {
		t.Fatalf("retry record: %v", err)
	}
	if wait := m.Due.Sub(t0); wait < 2*time.Second || wait > 4*time.Second {
		t.Errorf("attempt 2 due in %v, want 2s..4s", wait)
	}
	if m.Attempt != 2 || m.Target != b.cfg.Topics[0] || !m.Deadline.Equal(due) || m.Kind != "reminder" {
		t.Errorf("retry meta %+v, want attempt 2, target %s, deadline %v", m, b.cfg.Topics[0], due)
	}
	if v, _ := tiers.Header(r.Headers, "x-trace"); string(v) != "t1" || string(r.Value) != "v" {
		t.Errorf("retry lost the record's value or headers: %q %v", r.Value, r.Headers)
	}
	ev := b.outcomes(t, "flaky")["flaky"]
	if ev.Outcome != outcome.Retry || ev.Error != "db down" || ev.Attempt != 1 || ev.Offset != off {
		t.Errorf("attempt 1 outcome %+v, want retry", ev.Event)
	}

	// Attempt 2 fails again (8s, capped), attempt 3 closes.
	b.clock.Advance(time.Minute)
	b.cl.ProduceSync(context.Background(), &kgo.Record{Topic: b.cfg.Topics[0], Key: r.Key, Value: r.Value, Headers: r.Headers})
	b.waitStats(t, func(s Stats) bool { return s.Retried == 2 })
	retries = b.readN(t, tiers.Topic(b.cfg.Prefix, time.Second), 2)
	r = retries[1]
	m, _ = tiers.DecodeRecord(r)
	if wait := m.Due.Sub(t0.Add(time.Minute)); m.Attempt != 3 || wait < 4*time.Second || wait > 8*time.Second || !m.Deadline.Equal(due) {
		t.Errorf("attempt 3: %+v due in %v, want 4s..8s with the first deadline", m, wait)
	}
	b.cl.ProduceSync(context.Background(), &kgo.Record{Topic: b.cfg.Topics[0], Key: r.Key, Value: r.Value, Headers: r.Headers})
	b.waitStats(t, func(s Stats) bool { return s.Closed == 1 })

	// A Retry-After longer than the backoff wins and picks a longer tier;
	// a task that keeps failing is dead-lettered after its last attempt.
	b.produce(t, "busy", "", hdrMillis(tiers.HeaderDue, t0))
	b.produce(t, "down", "", hdrMillis(tiers.HeaderDue, t0), hdr(tiers.HeaderAttempt, "3"))
	b.waitStats(t, func(s Stats) bool { return s.Retried == 3 && s.DeadLettered == 1 })
	busy := b.read(t, tiers.Topic(b.cfg.Prefix, 10*time.Second), "busy")
	if m, _ := tiers.DecodeRecord(busy[len(busy)-1]); m.Due.Sub(b.clock.Now()) != 45*time.Second {
		t.Errorf("busy retried at %v, want 45s after now (Retry-After)", m.Due.Sub(b.clock.Now()))
	}
	dl := b.read(t, b.cfg.DeadLetter, "down")
	reason, _ := tiers.Header(dl[0].Headers, tiers.HeaderReason)
	attempt, _ := tiers.Header(dl[0].Headers, tiers.HeaderAttempt)
	if string(reason) != "retries_exhausted: attempt 3 of 3: db down" || string(attempt) != "3" {
		t.Errorf("dead letter reason %q attempt %q", reason, attempt)
	}
	if s := b.c.Stats(); s != (Stats{Closed: 1, Retried: 3, Failed: 1, DeadLettered: 1}) {
		t.Errorf("stats %+v", s)
	}
}

// TestBackoff: the wait doubles per attempt up to the cap, with its upper
// half random.
func TestBackoff(t *testing.T) {
	c := &Canceller{cfg: Config{RetryBackoff: time.Second, RetryBackoffMax: 10 * time.Second}}
	for _, tc := range []struct {
		attempt  int
		min, max time.Duration
	}{
		{1, 500 * time.Millisecond, time.Second},
		{2, time.Second, 2 * time.Second},
		{4, 4 * time.Second, 8 * time.Second},
		{5, 5 * time.Second, 10 * time.Second},
		{60, 5 * time.Second, 10 * time.Second},
	} {
		lo, hi := time.Duration(1<<62), time.Duration(0)
		for range 200 {
			d := c.backoff(tc.attempt, errors.New("x"))
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo < tc.min || hi > tc.max || hi-lo < (tc.max-tc.min)/2 {
			t.Errorf("attempt %d: waits in [%v, %v], want spread over [%v, %v]", tc.attempt, lo, hi, tc.min, tc.max)
		}
	}
	if d := c.backoff(1, closer.RetryAfter(errors.New("x"), time.Hour)); d != time.Hour {
		t.Errorf("Retry-After 1h: wait %v", d)
	}
}

// TestRoutes: each kind is closed by its own closer; a kind without one is
// dead-lettered when there is no fallback closer.
func TestRoutes(t *testing.T) {
	named := func(name string) closer.Closer {
		return closer.CloserFunc(func(context.Context, closer.Task) (closer.Result, error) {
			return closer.Result{Outcome: outcome.Closed, Detail: name}, nil
		})
	}
	b := setupRoutes(t, Config{}, Options{Routes: map[string]Route{
		DefaultKind: {Closer: named("sql")},
		"reminder":  {Closer: named("kafka")},
	}})
	due := hdrMillis(tiers.HeaderDue, t0)
	b.produce(t, "o1", "", due)
	b.produce(t, "o2", "", due, hdr(tiers.HeaderKind, "reminder"))
	b.produce(t, "o3", "", due, hdr(tiers.HeaderKind, "gift-wrap"))
	b.produce(t, "o4", "", due, hdr(tiers.HeaderKind, DefaultKind))
	b.waitStats(t, func(s Stats) bool { return s.Closed == 3 && s.DeadLettered == 1 })
	got := b.outcomes(t, "o4")
	for id, want := range map[string]string{"o1": "sql", "o2": "kafka", "o4": "sql"} {
		if got[id].Detail != want {
			t.Errorf("%s closed by %q, want %q", id, got[id].Detail, want)
		}
	}
	if _, ok := got["o3"]; ok {
		t.Errorf("o3 has an outcome event: %+v", got["o3"].Event)
	}
	dl := b.read(t, b.cfg.DeadLetter, "o3")
	if reason, _ := tiers.Header(dl[0].Headers, tiers.HeaderReason); !strings.HasPrefix(string(reason), "unknown_kind: ") {
		t.Errorf("o3 dead letter reason %q", reason)
	}
}

// TestConcurrentNeverSameTask: with many closes in flight, two records of
// one task id never close at once and close in offset order, and the
// closes of different tasks do overlap.
func TestConcurrentNeverSameTask(t *testing.T) {
	const keys, perKey, inFlight = 8, 12, 16
	var (
		running = make(map[string]int)
		last    = make(map[string]int)
		now, mx int
		bad     []string
	)
	var mu sync.Mutex
	lock, unlock := mu.Lock, mu.Unlock
	cr := closer.CloserFunc(func(ctx context.Context, tk closer.Task) (closer.Result, error) {
		var seq int
		if _, err := fmt.Sscan(string(tk.Payload), &seq); err != nil {
			return closer.Result{}, fmt.Errorf("payload %q: %w", tk.Payload, err)
		}
		lock()
		running[tk.ID]++
		now++
		mx = max(mx, now)
		if running[tk.ID] > 1 {
			bad = append(bad, fmt.Sprintf("%s: %d closes at once", tk.ID, running[tk.ID]))
		}
		if seq != last[tk.ID]+1 {
			bad = append(bad, fmt.Sprintf("%s: close %d after %d", tk.ID, seq, last[tk.ID]))
		}
		last[tk.ID] = seq
		unlock()
		// Long enough for closes of other tasks to start meanwhile.
		select {
		case <-time.After(3 * time.Millisecond):
		case <-ctx.Done():
		}
		lock()
		running[tk.ID]--
		now--
		unlock()
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setup(t, Config{MaxInFlight: inFlight}, cr)
	due := hdrMillis(tiers.HeaderDue, t0)
	var rs []*kgo.Record
	for i := 1; i <= perKey; i++ {
		for k := range keys {
			rs = append(rs, &kgo.Record{Topic: b.cfg.Topics[0], Key: fmt.Appendf(nil, "task-%d", k), Value: fmt.Append(nil, i),
				Headers: []kgo.RecordHeader{due}})
		}
	}
	if err := b.cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.waitStats(t, func(s Stats) bool { return s.Closed == keys*perKey })
	lock()
	defer unlock()
	for _, e := range bad {
		t.Error(e)
	}
	if mx < 2 || mx > keys {
		t.Errorf("at most %d closes ran at once; want 2..%d (one per task id)", mx, keys)
	}
	t.Logf("up to %d closes at once", mx)
}

// TestConcurrentCommitContiguous: with closes finishing out of order, the
// commit never passes a record whose close still runs.
func TestConcurrentCommitContiguous(t *testing.T) {
	release := make(chan struct{})
	cr := closer.CloserFunc(func(ctx context.Context, tk closer.Task) (closer.Result, error) {
		if tk.ID == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
				return closer.Result{}, ctx.Err()
			}
		}
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setup(t, Config{MaxInFlight: 8, CommitInterval: time.Second}, cr)
	unblock := sync1(func() { close(release) })
	t.Cleanup(unblock)
	due := hdrMillis(tiers.HeaderDue, t0)
	for _, id := range []string{"a", "slow", "b", "c", "d", "e"} {
		b.produce(t, id, "", due)
	}
	b.waitStats(t, func(s Stats) bool { return s.Closed == 5 })
	// Commit until the watermark reaches slow's offset; it must stop there.
	commit := func() { b.clock.Advance(b.cfg.CommitInterval) }
	waitFor(t, "offset 1 committed", func() bool {
		commit()
		got := b.committed(t)
		if got > 1 {
			t.Fatalf("committed %d while the close of offset 1 runs", got)
		}
		return got == 1
	}, func() string { return fmt.Sprint(b.committed(t)) })
	commit()
	commit()
	if got := b.committed(t); got != 1 {
		t.Fatalf("committed %d while the close of offset 1 runs", got)
	}
	unblock()
	b.waitStats(t, func(s Stats) bool { return s.Closed == 6 })
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	if got := b.committed(t); got != 6 {
		t.Errorf("committed %d after the stop, want 6", got)
	}
}

// sync1 returns f made safe to call more than once.
func sync1(f func()) func() {
	done := make(chan struct{}, 1)
	done <- struct{}{}
	return func() {
		select {
		case <-done:
			f()
		default:
		}
	}
}

// TestRateLimit: under a backlog the closes per second stay within the
// limit: over any window, at most burst + rate x window closes.
func TestRateLimit(t *testing.T) {
	const perSec, n = 40.0, 80
	times := make(chan time.Time, n)
	cr := closer.CloserFunc(func(context.Context, closer.Task) (closer.Result, error) {
		times <- time.Now()
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setup(t, Config{MaxInFlight: 20, RateLimit: perSec, RateBurst: 1}, cr)
	due := hdrMillis(tiers.HeaderDue, t0)
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: b.cfg.Topics[0], Key: fmt.Append(nil, i), Headers: []kgo.RecordHeader{due}})
	}
	if err := b.cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.waitStats(t, func(s Stats) bool { return s.Closed == n })
	close(times)
	var ts []time.Time
	for at := range times {
		ts = append(ts, at)
	}
	// The limiter decides when each close may start; the close records the
	// time when the scheduler runs it. On a busy machine a few closes can
	// run late and together (a quarter of a second was seen with two cores
	// busy), so check windows of a second and more, with 250ms (ten tokens
	// at 40/s) allowed for that delay: a limiter that lets closes through
	// even a third too fast still fails.
	const slack = 250 * time.Millisecond
	for i := range ts {
		for j := i + 1; j < len(ts); j++ {
			window := ts[j].Sub(ts[i])
			if window < time.Second {
				continue
			}
			if allowed := 1 + int(perSec*(window+slack).Seconds()); j-i+1 > allowed {
				t.Fatalf("%d closes in %v, more than the limit allows (%d)", j-i+1, window, allowed)
			}
		}
	}
	span := ts[len(ts)-1].Sub(ts[0])
	if got := float64(n-1) / span.Seconds(); got > perSec*1.03 {
		t.Errorf("%.1f closes/s over the whole backlog, more than 3%% above the limit of %.0f/s", got, perSec)
	}
	t.Logf("%d closes in %v: %.1f/s at a limit of %.0f/s", n, span, float64(n-1)/span.Seconds(), perSec)
}

// TestRouteRateLimit: a kind's own limit holds back that kind only.
func TestRouteRateLimit(t *testing.T) {
	var (
		mu    sync.Mutex
		order []string
	)
	ok := closer.CloserFunc(func(_ context.Context, tk closer.Task) (closer.Result, error) {
		mu.Lock()
		order = append(order, tk.Kind)
		mu.Unlock()
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setupRoutes(t, Config{MaxInFlight: 10}, Options{Routes: map[string]Route{
		DefaultKind: {Closer: ok},
		"reminder":  {Closer: ok, Limit: rate.NewLimiter(1, 1)},
	}})
	due := hdrMillis(tiers.HeaderDue, t0)
	for i := range 3 {
		b.produce(t, fmt.Sprint("r", i), "", due, hdr(tiers.HeaderKind, "reminder"))
	}
	for i := range 20 {
		b.produce(t, fmt.Sprint("o", i), "", due)
	}
	b.waitStats(t, func(s Stats) bool { return s.Closed == 23 })
	// At 1/s the last reminder waits 2s; the other kind does not wait
	// behind it.
	mu.Lock()
	defer mu.Unlock()
	if last := order[len(order)-1]; last != "reminder" {
		t.Errorf("close order %v: the limited kind was not last", order)
	}
}

// TestOneTaskFloodHoldsNoSlots: records of one task id waiting behind its
// running close hold no close slot, so that a flood of them (an order
// scheduled again and again) does not stop the closes of other tasks, here
// of another topic. Were each waiting record to hold a slot, the other
// tasks would wait for all but MaxInFlight of the flood to close, one
// close latency each.
func TestOneTaskFloodHoldsNoSlots(t *testing.T) {
	release := make(chan struct{})
	cr := closer.CloserFunc(func(ctx context.Context, tk closer.Task) (closer.Result, error) {
		if tk.ID == "flood" {
			select {
			case <-release:
			case <-ctx.Done():
				return closer.Result{}, ctx.Err()
			}
		}
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	uniq := "flood" + strconv.FormatInt(time.Now().UnixNano(), 36)
	flood, other := uniq+".cancel", uniq+".other"
	b := setup(t, Config{MaxInFlight: 4, Topics: []string{flood, other}, CloseTimeout: 30 * time.Second, ShutdownTimeout: 30 * time.Second}, cr)
	due := hdrMillis(tiers.HeaderDue, t0)
	var rs []*kgo.Record
	for range 20 {
		rs = append(rs, &kgo.Record{Topic: flood, Key: []byte("flood"), Headers: []kgo.RecordHeader{due}})
	}
	if err := b.cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "records of the flood waiting behind its first close", func() bool {
		b.c.mu.Lock()
		defer b.c.mu.Unlock()
		return len(b.c.keys["flood"]) >= 3
	}, func() string { return fmt.Sprintf("%+v", b.c.Stats()) })
	rs = rs[:0]
	for i := range 5 {
		rs = append(rs, &kgo.Record{Topic: other, Key: fmt.Appendf(nil, "order-%d", i), Headers: []kgo.RecordHeader{due}})
	}
	if err := b.cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.waitStats(t, func(s Stats) bool { return s.Closed == 5 })
	close(release)
	b.waitStats(t, func(s Stats) bool { return s.Closed == 25 })
}
