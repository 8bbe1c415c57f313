package router

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/testutil/fieldtest"
	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

var (
	seeds   kgo.Opt
	cluster *kfake.Cluster
)

func TestMain(m *testing.M) {
	kfaketest.Main(m, func(c *kfake.Cluster) { cluster, seeds = c, kgo.SeedBrokers(c.ListenAddrs()...) },
		kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
}

// bundle is a router on a fake clock with its own topics, and a client to
// produce and read them.
type bundle struct {
	clock  *clock.Fake
	router *Router
	cfg    Config
	cl     *kgo.Client
	stop   func() error
}

func setup(t *testing.T, cfg Config) *bundle { return setupOpts(t, cfg) }

// setupOpts is setup with extra options for the router's client.
func setupOpts(t *testing.T, cfg Config, extra ...kgo.Opt) *bundle {
	t.Helper()
	prefix := "t" + strconv.FormatInt(time.Now().UnixNano(), 36) + "."
	cfg.Prefix, cfg.Group = prefix, prefix+"router"
	cfg = cfg.WithDefaults()
	fc := clock.NewFake(time.UnixMilli(1_800_000_000_000))
	cl, err := kgo.NewClient(seeds, kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	// Create the topics before the router subscribes.
	for _, topic := range append(cfg.Tiers.Topics(prefix), cfg.Target, cfg.DeadLetter, cfg.Cancellations, cfg.Outcomes) {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Key: []byte("-"), Headers: []kgo.RecordHeader{{Key: tiers.HeaderDue, Value: tiers.FormatMillis(time.UnixMilli(tiers.MinDueMillis))}}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b := start(t, cfg, fc, cl, extra...)
	// The seed records (due in 2000) are forwarded at once: wait for them, so
	// the router is consuming every tier.
	b.waitStats(t, func(s Stats) bool { return s.Forwarded >= int64(cfg.Tiers.Len()) })
	return b
}

// start runs a router of cfg on fc; stop stops it and returns what Run
// returned (later calls return the same).
func start(t *testing.T, cfg Config, fc *clock.Fake, cl *kgo.Client, extra ...kgo.Opt) *bundle {
	t.Helper()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	r, err := New(cfg, Options{Kafka: append([]kgo.Opt{seeds}, extra...), Clock: fc, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	b := &bundle{clock: fc, router: r, cfg: r.cfg, cl: cl}
	var (
		once sync.Once
		err2 error
	)
	b.stop = func() error {
		once.Do(func() { cancel(); err2 = <-done })
		return err2
	}
	t.Cleanup(func() {
		if err := b.stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("router: %v", err)
		}
	})
	return b
}

// waitStats waits until cond holds for the router's counters, bounded.
func (b *bundle) waitStats(t *testing.T, cond func(Stats) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond(b.router.Stats()) {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out; stats %+v", b.router.Stats())
		case <-tick.C:
		}
	}
}

// waitArmed waits until the router has armed its wake timer for at (it
// holds a record that is not due), bounded. A timer armed for any other time
// fails the test: the router would act early or late.
func (b *bundle) waitArmed(t *testing.T, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for b.router.wakeAt.Load() != at.UnixNano() {
		select {
		case <-ctx.Done():
			armed := "not armed"
			if ns := b.router.wakeAt.Load(); ns != 0 {
				armed = "armed for " + time.Unix(0, ns).Sub(at).String() + " from the expected time"
			}
			t.Fatalf("router never armed its timer for %v (%s); stats %+v", at, armed, b.router.Stats())
		case <-tick.C:
		}
	}
}

// produce produces a delay record of topic with key, stamped ts, due at due.
func (b *bundle) produce(t *testing.T, topic, key string, ts time.Time, due time.Time) {
	t.Helper()
	b.produceRec(t, delayRecord(topic, key, ts, due))
}

// read returns the records of topic with key, in order.
func (b *bundle) read(t *testing.T, topic, key string, want int) []*kgo.Record {
	t.Helper()
	return b.readWithin(t, topic, key, want, 10*time.Second)
}

// readWithin is read with its own bound.
func (b *bundle) readWithin(t *testing.T, topic, key string, want int, bound time.Duration) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(seeds, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: got %d records with key %s, want %d", topic, len(out), key, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) == key {
				out = append(out, r)
			}
		})
	}
	return out
}

