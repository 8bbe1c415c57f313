package router

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cancels"
	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// cancel produces the cancellation c.
func (b *bundle) cancel(t *testing.T, c tiers.Cancellation) {
	t.Helper()
	rec, err := tiers.BuildCancellation(b.cfg.Prefix, c)
	if err != nil {
		t.Fatal(err)
	}
	rec.Topic = b.cfg.Cancellations
	b.produceRec(t, rec)
}

// outcomeOf reads the outcome event of task id.
func (b *bundle) outcomeOf(t *testing.T, id string) outcome.Event {
	t.Helper()
	ev, err := outcome.Unmarshal(b.read(t, b.cfg.Outcomes, id, 1)[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestCancelBeforeDue: deadlines whose task was cancelled before they were
// due never reach their target, wherever they wait (tier, timer);
// each is reported by one outcome event "cancelled", of the kind of its
// hourglass-kind, or Config.DefaultKind without one. A deadline scheduled
// after the cancellation, one of another due time than a cancellation that
// names its due, and one whose cancellation was withdrawn are forwarded.
func TestCancelBeforeDue(t *testing.T) {
	table, _ := tiers.Parse("1s,10s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	long := tiers.Topic(b.cfg.Prefix, 10*time.Second)
	sched := func(ts time.Time) kgo.RecordHeader {
		return kgo.RecordHeader{Key: tiers.HeaderScheduled, Value: tiers.FormatMillis(ts)}
	}
	b.produceRec(t, delayRecord(long, "hop", t0, t0.Add(12*time.Second), sched(t0), kgo.RecordHeader{Key: tiers.HeaderKind, Value: []byte("reminder")}))
	b.produceRec(t, delayRecord(long, "timer", t0, t0.Add(3*time.Second)))                             // no scheduled header: its timestamp
	b.produceRec(t, delayRecord(long, "later", t0, t0.Add(3*time.Second), sched(t0.Add(time.Second)))) // scheduled after the cancellation
	b.produceRec(t, delayRecord(long, "named", t0, t0.Add(3*time.Second), sched(t0)))
	b.produceRec(t, delayRecord(long, "withdrawn", t0, t0.Add(3*time.Second), sched(t0)))
	for _, c := range []tiers.Cancellation{
		{ID: "hop", At: t0}, {ID: "timer", At: t0}, {ID: "later", At: t0},
		{ID: "named", At: t0, Due: t0.Add(4 * time.Second)}, // another deadline of the task
		{ID: "withdrawn", At: t0}, {ID: "withdrawn", At: t0, Withdrawn: true},
	} {
		b.cancel(t, c)
	}
	before := b.router.Stats()
	b.clock.Advance(3 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Cancelled == before.Cancelled+1 && s.Forwarded == before.Forwarded+3 })
	for _, id := range []string{"later", "named", "withdrawn"} {
		b.read(t, b.cfg.Target, id, 1)
	}
	ev := b.outcomeOf(t, "timer")
	if ev.Outcome != outcome.Cancelled || ev.DueMs != t0.Add(3*time.Second).UnixMilli() || ev.ClosedMs != t0.Add(3*time.Second).UnixMilli() || ev.Kind != DefaultKind {
		t.Errorf("outcome %+v, want cancelled, due and dropped at t0+3s, kind %s", ev, DefaultKind)
	}

	// "hop" waited out the 10s tier, hopped to the 1s tier (keeping when it
	// was scheduled) and is dropped when due.
	b.clock.Advance(7 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Hopped == before.Hopped+1 })
	b.clock.Advance(2 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Cancelled == before.Cancelled+2 })
	if ev := b.outcomeOf(t, "hop"); ev.Path != "10s,1s" || ev.Hops != 1 || ev.ScheduledMs != t0.UnixMilli() || ev.Kind != "reminder" {
		t.Errorf("hop's outcome %+v, want path 10s,1s, 1 hop, scheduled at t0, kind reminder", ev)
	}
	if s := b.router.Stats(); s.Forwarded != before.Forwarded+3 {
		t.Errorf("forwarded %d, want 3: a cancelled deadline reached its target", s.Forwarded-before.Forwarded)
	}
}

// TestCancelCoversRetryOfUnscheduledRecord: a deadline produced without
// hourglass-scheduled (kcat, another language) and forwarded without a hop
// keeps when it was scheduled on its target record, so that the
// canceller's retry of its close (stamped when the close failed, headers
// passed on) is still matched by a cancellation of that deadline made
// before the retry: the order was paid while its close was failing.
func TestCancelCoversRetryOfUnscheduledRecord(t *testing.T) {
	table, _ := tiers.Parse("1s,10s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	short := tiers.Topic(b.cfg.Prefix, time.Second)
	deadline := t0.Add(500 * time.Millisecond)
	b.produceRec(t, delayRecord(short, "paid", t0, deadline)) // no hourglass-scheduled
	b.waitArmed(t, deadline)
	before := b.router.Stats()
	b.clock.Advance(500 * time.Millisecond)
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+1 })
	out := b.read(t, b.cfg.Target, "paid", 1)[0]

	// Paid at t0+600ms, after the deadline was due (late), naming it.
	b.cancel(t, tiers.Cancellation{ID: "paid", At: t0.Add(600 * time.Millisecond), Due: deadline})
	// The close failed; at t0+700ms the canceller schedules attempt 2 as
	// canceller.retry does: stamped now, the target record's headers.
	b.clock.Advance(200 * time.Millisecond)
	now := b.clock.Now()
	retry := &kgo.Record{Topic: short, Key: out.Key, Value: out.Value, Timestamp: now,
		Headers: record.Onward(out.Headers,
			kgo.RecordHeader{Key: tiers.HeaderDue, Value: tiers.FormatMillis(now.Add(time.Second))},
			kgo.RecordHeader{Key: tiers.HeaderTarget, Value: []byte(out.Topic)},
			kgo.RecordHeader{Key: tiers.HeaderAttempt, Value: []byte("2")},
			kgo.RecordHeader{Key: tiers.HeaderDeadline, Value: tiers.FormatMillis(deadline)},
		)}
	b.produceRec(t, retry)
	b.waitArmed(t, now.Add(time.Second))
	b.clock.Advance(time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Cancelled+s.Forwarded == before.Cancelled+before.Forwarded+2 })
	if s := b.router.Stats(); s.Cancelled != before.Cancelled+1 {
		t.Fatalf("the retry of the cancelled deadline was forwarded (stats %+v): it lost when its deadline was scheduled", s)
	}
	if ev := b.outcomeOf(t, "paid"); ev.ScheduledMs != t0.UnixMilli() || ev.DeadlineMs != deadline.UnixMilli() {
		t.Errorf("outcome %+v, want the deadline scheduled at t0, due at t0+500ms", ev)
	}
}

