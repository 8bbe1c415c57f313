package canceller

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestEscapingKey: a key that JSON escaping would blow up (180 kB of "<",
// 1.26 MB escaped) does not crash-loop the canceller: it is too large for
// a task id and goes to the dead-letter topic, and a key of "<" within the
// limit makes a small outcome event.
func TestEscapingKey(t *testing.T) {
	var m closer.Memory
	m.CloseUnknown = true
	b := setup(t, Config{}, &m)
	due := hdrMillis(tiers.HeaderDue, t0)
	huge := strings.Repeat("<", 180_000)
	fits := strings.Repeat("<", tiers.DefaultMaxKeyBytes)
	b.produce(t, huge, "", due)
	b.produce(t, fits, "", due)
	b.produce(t, "after", "", due)
	evs := b.outcomes(t, "after")
	if _, ok := evs[fits]; !ok {
		t.Fatalf("no outcome for the 1024-byte key")
	}
	if n := len(evs[fits].rec.Value); n > 2*tiers.DefaultMaxKeyBytes {
		t.Errorf("outcome event of %d bytes for a %d-byte key", n, tiers.DefaultMaxKeyBytes)
	}
	dl := b.read(t, b.cfg.DeadLetter, huge)[0]
	if v, _ := tiers.Header(dl.Headers, tiers.HeaderReason); !strings.HasPrefix(string(v), string(tiers.ReasonKeyTooLarge)) {
		t.Errorf("dead letter reason %q", v)
	}
	if err := b.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := b.committed(t); got != 3 {
		t.Errorf("committed %d, want 3", got)
	}
}

// TestOutcomeRefused: an outcomes topic that refuses events for good (an
// authorization failure) stops nothing: the events are produced again after
// a backoff, the canceller keeps running and the commit waits for them.
func TestOutcomeRefused(t *testing.T) {
	var closes atomic.Int64
	cr := closer.CloserFunc(func(context.Context, closer.Task) (closer.Result, error) {
		closes.Add(1)
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setup(t, Config{}, cr)
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: b.cfg.Outcomes, Err: kerr.TopicAuthorizationFailed, Count: 3})
	defer fault.Remove()
	due := hdrMillis(tiers.HeaderDue, t0)
	b.produce(t, "a", "", due)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 3 {
		if err := fault.Wait(ctx, i+1); err != nil {
			t.Fatalf("refusal %d: %v", i+1, err)
		}
		waitFor(t, "the retry timer", func() bool { return b.clock.Armed() > 0 }, func() string { return "" })
		b.clock.Advance(kafka.RefusedBackoffMax)
	}
	b.outcomes(t, "a")
	if closes.Load() != 1 {
		t.Errorf("%d closes, want 1", closes.Load())
	}
	if err := b.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := b.committed(t); got != 1 {
		t.Errorf("committed %d, want 1", got)
	}
}

// TestRetryTooLarge: a retry record that does not fit its delay topic (its
// value plus the retry headers) becomes a dead letter that fits, instead of
// stopping the canceller.
func TestRetryTooLarge(t *testing.T) {
	cr := closer.CloserFunc(func(context.Context, closer.Task) (closer.Result, error) {
		return closer.Result{}, errors.New("order store unreachable")
	})
	b := setup(t, Config{RetryBackoff: time.Second, RetryBackoffMax: time.Second}, cr)
	// The retry goes to the smallest tier's topic: make it refuse it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	small := "2000"
	topic := tiers.Topic(b.cfg.Prefix, b.cfg.Tiers.Smallest())
	if _, err := b.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: &small}}, topic); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 4000)
	rand.Read(value) // incompressible
	b.produce(t, "big", string(value), hdrMillis(tiers.HeaderDue, t0))
	dl := b.read(t, b.cfg.DeadLetter, "big")[0]
	if v, _ := tiers.Header(dl.Headers, tiers.HeaderReason); !strings.HasPrefix(string(v), reasonProduceFailed) {
		t.Errorf("dead letter reason %q, want %s", v, reasonProduceFailed)
	}
	if !bytes.Equal(dl.Value, value) {
		t.Errorf("dead letter value of %d bytes, want the record's %d", len(dl.Value), len(value))
	}
	if err := b.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestStopNeverCutsACloseOff: a close running when the stop begins finishes
