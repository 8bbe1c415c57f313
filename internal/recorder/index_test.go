package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/internal/recorder"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestIndex runs a recorder with the index on topics as producers, the
// router, the canceller and the cancellations writers leave them: each
// deadline has one row at its first record, whatever hops and retries
// followed, and so has each cancellation and dead letter; records that
// break the contract have none. A second recorder reading it all again
// (another group, as after lost commits) adds no row a lookup or the
// forecast counts.
func TestIndex(t *testing.T) {
	b := setup(t)
	prefix := strings.TrimSuffix(b.topic, "outcomes")
	table, err := tiers.Parse("1m,30m")
	if err != nil {
		t.Fatal(err)
	}
	b.create(t, append(table.Topics(prefix), tiers.CancellationsTopic(prefix), tiers.DeadLetterTopic(prefix))...)
	now := t0
	due := t0.Add(20 * time.Minute)
	rec := func(id, kind string, due time.Time) *kgo.Record {
		r, err := tiers.BuildRecord(prefix, table, now, tiers.Task{ID: id, Due: due, Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := rec("idx-1", "order-timeout", due)
	hop := rec("idx-1", "order-timeout", due)
	hop.Topic = tiers.Topic(prefix, time.Minute)
	hop.Headers = record.SetHeaders(hop.Headers, kgo.RecordHeader{Key: tiers.HeaderHops, Value: []byte("1")})
	retry := rec("idx-1", "order-timeout", due.Add(10*time.Second))
	retry.Headers = record.SetHeaders(retry.Headers, kgo.RecordHeader{Key: tiers.HeaderAttempt, Value: []byte("2")},
		kgo.RecordHeader{Key: tiers.HeaderDeadline, Value: tiers.FormatMillis(due)})
	noDue := &kgo.Record{Topic: first.Topic, Key: []byte("idx-bad")}
	cancelled := rec("idx-2", "reminder", due)
	c, err := tiers.BuildCancellation(prefix, tiers.Cancellation{ID: "idx-2", At: t0.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	c.Timestamp = t0.Add(time.Minute)
	dead := record.DeadLetter(&kgo.Record{Topic: first.Topic, Key: []byte("idx-3"), Partition: 2, Offset: 9},
		tiers.DeadLetterTopic(prefix), &tiers.InvalidError{Reason: tiers.ReasonDueImplausible, Detail: "1767225600"}, t0)
	b.produceRecords(t, first, hop, retry, noDue, cancelled, c, dead)

	store := chtest.Open(t)
	cfg := recorder.Config{FlushInterval: 50 * time.Millisecond, Index: &recorder.Index{Prefix: prefix}}
	r := b.start(t, cfg, store, clock.Real{})
	ctx := ctxT(t)
	lookup := func(id string) *chstore.TaskIndex {
		got, err := store.Task(ctx, id, 10)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	waitFor(t, "the index holds the three tasks", func() bool {
		return len(lookup("idx-1").Deadlines) > 0 && len(lookup("idx-2").Cancels) > 0 && len(lookup("idx-3").DeadLetters) > 0
	}, func() string { return fmt.Sprintf("%+v %+v %+v", lookup("idx-1"), lookup("idx-2"), lookup("idx-3")) })
	for reason, want := range map[string]float64{"hop": 1, "retry": 1, "invalid": 1} {
		if got := metricLabel(t, r.reg, "hourglass_recorder_index_skipped_total", "reason", reason); got != want {
			t.Errorf("skipped for %s: %v, want %v", reason, got, want)
		}
	}

	// A tier no router is configured with: its topic is indexed as it is
	// created.
	week := rec("idx-4", "confirm-receipt", t0.Add(7*24*time.Hour))
	week.Topic = tiers.Topic(prefix, 7*24*time.Hour)
	b.create(t, week.Topic)
	b.produceRecords(t, week)
	waitFor(t, "the index holds the deadline of a new tier", func() bool { return len(lookup("idx-4").Deadlines) == 1 },
		func() string { return fmt.Sprintf("%+v", lookup("idx-4")) })
	r.stop()

	again := b.start(t, recorder.Config{Group: b.group + "-again", FlushInterval: 50 * time.Millisecond, Index: &recorder.Index{Prefix: prefix}},
		store, clock.Real{})
	waitFor(t, "a second recorder read every record", func() bool { return again.r.Stats().Indexed >= 5 },
		func() string { return fmt.Sprintf("%+v", again.r.Stats()) })
	check := func(id string, deadlines, cancels, deadLetters int) {
		t.Helper()
		got := lookup(id)
		if len(got.Deadlines) != deadlines || len(got.Cancels) != cancels || len(got.DeadLetters) != deadLetters {
			t.Errorf("%s: %d deadlines, %d cancellations, %d dead letters; want %d, %d, %d (%+v)",
				id, len(got.Deadlines), len(got.Cancels), len(got.DeadLetters), deadlines, cancels, deadLetters, got)
		}
	}
	check("idx-1", 1, 0, 0)
	check("idx-2", 1, 1, 0)
	check("idx-3", 0, 0, 1)
	check("idx-bad", 0, 0, 0)
	if d := lookup("idx-1").Deadlines; len(d) == 1 && (d[0].Topic != first.Topic || d[0].DueMs != due.UnixMilli() || d[0].Kind != "order-timeout") {
		t.Errorf("idx-1's deadline %+v, want its first record's", d[0])
	}
	if d := lookup("idx-3").DeadLetters; len(d) == 1 && !strings.HasPrefix(d[0].Reason, "due_implausible") {
		t.Errorf("idx-3's dead letter %+v, want reason due_implausible", d[0])
	}
	forecast, err := store.Forecast(ctx, t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []chstore.Due{{Minute: due, Kind: "order-timeout", Count: 1}} // idx-2 is cancelled
	if fmt.Sprint(forecast) != fmt.Sprint(want) {
		t.Errorf("forecast %+v, want %+v", forecast, want)
	}
}

// create creates topics of 3 partitions, deleted when the test ends.
func (b *bundle) create(t *testing.T, topics ...string) {
	t.Helper()
	ctx := ctxT(t)
	resp, err := b.adm.CreateTopics(ctx, 3, 1, nil, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := b.adm.DeleteTopics(ctx, topics...); err != nil {
			t.Logf("delete %v: %v", topics, err)
		}
	})
}

// produceRecords produces recs, each to partition 0 unless it names
// another, and waits for them.
func (b *bundle) produceRecords(t *testing.T, recs ...*kgo.Record) {
	t.Helper()
	if err := b.cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(errors.Join(errors.New("produce"), err))
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// metricLabel returns the value of the counter name whose label has
// value v.
func metricLabel(t *testing.T, reg prometheus.Gatherer, name, label, v string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == v {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
