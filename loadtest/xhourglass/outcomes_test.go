package xhourglass

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// outcomeRecord is the outcomes-topic record of a close of task id.
func outcomeRecord(t *testing.T, id string, out outcome.Outcome, detail string, closedMs int64) *kgo.Record {
	t.Helper()
	ev := outcome.Event{V: outcome.Version, TaskID: id, Outcome: out, Detail: detail, ClosedMs: closedMs}
	b, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Key: []byte(id), Value: b}
}

// TestWatcherJudge feeds a watcher acknowledgements and outcome records in
// the orders they can come in, without a broker.
func TestWatcherJudge(t *testing.T) {
	const due = 1_800_000_000_000
	w := &watcher{idPrefix: "lt-r-", tasks: map[string]*watched{}, delta: OutcomeDelta{Final: map[outcome.Outcome]int64{}}}
	for _, id := range []string{"ontime", "early", "paid", "paidclosed", "unpaidskipped", "beforeack", "lost", "failed"} {
		w.add("lt-r-"+id, time.UnixMilli(due), id == "paid" || id == "paidclosed")
	}
	w.add("lt-r-pastdue", time.UnixMilli(due-5000), false)
	w.add("lt-r-nope", time.UnixMilli(due), false)
	w.record(outcomeRecord(t, "lt-r-beforeack", outcome.Closed, "", due+7)) // before its acknowledgement
	for _, id := range []string{"ontime", "early", "paid", "paidclosed", "unpaidskipped", "beforeack", "lost", "pastdue", "failed"} {
		w.produced("lt-r-"+id, due-1000, true)
	}
	w.produced("lt-r-nope", 0, false) // the produce failed
	for _, r := range []*kgo.Record{
		outcomeRecord(t, "lt-r-ontime", outcome.Retry, "", due+1),
		outcomeRecord(t, "lt-r-ontime", outcome.Closed, "", due+30),
		outcomeRecord(t, "lt-r-ontime", outcome.AlreadyClosed, "", due-5), // a duplicate: not judged
		outcomeRecord(t, "lt-r-early", outcome.Closed, "", due-200),
		outcomeRecord(t, "lt-r-paid", outcome.Skipped, "PAID", due+2),
		outcomeRecord(t, "lt-r-paidclosed", outcome.Closed, "", due+2),
		outcomeRecord(t, "lt-r-unpaidskipped", outcome.Skipped, "PAID", due+2),
		outcomeRecord(t, "lt-r-pastdue", outcome.Closed, "", due-1000+4), // late from when it was produced
		outcomeRecord(t, "lt-r-failed", outcome.Failed, "", due+1),
		outcomeRecord(t, "lt-r-nope", outcome.Closed, "", due),   // its produce failed
		outcomeRecord(t, "lt-q-ontime", outcome.Closed, "", due), // another run's
		{Key: []byte("lt-r-garbage"), Value: []byte("{")},
	} {
		w.record(r)
	}
	d := w.take()
	wantLate := []time.Duration{7 * time.Millisecond, 30 * time.Millisecond, -200 * time.Millisecond, 2 * time.Millisecond,
		2 * time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, time.Millisecond}
	if !reflect.DeepEqual(d.Lateness, wantLate) {
		t.Errorf("lateness %v, want %v", d.Lateness, wantLate)
	}
	wantFinal := map[outcome.Outcome]int64{outcome.Closed: 5, outcome.Skipped: 2, outcome.Failed: 1}
	if !reflect.DeepEqual(d.Final, wantFinal) || d.Early != 1 || d.WrongOutcome != 3 {
		t.Errorf("delta %+v, want finals %v, 1 early, 3 wrong (paid closed, unpaid skipped, failed)", d, wantFinal)
	}
	if again := w.take(); len(again.Lateness) != 0 || len(again.Final) != 0 || again.Early != 0 {
		t.Errorf("second take %+v, want nothing new", again)
	}
	want := OutcomeStats{Final: 8, Pending: 1, Early: 1, WrongOutcome: 3, MaxLatenessMs: 30}
	if s := w.stats(); s != want {
		t.Errorf("stats %+v, want %+v", s, want)
	}
}

// TestProducerOutcomes: the producer's watcher reads the outcome events of
// its tasks from the outcomes topic while the run goes on, and Close waits
// for the rest, then counts the task without one as lost.
func TestProducerOutcomes(t *testing.T) {
	prefix := newPrefix(t, "1s")
	topic := tiers.OutcomesTopic(prefix)
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t)
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p, err := NewProducer(ProducerConfig{
		Brokers: StringList{broker}, Prefix: prefix, Tiers: "1s", Manifest: filepath.Join(t.TempDir(), "m.jsonl"),
		RunID: "run-o", OutcomeWait: Duration(300 * time.Millisecond),
	})
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(500 * time.Millisecond).Truncate(time.Millisecond)
	for _, id := range []string{"a", "b", "c"} {
		if _, _, err := p.Schedule(ctx, TaskSpec{ID: id, Due: due}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []*kgo.Record{
		outcomeRecord(t, "lt-run-o-a", outcome.Closed, "", due.UnixMilli()+12),
		outcomeRecord(t, "lt-run-o-b", outcome.Closed, "", due.UnixMilli()-100),
	} {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	progress := 0
	start := time.Now()
	stats, err := p.Close(ctx, func() { progress++ })
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Close took %v; the wait ends 300ms after the last due time", took)
	}
	want := OutcomeStats{Topic: topic, Final: 2, Lost: 1, Early: 1, MaxLatenessMs: 12}
	if stats.Outcomes == nil || *stats.Outcomes != want {
		t.Errorf("outcomes %+v, want %+v", stats.Outcomes, want)
	}
	if progress == 0 {
		t.Error("Close did not report progress while it waited")
	}
	d := p.TakeDelta()
	if d.Lost != 1 || d.Outcomes.Early != 1 || len(d.Outcomes.Lateness) != 2 {
		t.Errorf("delta %+v, want 1 lost, 1 early, 2 lateness samples", d)
	}
}
