package recorder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/recorder"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

// TestSignedEvents: with a key, the recorder stores only the events the
// canceller signed with it. A forged event for a real attempt (an earlier
// "closed" for a task that failed, which the report's first-event rule
// would otherwise believe), an unsigned one, one signed with another key and
// a signed event whose value was changed are counted and skipped; the
// report is that of the real events.
func TestSignedEvents(t *testing.T) {
	b := setup(t)
	store := chtest.Open(t)
	key := []byte("0123456789abcdef-outcomes")
	var want []outcome.Event
	var recs []*kgo.Record
	signed := func(e outcome.Event, k []byte) *kgo.Record {
		v, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return &kgo.Record{Topic: b.topic, Partition: int32(e.Offset % 3), Key: []byte(e.TaskID), Value: v,
			Headers: []kgo.RecordHeader{{Key: outcome.HeaderSignature, Value: outcome.Sign(k, v)}}}
	}
	for i := range 30 {
		e := event(i)
		want = append(want, e)
		recs = append(recs, signed(e, key))
	}
	failed := want[6] // outcome failed
	forged := failed
	forged.Outcome, forged.Error, forged.ClosedMs, forged.LatenessMs = "closed", "", failed.ClosedMs-1000, 1
	unsigned := signed(forged, key)
	unsigned.Headers = nil
	otherKey := signed(forged, []byte("another-key-of-16-bytes"))
	changed := signed(failed, key)
	changed.Value = []byte(string(changed.Value[:len(changed.Value)-1]) + ` `) // same event, other bytes
	recs = append(recs, unsigned, otherKey, changed)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := b.start(t, recorder.Config{BatchRows: 16, FlushInterval: 50 * time.Millisecond, OutcomesKey: key}, store, clock.Real{})
	waitFor(t, "every record flushed", func() bool { return r.r.Stats().Flushed == int64(len(recs)) },
		func() string { return fmt.Sprintf("%+v", r.r.Stats()) })
	r.stop()
	if st := r.r.Stats(); st.Inserted != 30 || st.Rejected != 3 {
		t.Errorf("stats %+v, want 30 inserted, 3 rejected", st)
	}
	if got := metric(t, r.reg, "hourglass_recorder_rejected_events_total", ""); got != 3 {
		t.Errorf("hourglass_recorder_rejected_events_total = %v, want 3", got)
	}
	checkReport(t, store, want)
}

// TestAbortedEvents: events of an aborted transaction are never read, so
// never stored; those of a committed one are.
func TestAbortedEvents(t *testing.T) {
	b := setup(t)
	store := chtest.Open(t)
	txn, err := kgo.NewClient(seeds, kgo.TransactionalID(b.topic+"-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var want []outcome.Event
	for round, commit := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit, kgo.TryAbort} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			e := event(round*10 + i)
			v, _ := e.Marshal()
			if err := txn.ProduceSync(ctx, &kgo.Record{Topic: b.topic, Partition: int32(i % 3), Key: []byte(e.TaskID), Value: v}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if commit == kgo.TryCommit {
				want = append(want, e)
			}
		}
		if err := txn.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	// A plain event after them in each partition: once these are in, the
	// recorder has read past every transaction.
	var after []outcome.Event
	for i := range 3 {
		e := event(100 + i)
		e.Offset = int64(i) // b.produce spreads them over the partitions by index
		after = append(after, e)
	}
	b.produce(t, after)
	want = append(want, after...)
	r := b.start(t, recorder.Config{BatchRows: 16, FlushInterval: 50 * time.Millisecond}, store, clock.Real{})
	waitFor(t, "the committed and plain events inserted", func() bool { return r.r.Stats().Inserted == 13 },
		func() string { return fmt.Sprintf("%+v", r.r.Stats()) })
	r.stop()
	if st := r.r.Stats(); st.Inserted != 13 || st.Malformed != 0 {
		t.Errorf("stats %+v, want 13 inserted", st)
	}
	checkReport(t, store, want)
}

// TestForgedHugeEvents: events forged with text fields of hundreds of
// kilobytes (any producer with access to the outcomes topic can write them,
// and without a key they are stored) are stored cut to the limits of a
// canceller's own events, so that a batch holds a few kilobytes an event,
// not up to the broker's record size. Before, a batch of 600 forged events
// with a detail of 900 kB took the recorder from 0.1 to 3.9 GB; the default
// batch of 5000 would take some 30 GB, and after the crash the same records
// are read again.
func TestForgedHugeEvents(t *testing.T) {
	b := setup(t)
	store := chtest.Open(t)
	huge := strings.Repeat("d", 200_000)
	var recs []*kgo.Record
	for i := range 20 {
		e := event(i)
		v, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatal(err)
		}
		m["detail"], m["error"], m["path"] = huge, huge, huge
		if v, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: b.topic, Partition: int32(i % 3), Key: []byte(event(i).TaskID), Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := b.start(t, recorder.Config{FlushInterval: 50 * time.Millisecond}, store, clock.Real{})
	waitFor(t, "every record flushed", func() bool { return r.r.Stats().Flushed == int64(len(recs)) },
		func() string { return fmt.Sprintf("%+v", r.r.Stats()) })
	r.stop()
	if st := r.r.Stats(); st.Inserted != int64(len(recs)) {
		t.Errorf("stats %+v, want all %d inserted", st, len(recs))
	}
	for i := range recs {
		as, err := store.TaskAttempts(ctx, event(i).TaskID, t0.Add(-time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(as) != 1 {
			t.Fatalf("%s: %d attempts stored, want 1", event(i).TaskID, len(as))
		}
		if a := as[0]; len(a.Detail) > outcome.MaxDetailBytes || len(a.Error) > outcome.MaxErrorBytes || len(a.Path) > outcome.MaxPathBytes {
			t.Errorf("%s stored with a detail of %d bytes, an error of %d and a path of %d: want them cut to %d, %d and %d",
				a.TaskID, len(a.Detail), len(a.Error), len(a.Path), outcome.MaxDetailBytes, outcome.MaxErrorBytes, outcome.MaxPathBytes)
		}
	}
}