// with its context intact (the stop waits up to ShutdownTimeout, which
// covers CloseTimeout), and its offset is committed.
func TestStopNeverCutsACloseOff(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var ctxErr atomic.Value
	cr := closer.CloserFunc(func(ctx context.Context, tk closer.Task) (closer.Result, error) {
		if tk.ID == "slow" {
			close(entered)
			<-release
			ctxErr.Store(strconv.Quote(errString(ctx.Err())))
		}
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setup(t, Config{MaxInFlight: 3, CloseTimeout: 10 * time.Second, ShutdownTimeout: 10 * time.Second}, cr)
	due := hdrMillis(tiers.HeaderDue, t0)
	for _, id := range []string{"a", "b", "slow"} {
		b.produce(t, id, "", due)
	}
	<-entered
	b.waitStats(t, func(s Stats) bool { return s.Closed == 2 })
	stopped := make(chan error, 1)
	go func() { stopped <- b.stop() }()
	waitFor(t, "the stop to begin", func() bool { return !b.c.Ready() }, func() string { return "" })
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := ctxErr.Load(); got != `""` {
		t.Errorf("the running close saw its context end with %s", got)
	}
	if got := b.committed(t); got != 3 {
		t.Errorf("committed %d after the stop, want 3", got)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestLastCommitAfterAStuckClose: a close that outlasts the stop (a closer
// that ignores its context) cannot keep the stop from committing what has
// finished: the last commit runs with a context of its own, not the
// stop's, expired by then, which would leave the finished closes to be
// done again by the next owner. The same for a revoke.
func TestLastCommitAfterAStuckClose(t *testing.T) {
	for _, via := range []string{"stop", "revoke"} {
		t.Run(via, func(t *testing.T) {
			release := make(chan struct{})
			entered := make(chan struct{})
			cr := closer.CloserFunc(func(_ context.Context, tk closer.Task) (closer.Result, error) {
				if tk.ID == "stuck" {
					close(entered)
					<-release // ignores its context
				}
				return closer.Result{Outcome: outcome.Closed}, nil
			})
			b := setup(t, Config{MaxInFlight: 3, CloseTimeout: 500 * time.Millisecond, ShutdownTimeout: 500 * time.Millisecond}, cr)
			t.Cleanup(func() { close(release) })
			due := hdrMillis(tiers.HeaderDue, t0)
			for _, id := range []string{"a", "b", "stuck"} {
				b.produce(t, id, "", due)
			}
			<-entered
			b.waitStats(t, func(s Stats) bool { return s.Closed == 2 })
			if via == "stop" {
				if err := b.stop(); err != nil {
					t.Fatalf("Run: %v", err)
				}
			} else {
				b.c.member.Revoked(map[string][]int32{b.cfg.Topics[0]: {0}})
			}
			if got := b.committed(t); got != 2 {
				t.Errorf("committed %d after the %s, want 2 (a and b, not the stuck close)", got, via)
			}
		})
	}
}

// TestKindLabelsBounded: with the log closer taking every kind (no closers
// file), 300 kinds make a bounded number of series: kinds without a route
// are counted as "other".
func TestKindLabelsBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := setupRoutes(t, Config{MaxInFlight: 50}, Options{Registerer: reg})
	due := hdrMillis(tiers.HeaderDue, t0)
	for i := range 300 {
		b.produce(t, "task-"+strconv.Itoa(i), "", due, kgo.RecordHeader{Key: tiers.HeaderKind, Value: []byte("kind-" + strconv.Itoa(i))})
	}
	b.waitStats(t, func(s Stats) bool { return s.Closed == 300 })
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, mf := range mfs {
		series += len(mf.GetMetric())
	}
	if series > 100 {
		t.Errorf("%d series after 300 kinds", series)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && strings.HasPrefix(l.GetValue(), "kind-") {
					t.Fatalf("%s has the kind %q as a label", mf.GetName(), l.GetValue())
				}
			}
		}
	}
	evs := b.outcomes(t, "task-299")
	if evs["task-7"].Kind != "kind-7" {
		t.Errorf("the outcome event lost the kind: %q", evs["task-7"].Kind)
	}
}

// TestResetToEarlierOffset: the partition moved back to an earlier offset:
// the canceller closes the records again (idempotently) and goes on (the
// offsets tracker panicked before).
func TestResetToEarlierOffset(t *testing.T) {
	var m closer.Memory
	m.CloseUnknown = true
	b := setup(t, Config{}, &m)
	due := hdrMillis(tiers.HeaderDue, t0)
	for _, id := range []string{"a", "b", "c"} {
		b.produce(t, id, "", due)
	}
	b.waitStats(t, func(s Stats) bool { return s.Closed == 3 })
	b.c.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{b.cfg.Topics[0]: {0: {Epoch: -1, Offset: 1}}})
	b.waitStats(t, func(s Stats) bool { return s.AlreadyClosed == 2 })
	b.produce(t, "d", "", due)
	b.waitStats(t, func(s Stats) bool { return s.Closed == 4 })
	if err := b.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := b.committed(t); got != 4 {
		t.Errorf("committed %d, want 4", got)
	}
}

// TestLimitsAsTheRouters: with the router's limits raised (the services
// take them from the same flags and variables), a record within them is
// closed. The router forwards such a record; the canceller checked it
// against the default limits and dead-lettered it (headers_too_large,
// value_too_large) without closing it.
func TestLimitsAsTheRouters(t *testing.T) {
	cfg := Config{Limits: tiers.Limits{Headers: 128, ValueBytes: 920000}}
	var m closer.Memory
	m.CloseUnknown = true
	b := setup(t, cfg, &m)
	due := hdrMillis(tiers.HeaderDue, t0)
	many := []kgo.RecordHeader{due}
	for i := range 100 {
		many = append(many, hdr("x-"+strconv.Itoa(i), "v"))
	}
	b.produce(t, "many-headers", "", many...)
	b.produce(t, "large-value", strings.Repeat("v", 910_000), due)
	b.produce(t, "after", "", due)
	evs := b.outcomes(t, "after")
	for _, id := range []string{"many-headers", "large-value"} {
		if ev, ok := evs[id]; !ok || ev.Outcome != outcome.Closed {
			t.Errorf("%s: outcome %q, want closed", id, ev.Outcome)
		}
	}
	if s := b.c.Stats(); s.DeadLettered != 0 || s.Closed != 3 {
		t.Errorf("stats %+v: want 3 closed, none dead-lettered", s)
	}
}