// TestReschedule: a cancellation and a deadline scheduled a millisecond
// after it (tiers.Scheduler.Reschedule) move a deadline: the old one never
// fires, the new one fires once, at its time.
func TestReschedule(t *testing.T) {
	table, _ := tiers.Parse("1s,10s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	s, err := tiers.NewScheduler(b.cl, table, tiers.WithPrefix(b.cfg.Prefix), tiers.WithClock(b.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.Schedule(ctx, tiers.Task{ID: "order-7", Due: t0.Add(5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reschedule(ctx, tiers.Task{ID: "order-7", Due: t0.Add(8 * time.Second)}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	before := b.router.Stats()
	b.clock.Advance(5 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Cancelled == before.Cancelled+1 })
	b.clock.Advance(3 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+1 })
	out := b.read(t, b.cfg.Target, "order-7", 1)[0]
	if v, _ := tiers.Header(out.Headers, tiers.HeaderDue); string(v) != strconv.FormatInt(t0.Add(8*time.Second).UnixMilli(), 10) {
		t.Errorf("forwarded the deadline due %s, want the new one", v)
	}
	if s := b.router.Stats(); s.Cancelled != before.Cancelled+1 || s.Forwarded != before.Forwarded+1 {
		t.Errorf("stats %+v: want one cancelled and one forwarded", s)
	}
}

