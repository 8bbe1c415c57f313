package tiers

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

var testNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) // 1767268800000

func TestBuildRecordInvalid(t *testing.T) {
	t.Parallel()

	due := testNow.Add(time.Hour)
	tests := []struct {
		name    string
		task    Task
		wantErr string
	}{
		{name: "no ID", task: Task{Due: due}, wantErr: "tiers: task has no ID"},
		{name: "zero due", task: Task{ID: "order-1"}, wantErr: "tiers: task order-1 has no due time"},
		{name: "due before 1970", task: Task{ID: "order-1", Due: time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)}, wantErr: "tiers: task order-1: due_implausible: due time -86400000 in unix milliseconds is 1969-12-31T00:00:00Z, before 2000"},
		{name: "due before 2000", task: Task{ID: "order-1", Due: time.UnixMilli(MinDueMillis - 1)}, wantErr: "tiers: task order-1: due_implausible: due time 946684799999 in unix milliseconds is 1999-12-31T23:59:59.999Z, before 2000"},
		{
			name:    "due in seconds",
			task:    Task{ID: "order-1", Due: time.UnixMilli(testNow.Unix())},
			wantErr: "it looks like unix seconds (2026-01-01T12:00:00Z), which is 1767268800000 in milliseconds",
		},
		{
			name:    "due in microseconds",
			task:    Task{ID: "order-1", Due: time.UnixMilli(testNow.UnixMicro())},
			wantErr: "it looks like unix microseconds (2026-01-01T12:00:00Z), which is 1767268800000 in milliseconds",
		},
		{name: "target with space", task: Task{ID: "order-1", Due: due, Target: "orders close"}, wantErr: "tiers: task order-1 target: topic name"},
		{name: "target too long", task: Task{ID: "order-1", Due: due, Target: strings.Repeat("t", 250)}, wantErr: "tiers: task order-1 target: topic name is 250 characters"},
		{name: "target dot", task: Task{ID: "order-1", Due: due, Target: "."}, wantErr: "reserved"},
		{name: "kind with newline", task: Task{ID: "order-1", Due: due, Kind: "order\ntimeout"}, wantErr: "tiers: task order-1 kind must be at most 128 printable characters"},
		{name: "kind too long", task: Task{ID: "order-1", Due: due, Kind: strings.Repeat("k", 129)}, wantErr: "kind must be at most 128"},
		{name: "kind not UTF-8", task: Task{ID: "order-1", Due: due, Kind: "\xff"}, wantErr: "kind must be at most 128"},
		{
			name:    "sets the due header",
			task:    Task{ID: "order-1", Due: due, Headers: hdrs("x-trace", "t", HeaderDue, "0")},
			wantErr: "tiers: task order-1 sets header hourglass-due directly; use the Task field",
		},
		{name: "sets the target header", task: Task{ID: "order-1", Due: due, Headers: hdrs(HeaderTarget, "x")}, wantErr: "sets header hourglass-target directly"},
		{name: "sets the version header", task: Task{ID: "order-1", Due: due, Headers: hdrs(HeaderVersion, "1")}, wantErr: "sets header hourglass-version directly"},
		{name: "sets the hops header", task: Task{ID: "order-1", Due: due, Headers: hdrs(HeaderHops, "0")}, wantErr: "sets header hourglass-hops directly"},
		{name: "sets the path header", task: Task{ID: "order-1", Due: due, Headers: hdrs(HeaderPath, "")}, wantErr: "sets header hourglass-path directly"},
	}
	for _, tt := range tests {
		r, err := BuildRecord(DefaultPrefix, DefaultTable(), testNow, tt.task)
		if err == nil {
			t.Errorf("%s: BuildRecord = record for %s, want an error containing %q", tt.name, r.Topic, tt.wantErr)
			continue
		}
		if r != nil {
			t.Errorf("%s: BuildRecord returned a record with its error", tt.name)
		}
		if !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: BuildRecord error %q, want it to contain %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestBuildRecordTopic(t *testing.T) {
	t.Parallel()

	short, err := Parse("500ms,2s")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		prefix string
		table  Table
		due    time.Time
		want   string
	}{
		{name: "long past due", prefix: DefaultPrefix, table: DefaultTable(), due: time.UnixMilli(MinDueMillis), want: "hourglass.delay.1m"},
		{name: "past due", prefix: DefaultPrefix, table: DefaultTable(), due: testNow.Add(-time.Second), want: "hourglass.delay.1m"},
		{name: "due now", prefix: DefaultPrefix, table: DefaultTable(), due: testNow, want: "hourglass.delay.1m"},
		{name: "below smallest", prefix: DefaultPrefix, table: DefaultTable(), due: testNow.Add(20 * time.Second), want: "hourglass.delay.1m"},
		{name: "smallest", prefix: DefaultPrefix, table: DefaultTable(), due: testNow.Add(time.Minute), want: "hourglass.delay.1m"},
		{name: "below 5m by more than the tolerance", prefix: DefaultPrefix, table: DefaultTable(), due: testNow.Add(5*time.Minute - Tolerance - time.Millisecond), want: "hourglass.delay.2m"},
		{name: "below 5m within the tolerance", prefix: DefaultPrefix, table: DefaultTable(), due: testNow.Add(5*time.Minute - time.Millisecond), want: "hourglass.delay.5m"},
		{name: "5m", prefix: DefaultPrefix, table: DefaultTable(), due: testNow.Add(5 * time.Minute), want: "hourglass.delay.5m"},
		{name: "29m59s", prefix: DefaultPrefix, table: DefaultTable(), due: testNow.Add(29*time.Minute + 59*time.Second), want: "hourglass.delay.10m"},
		{name: "30m", prefix: DefaultPrefix, table: DefaultTable(), due: testNow.Add(30 * time.Minute), want: "hourglass.delay.30m"},
		{name: "days", prefix: DefaultPrefix, table: DefaultTable(), due: testNow.Add(72 * time.Hour), want: "hourglass.delay.72h"},
		{name: "year 9999", prefix: DefaultPrefix, table: DefaultTable(), due: time.UnixMilli(MaxDueMillis), want: "hourglass.delay.6480h"},
		{name: "other prefix", prefix: "shop.", table: DefaultTable(), due: testNow.Add(6 * time.Minute), want: "shop.delay.5m"},
		{name: "short tiers, below", prefix: DefaultPrefix, table: short, due: testNow.Add(100 * time.Millisecond), want: "hourglass.delay.500ms"},
		{name: "short tiers, between", prefix: DefaultPrefix, table: short, due: testNow.Add(1900 * time.Millisecond), want: "hourglass.delay.500ms"},
		{name: "short tiers, above", prefix: DefaultPrefix, table: short, due: testNow.Add(time.Minute), want: "hourglass.delay.2s"},
	}
	for _, tt := range tests {
		r, err := BuildRecord(tt.prefix, tt.table, testNow, Task{ID: "order-1", Due: tt.due})
		if err != nil {
			t.Errorf("%s: BuildRecord: %v", tt.name, err)
			continue
		}
		if r.Topic != tt.want {
			t.Errorf("%s: due in %v: topic %s, want %s", tt.name, tt.due.Sub(testNow), r.Topic, tt.want)
		}
	}
}

