package canceller

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/httpcloser"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestMaxInFlightByClosers: without --max-in-flight, the closes at once are
// DefaultMaxInFlightBatched when every closer batches, and
// DefaultMaxInFlight when one sends a request per close.
func TestMaxInFlightByClosers(t *testing.T) {
	single, err := httpcloser.New(httpcloser.Config{URL: "http://127.0.0.1:1/close/{id}"})
	if err != nil {
		t.Fatal(err)
	}
	batched, err := httpcloser.New(httpcloser.Config{BatchURL: "http://127.0.0.1:1/close"})
	if err != nil {
		t.Fatal(err)
	}
	perTask := closer.CloserFunc(func(context.Context, closer.Task) (closer.Result, error) {
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	for _, tc := range []struct {
		name string
		o    Options
		want int
	}{
		{"the log closer (no closers)", Options{}, DefaultMaxInFlightBatched},
		{"http with batch_url", Options{Routes: map[string]Route{"a": {Closer: batched}, "b": {Closer: closer.Log{}}}}, DefaultMaxInFlightBatched},
		{"http without batch_url", Options{Routes: map[string]Route{"a": {Closer: batched}, "b": {Closer: single}}}, DefaultMaxInFlight},
		{"a closer that does not say", Options{Closer: perTask}, DefaultMaxInFlight},
	} {
		o, err := tc.o.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if got := o.maxInFlight(); got != tc.want {
			t.Errorf("%s: %d at once, want %d", tc.name, got, tc.want)
		}
	}
	c, err := New(Config{MaxInFlight: 7}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxInFlight() != 7 {
		t.Errorf("--max-in-flight 7 became %d", c.MaxInFlight())
	}
	c.cl.Close()
}

// TestInFlightBytes: the records closing at once hold at most
// MaxInFlightBytes (passed by the last record taken), however many
// MaxInFlight allows.
func TestInFlightBytes(t *testing.T) {
	const n, valueBytes, limit = 20, 1000, 4096
	var (
		mu           sync.Mutex
		running, mx  int
		release      = make(chan struct{})
		releasedOnce sync.Once
	)
	cr := closer.CloserFunc(func(ctx context.Context, tk closer.Task) (closer.Result, error) {
		mu.Lock()
		running++
		mx = max(mx, running)
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
			return closer.Result{}, ctx.Err()
		}
		mu.Lock()
		running--
		mu.Unlock()
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setup(t, Config{MaxInFlight: 100, MaxInFlightBytes: limit, MaxPollRecords: 1}, cr)
	t.Cleanup(func() { releasedOnce.Do(func() { close(release) }) })
	due := hdrMillis(tiers.HeaderDue, t0)
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: b.cfg.Topics[0], Key: fmt.Appendf(nil, "task-%d", i), Value: make([]byte, valueBytes), Headers: []kgo.RecordHeader{due}})
	}
	if err := b.cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Each record counts a little over 1,000 bytes: the fourth passes the
	// limit. The other records are fetched and wait in the client, untaken
	// while the four close; with room, they would be taken at once.
	const want = 4
	poll.Until(t, 10*time.Second, fmt.Sprintf("%d closes at once and the other %d records fetched, not taken", want, n-want), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return running == want && b.c.cl.BufferedFetchRecords() == n-want
	}, func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("%d closing (at most %d), %d records fetched and not taken", running, mx, b.c.cl.BufferedFetchRecords())
	})
	mu.Lock()
	got := mx
	mu.Unlock()
	if got != want {
		t.Errorf("%d closes at once, want %d (%d bytes at most, records of about %d)", got, want, limit, valueBytes)
	}
	releasedOnce.Do(func() { close(release) })
	b.waitStats(t, func(s Stats) bool { return s.Closed == n })
}

// TestCloseGoroutines: close goroutines wait for more work once their
// closes are done, at most MaxInFlight of them, and exit at the stop.
func TestCloseGoroutines(t *testing.T) {
	var mu sync.Mutex
	closed := map[string]int{}
	b := setup(t, Config{MaxInFlight: 4}, closer.CloserFunc(func(_ context.Context, task closer.Task) (closer.Result, error) {
		mu.Lock()
		closed[task.ID]++
		mu.Unlock()
		return closer.Result{Outcome: outcome.Closed}, nil
	}))
	due := hdrMillis(tiers.HeaderDue, t0.Add(-time.Minute))
	const orders = 40
	for i := range orders {
		b.produce(t, fmt.Sprintf("order-%d", i), "", due)
	}
	b.waitStats(t, func(s Stats) bool { return s.Closed == orders })
	// A goroutine that closed the last records may still be on its way to
	// wait, or on its way out when four wait already.
	waitFor(t, "close goroutines waiting for work, at most 4", func() bool {
		n := serving()
		return n >= 1 && n <= 4 && b.c.waiting.Load() == int64(n)
	}, func() string { return fmt.Sprintf("%d serving, %d waiting", serving(), b.c.waiting.Load()) })
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the close goroutines to exit at the stop", func() bool { return serving() == 0 },
		func() string { return fmt.Sprintf("%d serving", serving()) })
	mu.Lock()
	defer mu.Unlock()
	for i := range orders {
		if n := closed[fmt.Sprintf("order-%d", i)]; n != 1 {
			t.Errorf("order-%d closed %d times, want 1", i, n)
		}
	}
}

// serving counts the goroutines in Canceller.serve.
func serving() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "canceller.(*Canceller).serve(")
		}
		buf = make([]byte, 2*len(buf))
	}
}