// TestCancelAfterRestart: a cancellation acknowledged before a router
// stops is honoured by the router that starts after it, which rebuilds its
// store from the topic; an invalid cancellation is counted, not applied.
func TestCancelAfterRestart(t *testing.T) {
	table, _ := tiers.Parse("10s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 10*time.Second)
	b.produce(t, topic, "kept", t0, t0.Add(5*time.Second))
	b.produce(t, topic, "fires", t0, t0.Add(5*time.Second))
	b.cancel(t, tiers.Cancellation{ID: "kept", At: t0})
	bad := &kgo.Record{Topic: b.cfg.Cancellations, Key: []byte("fires"), Value: []byte{}, Timestamp: t0,
		Headers: []kgo.RecordHeader{{Key: tiers.HeaderDue, Value: []byte("soon")}}}
	b.produceRec(t, bad)
	b.waitArmed(t, t0.Add(5*time.Second))
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}

	fc := clock.NewFake(t0)
	b2 := start(t, b.cfg, fc, b.cl)
	b2.waitArmed(t, t0.Add(5*time.Second))
	fc.Advance(5 * time.Second)
	b2.waitStats(t, func(s Stats) bool { return s.Cancelled == 1 && s.Forwarded >= 1 })
	b2.read(t, b.cfg.Target, "fires", 1)
	if ev := b2.outcomeOf(t, "kept"); ev.Outcome != outcome.Cancelled {
		t.Errorf("outcome %+v, want cancelled", ev)
	}
}

