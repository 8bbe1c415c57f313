package recorder_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/recorder"
	"github.com/hourglass/hourglass/internal/report"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
	"github.com/hourglass/hourglass/internal/testutil/fieldtest"
	"github.com/hourglass/hourglass/internal/testutil/poll"
)

var seeds kgo.Opt

func TestMain(m *testing.M) {
	chtest.Main(m, "recorder", func() func() {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3))
		if err != nil {
			fmt.Fprintln(os.Stderr, "kfake:", err)
			os.Exit(1)
		}
		seeds = kgo.SeedBrokers(c.ListenAddrs()...)
		return c.Close
	})
}

var t0 = time.Date(2024, 5, 14, 12, 0, 0, 0, time.UTC)

// window holds every event of the tests.
var window = report.Options{From: t0, To: t0.Add(time.Hour)}

var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

// bundle is a topic of outcome events, a client producing to it, and the
// names a recorder of the test uses.
type bundle struct {
	topic, group string
	cl           *kgo.Client
	adm          *kadm.Client
}

func setup(t *testing.T) *bundle {
	t.Helper()
	name := "rec" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cl, err := kgo.NewClient(seeds, kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	b := &bundle{topic: name + ".outcomes", group: name + "-recorder", cl: cl, adm: kadm.NewClient(cl)}
	b.create(t, b.topic)
	return b
}

// event i: attempt i of cancel record offset i, closed i seconds after t0,
// final or failed, late by 2 + (i*37 % 5000) ms.
func event(i int) outcome.Event {
	outcomes := []outcome.Outcome{"closed", "closed", "closed", "already_closed", "skipped", "not_found", "failed"}
	closed := t0.Add(time.Duration(i) * time.Second).UnixMilli()
	late := int64(2 + i*37%5000)
	e := outcome.Event{
		V: outcome.Version, TaskID: fmt.Sprintf("order-%d", i), Kind: "order-timeout", Outcome: outcomes[i%len(outcomes)],
		Attempt: 1, Hops: 1, Path: "1m", ScheduledMs: closed - 60_000, DueMs: closed - late, DeadlineMs: closed - late,
		ForwardedMs: closed - late + 1, ClosedMs: closed, LatenessMs: late, Instance: "c1",
		Topic: "hourglass.cancel", Partition: int32(i % 4), Offset: int64(i),
	}
	if e.Outcome == "failed" {
		e.Error = "orders: timeout"
	}
	return e
}

// replay is what a canceller that crashed after closing e sends for the
// same cancel record: a later event with outcome already_closed.
func replay(e outcome.Event) outcome.Event {
	e.Outcome, e.Error, e.Instance = "already_closed", "", "c2"
	e.ClosedMs += 30_000
	e.LatenessMs += 30_000
	return e
}

// produce writes events (and raw values) to b's topic, spread over its
// partitions, and waits for them.
func (b *bundle) produce(t *testing.T, events []outcome.Event, raw ...[]byte) {
	t.Helper()
	var recs []*kgo.Record
	for i, e := range events {
		v, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: b.topic, Partition: int32(i % 3), Key: []byte(e.TaskID), Value: v})
	}
	for i, v := range raw {
		recs = append(recs, &kgo.Record{Topic: b.topic, Partition: int32(i % 3), Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// running is a recorder running in the background.
type running struct {
	r    *recorder.Recorder
	reg  *telemetry.Registry
	stop func() // stops it and waits for Run
}

// start runs a recorder of b's topic into store, and the lag watch, as the
// recorder command does.
func (b *bundle) start(t *testing.T, cfg recorder.Config, store *chstore.Store, clk clock.Clock) *running {
	t.Helper()
	cfg.Topic = b.topic
	if cfg.Group == "" {
		cfg.Group = b.group
	}
	reg := telemetry.New()
	r, err := recorder.New(cfg, recorder.Options{Kafka: []kgo.Opt{seeds, kgo.FetchMaxWait(100 * time.Millisecond)}, Store: store, Clock: clk, Logger: quiet, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := r.Run(ctx); err != nil {
			t.Errorf("recorder: %v", err)
		}
	})
	wg.Go(func() { reg.WatchLag(ctx, r.Client(), cfg.Group, 100*time.Millisecond, quiet) })
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return &running{r: r, reg: reg, stop: stop}
}

// waitFor polls cond for up to 60s.
func waitFor(t *testing.T, what string, cond func() bool, state func() string) {
	t.Helper()
	poll.Until(t, 60*time.Second, what, cond, state)
}

// metric returns the sum of the samples of the series name (with the
// label group, when set) in reg.
func metric(t *testing.T, reg prometheus.Gatherer, name, group string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if group != "" && label(m, "group") != group {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// lag returns the recorder's consumer lag, or -1 before the first
// measurement.
func (r *running) lag(t *testing.T, group string) float64 {
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "hourglass_consumer_lag_records" {
			return metric(t, r.reg, "hourglass_consumer_lag_records", group)
		}
	}
	return -1
}

// committed returns the group's committed offsets and the topic's end
// offsets, summed over partitions.
func (b *bundle) committed(t *testing.T, group string) (committed, end int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := b.adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := b.adm.ListEndOffsets(ctx, b.topic)
	if err != nil {
		t.Fatal(err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == b.topic {
			committed += o.At
		}
	})
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	return committed, end
}

// checkReport builds the report of the window and checks that it counts
// each of want once, with its first outcome and lateness.
func checkReport(t *testing.T, store *chstore.Store, want []outcome.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := window
	o.LateThreshold, o.Limit = time.Millisecond, len(want)+10
	r, err := report.Build(ctx, store, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary.Attempts != int64(len(want)) || r.Summary.Tasks != int64(len(want)) {
		t.Errorf("report counts %d attempts of %d tasks, want %d of %d", r.Summary.Attempts, r.Summary.Tasks, len(want), len(want))
	}
	byTask := map[string]outcome.Event{}
	for _, e := range want {
		byTask[e.TaskID] = e
	}
	if len(r.Late) != len(want) {
		t.Errorf("report lists %d attempts later than 1ms or failed, want %d", len(r.Late), len(want))
	}
	for _, a := range r.Late {
		e, ok := byTask[a.TaskID]
		switch {
		case !ok:
			t.Errorf("unexpected attempt %+v", a)
		case a.LatenessMs != e.LatenessMs || a.Outcome != e.Outcome || a.Closed.UnixMilli() != e.ClosedMs || a.Offset != e.Offset:
			t.Errorf("attempt %s: outcome %s lateness %d closed %d, want the first event's %s %d %d", a.TaskID, a.Outcome, a.LatenessMs, a.Closed.UnixMilli(), e.Outcome, e.LatenessMs, e.ClosedMs)
		}
		delete(byTask, a.TaskID)
	}
	// The quantiles are those of the first events' lateness.
	var final []int64
	for _, e := range want {
		if e.Outcome != "failed" {
			final = append(final, e.LatenessMs)
		}
	}
	slices.Sort(final)
	q := func(level float64) int64 { return final[min(len(final)-1, int(level*float64(len(final))))] }
	wantQ := report.Quantiles{Count: int64(len(final)), P50: q(0.5), P90: q(0.9), P99: q(0.99), P999: q(0.999), Max: final[len(final)-1]}
	if r.Summary.Lateness != wantQ {
		t.Errorf("lateness %+v, want %+v", r.Summary.Lateness, wantQ)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  recorder.Config
		want []string // fields, in order
	}{
		{"defaults", recorder.Config{}, nil},
		{"bad topic", recorder.Config{Topic: "a b"}, []string{"Topic"}},
		{"negative batch", recorder.Config{BatchRows: -1}, []string{"BatchRows"}},
		{"huge batch", recorder.Config{BatchRows: 10_000_000}, []string{"BatchRows"}},
		{"negative interval", recorder.Config{FlushInterval: -time.Second}, []string{"FlushInterval"}},
		{"retry max below min", recorder.Config{RetryMin: time.Second, RetryMax: time.Millisecond}, []string{"RetryMax"}},
		{"several", recorder.Config{InsertTimeout: -1, ShutdownTimeout: -1, RetryMin: -1}, []string{"InsertTimeout", "RetryMin", "ShutdownTimeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fieldtest.Fields(tt.cfg.WithDefaults().Validate()); !slices.Equal(got, tt.want) {
				t.Errorf("fields %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := recorder.New(recorder.Config{}, recorder.Options{}); err == nil {
		t.Error("New without a store: no error")
	}
}

// TestEndToEnd produces events with canceller replays, exact duplicates and
// malformed records; the recorder inserts and commits everything, and the
// report counts each attempt once with the first event's outcome and
// lateness. A second recorder (another group: a recorder that lost its
// commits) inserts everything again and the report does not change.
func TestEndToEnd(t *testing.T) {
	b := setup(t)
	store := chtest.Open(t)
	const n = 300
	var want, all []outcome.Event
	for i := range n {
		want = append(want, event(i))
	}
	all = append(all, want...)
	for i := 0; i < n; i += 10 {
		all = append(all, replay(want[i])) // 30 canceller replays
	}
	all = append(all, want[:20]...) // 20 exact copies
	malformed := [][]byte{[]byte("not json"), []byte(`{"v":99,"task_id":"x"}`)}
	b.produce(t, all, malformed...)
	records := int64(len(all) + len(malformed))

	cfg := recorder.Config{BatchRows: 64, FlushInterval: 50 * time.Millisecond}
	r := b.start(t, cfg, store, clock.Real{})
	waitFor(t, "every record flushed", func() bool { return r.r.Stats().Flushed == records },
		func() string { return fmt.Sprintf("%+v", r.r.Stats()) })
	waitFor(t, "every record committed", func() bool { c, e := b.committed(t, b.group); return c == e && e == records },
		func() string { c, e := b.committed(t, b.group); return fmt.Sprintf("committed %d of %d", c, e) })
	st := r.r.Stats()
	if st.Inserted != int64(len(all)) || st.Malformed != 2 || st.InsertErrors != 0 {
		t.Errorf("stats %+v, want %d inserted, 2 malformed, no errors", st, len(all))
	}
	for _, m := range []struct {
		name string
		want float64
	}{
		{"hourglass_recorder_rows_inserted_total", float64(len(all))},
		{"hourglass_recorder_malformed_events_total", 2},
		{"hourglass_recorder_insert_errors_total", 0},
		{"hourglass_recorder_buffered_rows", 0},
	} {
		if got := metric(t, r.reg, m.name, ""); got != m.want {
			t.Errorf("%s = %v, want %v", m.name, got, m.want)
		}
	}
	if got, batches := metric(t, r.reg, "hourglass_recorder_batch_rows", ""), metric(t, r.reg, "hourglass_recorder_batches_total", ""); got != batches || batches < float64(len(all))/64 {
		t.Errorf("%v batch sizes observed for %v batches of at most 64 rows of %d", got, batches, len(all))
	}
	if last := metric(t, r.reg, "hourglass_recorder_last_insert_timestamp_seconds", ""); time.Since(time.Unix(int64(last), 0)) > time.Minute {
		t.Errorf("last insert at %v", time.Unix(int64(last), 0))
	}
	waitFor(t, "lag 0", func() bool { return r.lag(t, b.group) == 0 }, func() string { return fmt.Sprint(r.lag(t, b.group)) })
	r.stop()
	checkReport(t, store, want)

	again := b.start(t, recorder.Config{Group: b.group + "-again", BatchRows: 64, FlushInterval: 50 * time.Millisecond}, store, clock.Real{})
	waitFor(t, "every record flushed again", func() bool { return again.r.Stats().Flushed == records },
		func() string { return fmt.Sprintf("%+v", again.r.Stats()) })
	again.stop()
	checkReport(t, store, want)
}

// TestGracefulStop: a batch that is neither full nor due when the recorder
// stops is inserted and committed on the way out.
func TestGracefulStop(t *testing.T) {
	b := setup(t)
	store := chtest.Open(t)
	var evs []outcome.Event
	for i := range 10 {
		evs = append(evs, event(i))
	}
	b.produce(t, evs)
	r := b.start(t, recorder.Config{BatchRows: 1000, FlushInterval: time.Hour}, store, clock.Real{})
	waitFor(t, "10 rows buffered", func() bool { return metric(t, r.reg, "hourglass_recorder_buffered_rows", "") == 10 },
		func() string { return fmt.Sprintf("%+v", r.r.Stats()) })
	if st := r.r.Stats(); st.Inserted != 0 {
		t.Fatalf("inserted %d before the stop, want 0 (the batch is neither full nor due)", st.Inserted)
	}
	r.stop()
	if st := r.r.Stats(); st.Inserted != 10 || st.Flushed != 10 {
		t.Errorf("after the stop: %+v, want 10 inserted and flushed", st)
	}
	if c, e := b.committed(t, b.group); c != 10 || e != 10 {
		t.Errorf("committed %d of %d, want 10 of 10", c, e)
	}
	checkReport(t, store, evs)
}

// TestOutage stops a private ClickHouse while events keep coming: nothing
// is committed while it is down (the lag rises to every event since), the
// inserts are retried, and after the restart the recorder catches up: the
// lag returns to 0 and the report counts every event once.
func TestOutage(t *testing.T) {
	srv := chtest.StartServer(t)
	b := setup(t)
	store := chtest.OpenConfig(t, srv.Config("hourglass_test_outage"))
	cfg := recorder.Config{BatchRows: 20, FlushInterval: 50 * time.Millisecond, RetryMin: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond, InsertTimeout: 2 * time.Second}
	r := b.start(t, cfg, store, clock.Real{})

	var want []outcome.Event
	for i := range 50 {
		want = append(want, event(i))
	}
	b.produce(t, want)
	waitFor(t, "the first 50 flushed", func() bool { return r.r.Stats().Flushed == 50 }, func() string { return fmt.Sprintf("%+v", r.r.Stats()) })

	srv.Stop()
	var more []outcome.Event
	for i := 50; i < 100; i++ {
		more = append(more, event(i))
	}
	for i := range 5 {
		more = append(more, replay(want[i]))
	}
	b.produce(t, more)
	want = append(want, more[:50]...)
	waitFor(t, "failed inserts", func() bool { return r.r.Stats().InsertErrors >= 3 }, func() string { return fmt.Sprintf("%+v", r.r.Stats()) })
	// Nothing after the first 50 is committed: the lag reaches every record
	// produced since.
	waitFor(t, "lag 55", func() bool { return r.lag(t, b.group) == 55 }, func() string { return fmt.Sprint("lag ", r.lag(t, b.group)) })
	if st := r.r.Stats(); st.Flushed != 50 {
		t.Errorf("flushed %d while ClickHouse was down, want 50", st.Flushed)
	}
	if buffered := metric(t, r.reg, "hourglass_recorder_buffered_rows", ""); buffered > 20 {
		t.Errorf("%v rows buffered, want at most one batch (20)", buffered)
	}

	srv.Start()
	waitFor(t, "catch up", func() bool { return r.r.Stats().Flushed == 105 }, func() string { return fmt.Sprintf("%+v", r.r.Stats()) })
	waitFor(t, "lag 0", func() bool { return r.lag(t, b.group) == 0 }, func() string { return fmt.Sprint("lag ", r.lag(t, b.group)) })
	r.stop()
	checkReport(t, store, want)
}

// TestBackoff drives the retries with a fake clock: after each failed
// insert the recorder waits RetryMin, doubling up to RetryMax, and inserts
// nothing else meanwhile; when the server is back the batch goes in.
func TestBackoff(t *testing.T) {
	srv := chtest.StartServer(t)
	b := setup(t)
	store := chtest.OpenConfig(t, srv.Config("hourglass_test_backoff"))
	clk := clock.NewFake(t0)
	cfg := recorder.Config{BatchRows: 5, FlushInterval: time.Hour, RetryMin: 100 * time.Millisecond, RetryMax: 400 * time.Millisecond, InsertTimeout: 2 * time.Second}
	srv.Stop()
	var evs []outcome.Event
	for i := range 5 {
		evs = append(evs, event(i))
	}
	b.produce(t, evs)
	r := b.start(t, cfg, store, clk)

	var errs atomic.Int64
	failed := func(n int64) func() bool {
		return func() bool { errs.Store(r.r.Stats().InsertErrors); return errs.Load() == n && clk.Armed() == 1 }
	}
	state := func() string { return fmt.Sprintf("%+v, %d timers", r.r.Stats(), clk.Armed()) }
	waitFor(t, "the first failure", failed(1), state)
	for k, wait := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond} {
		clk.Advance(wait - time.Millisecond)
		if clk.Armed() != 1 {
			t.Fatalf("retry %d: the backoff timer fired before %v", k+1, wait)
		}
		clk.Advance(time.Millisecond)
		waitFor(t, fmt.Sprintf("failure %d", k+2), failed(int64(k+2)), state)
	}
	srv.Start()
	clk.Advance(400 * time.Millisecond)
	waitFor(t, "the insert", func() bool { return r.r.Stats().Flushed == 5 }, state)
	if st := r.r.Stats(); st.Inserted != 5 || st.InsertErrors != 5 {
		t.Errorf("stats %+v, want 5 inserted after 5 failures", st)
	}
	r.stop()
	checkReport(t, store, evs)
}
