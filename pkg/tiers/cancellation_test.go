package tiers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestCancellationCovers(t *testing.T) {
	at := testNow
	due := at.Add(time.Minute)
	for _, tc := range []struct {
		name           string
		c              Cancellation
		scheduled, due time.Time
		want           bool
	}{
		{"every deadline", Cancellation{ID: "a", At: at}, at.Add(-time.Hour), due, true},
		{"scheduled at the same instant", Cancellation{ID: "a", At: at}, at, due, true},
		{"scheduled after it", Cancellation{ID: "a", At: at}, at.Add(time.Millisecond), due, false},
		{"the named deadline", Cancellation{ID: "a", At: at, Due: due}, at, due, true},
		{"the named deadline, to the millisecond", Cancellation{ID: "a", At: at, Due: due.Add(300 * time.Microsecond)}, at, due, true},
		{"another deadline", Cancellation{ID: "a", At: at, Due: due.Add(time.Millisecond)}, at, due, false},
		{"withdrawn", Cancellation{ID: "a", At: at, Withdrawn: true}, at, due, false},
	} {
		if got := tc.c.Covers(tc.scheduled, tc.due); got != tc.want {
			t.Errorf("%s: Covers = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCancellationRoundTrip(t *testing.T) {
	for _, c := range []Cancellation{
		{ID: "order-1", At: testNow},
		{ID: "order-2", At: testNow, Due: testNow.Add(30 * time.Minute)},
		{ID: "order-3", At: testNow, Withdrawn: true},
	} {
		r, err := BuildCancellation("p.", c)
		if err != nil {
			t.Fatal(err)
		}
		if r.Topic != "p.cancellations" || string(r.Key) != c.ID || !r.Timestamp.Equal(c.At) || (r.Value == nil) != c.Withdrawn {
			t.Errorf("%s: record %+v", c.ID, r)
		}
		got, err := DecodeCancellation(r)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		if got.ID != c.ID || !got.At.Equal(c.At) || got.Due.UnixMilli() != c.Due.UnixMilli() || got.Due.IsZero() != c.Due.IsZero() || got.Withdrawn != c.Withdrawn {
			t.Errorf("%s: decoded %+v, want %+v", c.ID, got, c)
		}
	}
}

func TestCancellationInvalid(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c      Cancellation
		reason string // of BuildCancellation's error
	}{
		{"no id", Cancellation{At: testNow}, "no task id"},
		{"no time", Cancellation{ID: "a"}, "no time"},
		{"due before 1970", Cancellation{ID: "a", At: testNow, Due: time.UnixMilli(-5)}, "due_implausible: due time -5 in unix milliseconds is 1969-12-31T23:59:59.995Z, before 2000"},
		{"due in seconds", Cancellation{ID: "a", At: testNow, Due: time.UnixMilli(testNow.Unix())}, "it looks like unix seconds"},
	} {
		if _, err := BuildCancellation("p.", tc.c); err == nil || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.reason)
		}
	}
	rec := func(key string, hs ...kgo.RecordHeader) *kgo.Record {
		return &kgo.Record{Key: []byte(key), Value: []byte{}, Timestamp: testNow, Headers: hs}
	}
	for _, tc := range []struct {
		name string
		r    *kgo.Record
		want Reason
	}{
		{"no key", rec(""), ReasonKeyMissing},
		{"due not a number", rec("a", kgo.RecordHeader{Key: HeaderDue, Value: []byte("soon")}), ReasonDueNotNumber},
		{"due twice", rec("a", kgo.RecordHeader{Key: HeaderDue, Value: []byte("1767225600000")}, kgo.RecordHeader{Key: HeaderDue, Value: []byte("1767225600001")}), ReasonDuplicateHeader},
		{"due in seconds", rec("a", kgo.RecordHeader{Key: HeaderDue, Value: []byte("1767225600")}), ReasonDueImplausible},
		{"due in nanoseconds", rec("a", kgo.RecordHeader{Key: HeaderDue, Value: []byte("1767225600000000000")}), ReasonDueImplausible},
		{"version 2", rec("a", kgo.RecordHeader{Key: HeaderVersion, Value: []byte("2")}), ReasonVersionUnsupported},
	} {
		_, err := DecodeCancellation(tc.r)
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Reason != tc.want {
			t.Errorf("%s: error %v, want reason %s", tc.name, err, tc.want)
		}
	}
	// Headers of the schedule contract that mean nothing here are ignored.
	if _, err := DecodeCancellation(rec("a", kgo.RecordHeader{Key: HeaderTarget, Value: []byte("a/b")})); err != nil {
		t.Errorf("a target header: %v", err)
	}
}