// TestHoldHopForward follows one record through the tiers on a fake clock:
// it hops when its tier wait ends, waits in the timer for the last stretch
// and is forwarded at its due time, not before.
func TestHoldHopForward(t *testing.T) {
	table, _ := tiers.Parse("1s,5s,30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	due := t0.Add(37 * time.Second)
	b.produce(t, tiers.Topic(b.cfg.Prefix, 30*time.Second), "order-1", t0, due)
	b.waitArmed(t, t0.Add(30*time.Second))
	before := b.router.Stats()

	b.clock.Advance(30*time.Second - time.Millisecond) // one ms before the tier wait ends
	if s := b.router.Stats(); s.Hopped != before.Hopped || s.Forwarded != before.Forwarded {
		t.Fatalf("acted before the tier wait ended: %+v", s)
	}
	b.clock.Advance(time.Millisecond) // 30s: 7s left -> the 5s tier
	b.waitStats(t, func(s Stats) bool { return s.Hopped == before.Hopped+1 })
	hop := b.read(t, tiers.Topic(b.cfg.Prefix, 5*time.Second), "order-1", 1)[0]
	if v, _ := tiers.Header(hop.Headers, tiers.HeaderHops); string(v) != "1" {
		t.Errorf("hops header %q, want 1", v)
	}
	if !hop.Timestamp.Equal(t0.Add(30 * time.Second)) {
		t.Errorf("hop timestamp %v, want the router's clock %v", hop.Timestamp, t0.Add(30*time.Second))
	}
	b.waitArmed(t, t0.Add(35*time.Second))

	b.clock.Advance(5 * time.Second) // 35s: 2s left -> the 1s tier
	b.waitStats(t, func(s Stats) bool { return s.Hopped == before.Hopped+2 })
	b.waitArmed(t, t0.Add(36*time.Second))
	b.clock.Advance(time.Second) // 36s: 1s left, not less than the smallest tier -> 1s tier again
	b.waitStats(t, func(s Stats) bool { return s.Hopped == before.Hopped+3 })
	b.waitArmed(t, due)
	b.clock.Advance(time.Second - time.Millisecond) // 1 ms before due
	if s := b.router.Stats(); s.Forwarded != before.Forwarded {
		t.Fatalf("forwarded early: %+v", s)
	}
	b.clock.Advance(time.Millisecond)
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+1 })
	out := b.read(t, b.cfg.Target, "order-1", 1)[0]
	if v, _ := tiers.Header(out.Headers, tiers.HeaderForwarded); !bytes.Equal(v, tiers.FormatMillis(due)) {
		t.Errorf("forwarded at %s, want the due time %d", v, due.UnixMilli())
	}
	if v, _ := tiers.Header(out.Headers, tiers.HeaderPath); string(v) != "30s,5s,1s*2" {
		t.Errorf("path %q, want 30s,5s,1s*2", v)
	}
}

// TestShortDelayUsesTimer: a record due before its tier wait ends is held in
// the timer and fires at its due time even behind a record that waits longer.
func TestShortDelayUsesTimer(t *testing.T) {
	table, _ := tiers.Parse("10s,1m")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 10*time.Second)
	b.produce(t, topic, "long", t0, t0.Add(10*time.Second))
	b.produce(t, topic, "short", t0, t0.Add(2*time.Second))
	b.waitArmed(t, t0.Add(2*time.Second))
	before := b.router.Stats()
	b.clock.Advance(2 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+1 })
	b.read(t, b.cfg.Target, "short", 1)
	b.clock.Advance(8 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+2 })
	b.read(t, b.cfg.Target, "long", 1)
}

// TestPastDueFiresAtOnce: no clock movement is needed for a due time in the
// past.
func TestPastDueFiresAtOnce(t *testing.T) {
	table, _ := tiers.Parse("1m")
	b := setup(t, Config{Tiers: table})
	before := b.router.Stats()
	b.produce(t, tiers.Topic(b.cfg.Prefix, time.Minute), "late", b.clock.Now(), b.clock.Now().Add(-time.Hour))
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+1 })
	b.read(t, b.cfg.Target, "late", 1)
}

// TestTimerFullWaitsInPlace: with the in-memory timer full, a record due
// before its tier wait ends waits with the records of its partition instead
// (counting towards pausing it), and still fires at its due time.
func TestTimerFullWaitsInPlace(t *testing.T) {
	table, _ := tiers.Parse("10s")
	b := setup(t, Config{Tiers: table, TimerCapacity: 1})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 10*time.Second)
	for i, d := range []time.Duration{2 * time.Second, 3 * time.Second, 4 * time.Second} {
		b.produce(t, topic, "k"+strconv.Itoa(i), t0, t0.Add(d))
	}
	b.waitArmed(t, t0.Add(2*time.Second))
	before := b.router.Stats()
	for i := range 3 {
		b.clock.Advance(time.Second)
		if i == 0 {
			b.clock.Advance(time.Second) // to t0+2s
		}
		b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+int64(i)+1 })
		out := b.read(t, b.cfg.Target, "k"+strconv.Itoa(i), 1)[0]
		want := tiers.FormatMillis(t0.Add(time.Duration(i+2) * time.Second))
		if v, _ := tiers.Header(out.Headers, tiers.HeaderForwarded); !bytes.Equal(v, want) {
			t.Errorf("k%d forwarded at %s, want %s", i, v, want)
		}
		if i < 2 {
			b.waitArmed(t, t0.Add(time.Duration(i+3)*time.Second))
		}
	}
}