// TestCancelBehindOpenTransaction: a writer begins a transaction on the
// cancellations topic and leaves it open (a hostile client, or a service
// killed in the middle of a reschedule). Cancellations acknowledged after
// it, five seconds before their deadlines, still stop every deadline; the
// open transaction holds only the deadline of the task id it wrote, until
// it aborts.
func TestCancelBehindOpenTransaction(t *testing.T) {
	table, _ := tiers.Parse("10s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 10*time.Second)
	txn, err := kgo.NewClient(seeds, kgo.TransactionalID(b.cfg.Prefix+"open"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	rec, err := tiers.BuildCancellation(b.cfg.Prefix, tiers.Cancellation{ID: "in-txn", At: t0})
	if err != nil {
		t.Fatal(err)
	}
	rec.Topic = b.cfg.Cancellations
	if err := txn.ProduceSync(t.Context(), rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		id := "paid-" + strconv.Itoa(i)
		b.produce(t, topic, id, t0, t0.Add(5*time.Second))
		b.cancel(t, tiers.Cancellation{ID: id, At: t0})
	}
	b.produce(t, topic, "in-txn", t0, t0.Add(5*time.Second))
	b.produce(t, topic, "unpaid", t0, t0.Add(5*time.Second))
	b.waitArmed(t, t0.Add(5*time.Second))
	before := b.router.Stats()
	b.clock.Advance(5 * time.Second)
	b.waitStats(t, func(s Stats) bool {
		return s.Cancelled == before.Cancelled+n && s.Forwarded == before.Forwarded+1 && s.HeldByTransaction == 1
	})
	b.read(t, b.cfg.Target, "unpaid", 1)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+2 && s.Gated == 0 })
	b.read(t, b.cfg.Target, "in-txn", 1)
	if s := b.router.Stats(); s.Cancelled != before.Cancelled+n {
		t.Errorf("stats %+v: want %d cancelled", s, n)
	}
}

// TestCancelCheckedLate: a router that reaches a deadline 61 minutes after
// it was due (an outage longer than --cancellation-grace) still finds the
// cancellation that named it: a cancellation is kept as long as a deadline
// it covers can exist. The late check is counted.
func TestCancelCheckedLate(t *testing.T) {
	table, _ := tiers.Parse("10s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 10*time.Second)
	due := t0.Add(5 * time.Second)
	b.produce(t, topic, "late", t0, due)
	b.cancel(t, tiers.Cancellation{ID: "late", At: t0, Due: due})
	b.waitArmed(t, due)
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}

	fc := clock.NewFake(due.Add(61 * time.Minute))
	b2 := start(t, b.cfg, fc, b.cl)
	b2.waitStats(t, func(s Stats) bool { return s.Cancelled+s.Forwarded >= 1 })
	if s := b2.router.Stats(); s.Cancelled != 1 {
		t.Fatalf("stats %+v: the deadline checked 61 minutes late was not cancelled", s)
	}
	if ev := b2.outcomeOf(t, "late"); ev.Outcome != outcome.Cancelled {
		t.Errorf("outcome %+v, want cancelled", ev)
	}
	if n := testutil.ToFloat64(b2.router.metrics.lateChecks); n != 1 {
		t.Errorf("late checks %v, want 1", n)
	}
}

// TestCancellationLimits: records of the cancellations topic outside the
// limits of a deadline neither fill the store nor call anything off: keys
// longer than a deadline's, a due time further from the cancellation than
// --max-delay, one in the year 31 million, a time a century ahead of the
// router's clock (it would cover every deadline its task is yet to be
// given). An invalid record withdraws its task's cancellation, as the
// compacted topic, which keeps only that record, would tell a router that
// reads it later. Each is counted by reason.
func TestCancellationLimits(t *testing.T) {
	table, _ := tiers.Parse("10s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 10*time.Second)
	big, err := kgo.NewClient(seeds, kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	const bigKeys = 5
	for i := range bigKeys {
		key := strings.Repeat(strconv.Itoa(i), 600<<10)
		rec := &kgo.Record{Topic: b.cfg.Cancellations, Key: []byte(key), Value: []byte{}, Timestamp: t0}
		if err := big.ProduceSync(t.Context(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for id, due := range map[string]string{
		"far":  string(tiers.FormatMillis(t0.AddDate(10, 0, 0))), // more than --max-delay after the cancellation
		"huge": "978000000000000000",                             // the year 31 million
	} {
		b.produceRec(t, &kgo.Record{Topic: b.cfg.Cancellations, Key: []byte(id), Value: []byte{}, Timestamp: t0,
			Headers: []kgo.RecordHeader{{Key: tiers.HeaderDue, Value: []byte(due)}}})
	}
	b.cancel(t, tiers.Cancellation{ID: "ahead", At: t0.AddDate(100, 0, 0)})
	b.cancel(t, tiers.Cancellation{ID: "replaced", At: t0})
	b.produceRec(t, &kgo.Record{Topic: b.cfg.Cancellations, Key: []byte("replaced"), Value: []byte{}, Timestamp: t0,
		Headers: []kgo.RecordHeader{{Key: tiers.HeaderDue, Value: []byte("soon")}}})
	sched := kgo.RecordHeader{Key: tiers.HeaderScheduled, Value: tiers.FormatMillis(t0.Add(time.Second))}
	b.produceRec(t, delayRecord(topic, "ahead", t0, t0.Add(5*time.Second), sched))
	b.produce(t, topic, "replaced", t0, t0.Add(5*time.Second))
	b.waitArmed(t, t0.Add(5*time.Second))
	before := b.router.Stats()
	b.clock.Advance(5 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+2 })
	if s := b.router.Stats(); s.Cancelled != before.Cancelled {
		t.Errorf("stats %+v: a deadline was cancelled", s)
	}
	if n := b.router.store.Len(); n != 1 {
		t.Errorf("the store holds %d cancellations, want 1 (ahead, which calls nothing off now)", n)
	}
	for reason, want := range map[tiers.Reason]float64{tiers.ReasonKeyTooLarge: bigKeys, tiers.ReasonDueTooFar: 1, tiers.ReasonDueImplausible: 1, cancels.ReasonAhead: 1, tiers.ReasonDueNotNumber: 1} {
		if n := testutil.ToFloat64(b.router.metrics.invalidCancellations.WithLabelValues(string(reason))); n != want {
			t.Errorf("invalid cancellations %s: %v, want %v", reason, n, want)
		}
	}
}