// TestSchedulerCancel: Cancel produces the cancellation, and reports one
// acknowledged at or after the due time it names as ErrLate.
func TestSchedulerCancel(t *testing.T) {
	t.Parallel()
	s, b := setupScheduler(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Cancel(ctx, "order-1", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, "order-2", b.clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, "order-3", b.clock.Now()); !errors.Is(err, ErrLate) {
		t.Errorf("a cancellation acknowledged at the due time: %v, want ErrLate", err)
	}
	// The two partitions of the topic do not keep the order between them.
	seen := map[string]bool{}
	for _, r := range readAll(t, b.client, "test.cancellations", 3) {
		c, err := DecodeCancellation(r)
		if err != nil || !c.At.Equal(b.clock.Now()) {
			t.Errorf("record %+v: %+v, %v; want a cancellation at the clock's time", r, c, err)
		}
		seen[c.ID] = true
	}
	if len(seen) != 3 || !seen["order-1"] || !seen["order-2"] || !seen["order-3"] {
		t.Errorf("cancellations of %v, want order-1, order-2 and order-3", seen)
	}
}

// TestSchedulerCancelLateSubMillisecond: a due time finer than a
// millisecond names the deadline due at its millisecond (the header and
// the router's due time are truncated to it): a cancellation acknowledged
// in that millisecond, after the router may have forwarded the deadline, is
// late, though it is before the due time given.
func TestSchedulerCancelLateSubMillisecond(t *testing.T) {
	t.Parallel()
	s, b := setupScheduler(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The deadline of a task scheduled with this due time fires at testNow.
	due := testNow.Add(600 * time.Microsecond)
	b.clock.Advance(300 * time.Microsecond) // acknowledged at testNow+0.3ms
	if err := s.Cancel(ctx, "order-1", due); !errors.Is(err, ErrLate) {
		t.Errorf("Cancel acknowledged 0.3 ms after the deadline's due time: %v, want ErrLate", err)
	}
	if err := s.Reschedule(ctx, Task{ID: "order-2", Due: testNow.Add(time.Hour)}, due); !errors.Is(err, ErrLate) {
		t.Errorf("Reschedule acknowledged 0.3 ms after the deadline's due time: %v, want ErrLate", err)
	}
}

// TestSchedulerRescheduleTransactional: on a transactional client both
// records of a reschedule commit together, the new deadline a millisecond
// after the cancellation, so that the cancellation does not cover it.
func TestSchedulerRescheduleTransactional(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, append(DefaultTable().Topics("test."), "test.cancellations")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("reschedule-test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	clock := &fakeClock{now: testNow}
	s, err := NewScheduler(cl, DefaultTable(), WithPrefix("test."), WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	task := Task{ID: "order-9", Due: testNow.Add(40 * time.Minute)}
	if err := s.Reschedule(ctx, task, time.Time{}); err != nil {
		t.Fatal(err)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rd.Close)
	cr, dr := readAll(t, rd, "test.cancellations", 1)[0], readAll(t, rd, "test.delay.30m", 1)[0]
	can, err := DecodeCancellation(cr)
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeRecord(dr)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Scheduled.Equal(testNow.Add(time.Millisecond)) || can.Covers(m.Scheduled, m.Due) || !can.Covers(testNow, m.Due) {
		t.Errorf("cancellation %+v and new deadline %+v: the cancellation must cover what was scheduled until now, not the new deadline", can, m)
	}
}

// readAll reads want records of topic from its start, bounded in time.
func readAll(t *testing.T, cl *kgo.Client, topic string, want int) []*kgo.Record {
	t.Helper()
	cl.AddConsumeTopics(topic)
	defer cl.PurgeTopicsFromConsuming(topic)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d records, want %d", topic, len(out), want)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// TestSchedulerCancellationsTopic: WithCancellationsTopic sends Cancel to
// the router's --cancellations-topic.
func TestSchedulerCancellationsTopic(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "shop.cancels"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	s, err := NewScheduler(cl, DefaultTable(), WithCancellationsTopic("shop.cancels"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Cancel(ctx, "order-1", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if r := readAll(t, cl, "shop.cancels", 1)[0]; string(r.Key) != "order-1" {
		t.Errorf("record %+v, want the cancellation of order-1", r)
	}
}