// TestPauseWhenFull: a partition that holds MaxHeldPerPartition records is
// paused, and resumed once they drain.
func TestPauseWhenFull(t *testing.T) {
	table, _ := tiers.Parse("5s")
	b := setup(t, Config{Tiers: table, MaxHeldPerPartition: 4})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 5*time.Second)
	for i := range 6 {
		b.produce(t, topic, "k"+strconv.Itoa(i), t0, t0.Add(5*time.Second))
	}
	b.waitStats(t, func(s Stats) bool { return s.Paused == 1 })
	before := b.router.Stats()
	b.waitArmed(t, t0.Add(5*time.Second))
	b.clock.Advance(5 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+6 && s.Paused == 0 })
}

// TestOutOfOrderReady: ready times rise with the offset only roughly (a
// producer's linger appends a record after one that a faster producer
// stamped later). The earlier-ready record must not wait for the one before
// it in the partition.
func TestOutOfOrderReady(t *testing.T) {
	table, _ := tiers.Parse("5s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 5*time.Second)
	// Stamped 10 ms apart, in the past of the router's clock (a timestamp
	// ahead of it counts from now: see TestClockSkew).
	b.produce(t, topic, "stamped-later", t0, t0.Add(20*time.Second))
	b.produce(t, topic, "due-first", t0.Add(-10*time.Millisecond), t0.Add(5*time.Second-10*time.Millisecond))
	b.waitArmed(t, t0.Add(5*time.Second-10*time.Millisecond))
	before := b.router.Stats()
	b.clock.Advance(5*time.Second - 10*time.Millisecond)
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+1 })
	out := b.read(t, b.cfg.Target, "due-first", 1)[0]
	if v, _ := tiers.Header(out.Headers, tiers.HeaderForwarded); !bytes.Equal(v, tiers.FormatMillis(t0.Add(5*time.Second-10*time.Millisecond))) {
		t.Errorf("forwarded at %s, want the due time %d", v, t0.Add(5*time.Second-10*time.Millisecond).UnixMilli())
	}
	if s := b.router.Stats(); s.Hopped != before.Hopped {
		t.Errorf("the later record hopped before its tier wait ended: %+v", s)
	}
}

// TestBatchWindow: with a batch window, the router wakes on the window's
// grid: what falls due within one window leaves together at its end, never
// before its due time, and a due time on the grid is not put off.
func TestBatchWindow(t *testing.T) {
	table, _ := tiers.Parse("1s")
	b := setup(t, Config{Tiers: table, BatchWindow: 10 * time.Millisecond})
	t0 := b.clock.Now() // on the grid: a whole second
	topic := tiers.Topic(b.cfg.Prefix, time.Second)
	dues := []time.Duration{time.Millisecond, 4 * time.Millisecond, 9 * time.Millisecond, 20 * time.Millisecond}
	for i, d := range dues {
		b.produce(t, topic, "k"+strconv.Itoa(i), t0, t0.Add(d))
	}
	b.waitStats(t, func(s Stats) bool { return s.Held == int64(len(dues)) })
	b.waitArmed(t, t0.Add(10*time.Millisecond))
	before := b.router.Stats()
	b.clock.Advance(9 * time.Millisecond) // every one of the window is due, the window is not over
	if s := b.router.Stats(); s.Forwarded != before.Forwarded {
		t.Fatalf("forwarded before the window ended: %+v", s)
	}
	b.clock.Advance(time.Millisecond)
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+3 })
	for i := range 3 {
		out := b.read(t, b.cfg.Target, "k"+strconv.Itoa(i), 1)[0]
		if v, _ := tiers.Header(out.Headers, tiers.HeaderForwarded); !bytes.Equal(v, tiers.FormatMillis(t0.Add(10*time.Millisecond))) {
			t.Errorf("k%d forwarded at %s, want the window's end %d", i, v, t0.Add(10*time.Millisecond).UnixMilli())
		}
	}
	b.waitArmed(t, t0.Add(20*time.Millisecond)) // on the grid: not the next window
	b.clock.Advance(10 * time.Millisecond)
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+4 })
}

// TestBatchWindowBounds: a negative window, or one above a second, is
// refused, naming BatchWindow.
func TestBatchWindowBounds(t *testing.T) {
	c := Config{BatchWindow: -time.Millisecond}.WithDefaults()
	if got := fieldtest.Fields(c.Validate()); !slices.Equal(got, []string{"BatchWindow"}) {
		t.Errorf("a negative window: problems of %v, want one of BatchWindow", got)
	}
	c.BatchWindow = 2 * time.Second
	if got := fieldtest.Fields(c.Validate()); !slices.Equal(got, []string{"BatchWindow"}) {
		t.Errorf("a window of 2s: problems of %v, want one of BatchWindow", got)
	}
}