func TestBuildRecord(t *testing.T) {
	t.Parallel()

	task := Task{
		ID:      "order-42",
		Due:     testNow.Add(37*time.Minute + 1500*time.Microsecond), // sub-millisecond part is dropped
		Payload: []byte(`{"order":42}`),
		Target:  "orders.close",
		Kind:    "order-timeout",
		Headers: hdrs("traceparent", "00-abc-def-01", "hourglass-foo", "bar", "Hourglass-Due", "not ours"),
	}
	r, err := BuildRecord(DefaultPrefix, DefaultTable(), testNow, task)
	if err != nil {
		t.Fatal(err)
	}
	if r.Topic != "hourglass.delay.30m" {
		t.Errorf("Topic = %s, want hourglass.delay.30m", r.Topic)
	}
	if string(r.Key) != "order-42" {
		t.Errorf("Key = %q, want order-42", r.Key)
	}
	if string(r.Value) != `{"order":42}` {
		t.Errorf("Value = %q, want the payload", r.Value)
	}
	if !r.Timestamp.Equal(testNow) {
		t.Errorf("Timestamp = %v, want now (%v)", r.Timestamp, testNow)
	}
	want := hdrs(
		HeaderDue, "1767271020001",
		HeaderVersion, "1",
		HeaderScheduled, "1767268800000",
		HeaderTarget, "orders.close",
		HeaderKind, "order-timeout",
		"traceparent", "00-abc-def-01",
		"hourglass-foo", "bar",
		"Hourglass-Due", "not ours",
	)
	if !equalHeaders(r.Headers, want) {
		t.Errorf("Headers\n got %s\nwant %s", headersString(r.Headers), headersString(want))
	}

	// What the Scheduler writes, the router reads back.
	m, err := Decode(r.Headers)
	if err != nil {
		t.Fatalf("Decode(BuildRecord headers): %v", err)
	}
	wantMeta := Meta{Due: time.UnixMilli(1767271020001), Target: "orders.close", Kind: "order-timeout", Scheduled: testNow}
	if !metaEqual(m, wantMeta) {
		t.Errorf("Decode(BuildRecord headers)\n got %+v\nwant %+v", m, wantMeta)
	}

	// Without Target, Kind and Headers only the required headers are set.
	r, err = BuildRecord(DefaultPrefix, DefaultTable(), testNow, Task{ID: "order-43", Due: testNow.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if want := hdrs(HeaderDue, "1767268860000", HeaderVersion, "1", HeaderScheduled, "1767268800000"); !equalHeaders(r.Headers, want) {
		t.Errorf("minimal task: Headers %s, want %s", headersString(r.Headers), headersString(want))
	}
	if r.Value != nil {
		t.Errorf("minimal task: Value = %q, want nil", r.Value)
	}
}

func TestNewScheduler(t *testing.T) {
	t.Parallel()

	if _, err := NewScheduler(nil, DefaultTable()); err == nil {
		t.Error("NewScheduler(nil client): want an error")
	}
	// The client does not connect until it is used.
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := NewScheduler(cl, Table{}); err == nil {
		t.Error("NewScheduler(zero Table): want an error")
	}

	// Record uses the default prefix and the injected clock.
	s, err := NewScheduler(cl, DefaultTable(), WithClock(func() time.Time { return testNow }))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Record(Task{ID: "order-1", Due: testNow.Add(6 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Topic != "hourglass.delay.5m" || !r.Timestamp.Equal(testNow) {
		t.Errorf("Record: topic %s, timestamp %v; want hourglass.delay.5m, %v", r.Topic, r.Timestamp, testNow)
	}
	if _, err := s.Record(Task{Due: testNow}); err == nil {
		t.Error("Record of a task without ID: want an error")
	}
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// schedulerBundle is what setupScheduler returns besides the Scheduler.
type schedulerBundle struct {
	cluster *kfake.Cluster
	client  *kgo.Client
	clock   *fakeClock
	topics  []string // delay topics of the table, smallest first
}

// setupScheduler starts a one-broker kfake cluster on 127.0.0.1 with the
// delay topics of the default table under a test prefix, and returns a
// Scheduler producing to it with a fake clock.
func setupScheduler(t *testing.T) (*Scheduler, *schedulerBundle) {
	t.Helper()

	const prefix = "test."
	table := DefaultTable()
	topics := table.Topics(prefix)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, append(topics, CancellationsTopic(prefix))...))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatalf("kgo producer: %v", err)
	}
	t.Cleanup(cl.Close)

	clock := &fakeClock{now: testNow}
	s, err := NewScheduler(cl, table, WithPrefix(prefix), WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	return s, &schedulerBundle{cluster: c, client: cl, clock: clock, topics: topics}
}

func TestScheduler(t *testing.T) {
	t.Parallel()

	s, bundle := setupScheduler(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	start := bundle.clock.Now()
	type produced struct {
		task      Task
		scheduled time.Time // the fake clock when it was scheduled
		topic     string    // where it must land
	}
	var want []produced
	schedule := func(task Task, topic string) {
		t.Helper()
		if err := s.Schedule(ctx, task); err != nil {
			t.Fatalf("Schedule(%s): %v", task.ID, err)
		}
		want = append(want, produced{task, bundle.clock.Now(), topic})
	}

	// Schedule waits until the broker has the record.
	schedule(Task{ID: "order-1", Due: start.Add(20 * time.Second)}, "test.delay.1m")
	schedule(Task{
		ID:      "order-2",
		Due:     start.Add(7 * time.Minute),
		Payload: []byte(`{"order":2}`),
		Kind:    "order-timeout",
		Headers: hdrs("traceparent", "00-abc-def-01"),
	}, "test.delay.5m")

	// The remaining delay is counted from the injected clock: three
	// minutes later, a task due at start+7m waits in the 2m tier.
	bundle.clock.Advance(3 * time.Minute)
	schedule(Task{ID: "order-3", Due: start.Add(7 * time.Minute), Payload: []byte("three")}, "test.delay.2m")

	// ScheduleAsync reports through done.
	async := []produced{
		{task: Task{ID: "order-4", Due: start.Add(2 * time.Hour), Target: "orders.close", Payload: []byte("four")}, topic: "test.delay.1h"},
		{task: Task{ID: "order-5", Due: start.Add(-time.Hour), Kind: "reminder"}, topic: "test.delay.1m"},
		{task: Task{ID: "order-2", Due: start.Add(9 * time.Minute), Payload: []byte("again")}, topic: "test.delay.5m"},
	}
	results := make(chan error, len(async))
	for _, p := range async {
		p.scheduled = bundle.clock.Now()
		want = append(want, p)
		s.ScheduleAsync(ctx, p.task, func(r *kgo.Record, err error) {
			if err == nil && (r == nil || r.Topic != p.topic || string(r.Key) != p.task.ID) {
				err = errors.New("done called with the wrong record")
			}
			results <- err
		})
	}
	// A nil done is allowed.
	nilDone := produced{task: Task{ID: "order-6", Due: start.Add(31 * time.Minute)}, topic: "test.delay.10m", scheduled: bundle.clock.Now()}
	s.ScheduleAsync(ctx, nilDone.task, nil)
	want = append(want, nilDone)

	for range async {
		select {
		case err := <-results:
			if err != nil {
				t.Errorf("ScheduleAsync: %v", err)
			}
		case <-ctx.Done():
			t.Fatalf("waiting for ScheduleAsync: %v", ctx.Err())
		}
	}
	if err := bundle.client.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}

	// Invalid tasks are reported and not produced.
	if err := s.Schedule(ctx, Task{ID: "bad-1"}); err == nil || !strings.Contains(err.Error(), "no due time") {
		t.Errorf("Schedule without due: %v, want a no due time error", err)
	}
	var called bool
	s.ScheduleAsync(ctx, Task{ID: "bad-2", Due: start, Target: "bad target"}, func(r *kgo.Record, err error) {
		called = true
		if r != nil || err == nil || !strings.Contains(err.Error(), "bad-2 target") {
			t.Errorf("ScheduleAsync with a bad target: done(%v, %v), want (nil, a target error)", r, err)
		}
	})
	if !called {
		t.Error("ScheduleAsync with a bad target: done was not called before it returned")
	}
	s.ScheduleAsync(ctx, Task{ID: "bad-3"}, nil) // invalid, and no done to tell: must not panic

	got := consumeAll(ctx, t, bundle, len(want))

	// Exactly these records reached the broker.
	adm := kadm.NewClient(bundle.client)
	ends, err := adm.ListEndOffsets(ctx, bundle.topics...)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("ListEndOffsets %s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		total += o.Offset
	})
	if total != int64(len(want)) {
		t.Errorf("delay topics hold %d records, want %d", total, len(want))
	}

	// One key, one partition.
	var order2 []int32
	for _, r := range got {
		if string(r.Key) == "order-2" {
			order2 = append(order2, r.Partition)
		}
	}
	if len(order2) != 2 || order2[0] != order2[1] {
		t.Errorf("order-2 landed on partitions %v, want twice the same", order2)
	}

	// Match records to tasks by key and, for a key scheduled twice, by due
	// time.
	for _, w := range want {
		r := takeRecord(&got, w.task)
		if r == nil {
			t.Errorf("task %s due %v: no record", w.task.ID, w.task.Due)
			continue
		}
		if r.Topic != w.topic {
			t.Errorf("task %s: topic %s, want %s", w.task.ID, r.Topic, w.topic)
		}
		if !bytes.Equal(r.Value, w.task.Payload) {
			t.Errorf("task %s: value %q, want %q", w.task.ID, r.Value, w.task.Payload)
		}
		if !r.Timestamp.Equal(w.scheduled) {
			t.Errorf("task %s: timestamp %v, want the fake clock %v", w.task.ID, r.Timestamp, w.scheduled)
		}
		wantHeaders := hdrs(HeaderDue, string(FormatMillis(w.task.Due)), HeaderVersion, "1", HeaderScheduled, string(FormatMillis(w.scheduled)))
		if w.task.Target != "" {
			wantHeaders = append(wantHeaders, kgo.RecordHeader{Key: HeaderTarget, Value: []byte(w.task.Target)})
		}
		if w.task.Kind != "" {
			wantHeaders = append(wantHeaders, kgo.RecordHeader{Key: HeaderKind, Value: []byte(w.task.Kind)})
		}
		wantHeaders = append(wantHeaders, w.task.Headers...)
		if !equalHeaders(r.Headers, wantHeaders) {
			t.Errorf("task %s: headers\n got %s\nwant %s", w.task.ID, headersString(r.Headers), headersString(wantHeaders))
		}
		m, err := Decode(r.Headers)
		if err != nil {
			t.Errorf("task %s: Decode: %v", w.task.ID, err)
		} else if !m.Due.Equal(w.task.Due) || m.Target != w.task.Target || m.Kind != w.task.Kind || !m.Scheduled.Equal(w.scheduled) {
			t.Errorf("task %s: Decode = %+v", w.task.ID, m)
		}
	}
}

// TestSchedulerProduceError checks that a failed produce names the task and
// topic and keeps the cause. The topic does not exist, so the record waits
// for metadata until its context ends; the context is already canceled.
func TestSchedulerProduceError(t *testing.T) {
	t.Parallel()

	s, bundle := setupScheduler(t)
	missing, err := NewScheduler(bundle.client, DefaultTable(), WithPrefix("missing."), WithClock(bundle.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	err = missing.Schedule(canceled, Task{ID: "order-7", Due: testNow})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "schedule order-7 to missing.delay.1m: ") {
		t.Errorf("Schedule to a missing topic: %v, want it to wrap context.Canceled and name the task and topic", err)
	}

	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	done := make(chan error, 1)
	missing.ScheduleAsync(canceled, Task{ID: "order-8", Due: testNow.Add(time.Hour)}, func(_ *kgo.Record, err error) { done <- err })
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "schedule order-8 to missing.delay.1h: ") {
			t.Errorf("ScheduleAsync to a missing topic: %v, want it to wrap context.Canceled and name the task and topic", err)
		}
	case <-ctx.Done():
		t.Fatalf("waiting for ScheduleAsync: %v", ctx.Err())
	}

	// The client still works for the topics that exist.
	if err := s.Schedule(ctx, Task{ID: "order-9", Due: testNow}); err != nil {
		t.Errorf("Schedule after a failed produce: %v", err)
	}
}

// consumeAll reads n records from the bundle's delay topics, from the start.
func consumeAll(ctx context.Context, t *testing.T, b *schedulerBundle, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.cluster.ListenAddrs()...),
		kgo.ConsumeTopics(b.topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("kgo consumer: %v", err)
	}
	defer cl.Close()

	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("fetch %s[%d]: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}

// takeRecord removes and returns the record of task from rs: the one with
// its key and due header.
func takeRecord(rs *[]*kgo.Record, task Task) *kgo.Record {
	due := string(FormatMillis(task.Due))
	for i, r := range *rs {
		v, _ := Header(r.Headers, HeaderDue)
		if string(r.Key) == task.ID && string(v) == due {
			*rs = append((*rs)[:i], (*rs)[i+1:]...)
			return r
		}
	}
	return nil
}
