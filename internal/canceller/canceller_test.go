package canceller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
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

// t0 is the fake clock's start.
var t0 = time.UnixMilli(1_800_000_000_000)

// bundle is a canceller on a fake clock with its own topics and group, and a
// client to produce and read them.
type bundle struct {
	clock *clock.Fake
	cfg   Config
	cl    *kgo.Client
	adm   *kadm.Client
	c     *Canceller // the running canceller
	stop  func() error
}

func setup(t *testing.T, cfg Config, cr closer.Closer) *bundle {
	t.Helper()
	return setupRoutes(t, cfg, Options{Closer: cr})
}

// setupRoutes is setup with the closers of o (Closer and Routes).
func setupRoutes(t *testing.T, cfg Config, o Options) *bundle {
	t.Helper()
	prefix := "t" + strconv.FormatInt(time.Now().UnixNano(), 36) + "."
	cfg.Prefix, cfg.Group = prefix, prefix+"canceller"
	if cfg.Instance == "" {
		cfg.Instance = "test-instance"
	}
	if cfg.MaxInFlight == 0 {
		// One at a time, so that outcomes and dead letters come in offset
		// order and read can stop at a key; the concurrency tests set more.
		cfg.MaxInFlight = 1
	}
	cfg = cfg.WithDefaults()
	cl, err := kgo.NewClient(seeds, kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	b := &bundle{clock: clock.NewFake(t0), cfg: cfg, cl: cl, adm: kadm.NewClient(cl)}
	// Create the topics before the canceller subscribes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics := append([]string{cfg.Outcomes, cfg.DeadLetter}, cfg.Topics...)
	resp, err := b.adm.CreateTopics(ctx, 1, 1, nil, append(topics, cfg.Tiers.Topics(cfg.Prefix)...)...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	b.start(t, o)
	return b
}

// start runs a canceller for b's config and the closers of o; stop stops it
// gracefully and returns Run's error (later calls return the same).
func (b *bundle) start(t *testing.T, o Options) {
	t.Helper()
	o.Kafka, o.Clock = []kgo.Opt{seeds}, b.clock
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	c, err := New(b.cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var (
		once   sync.Once
		runErr error
	)
	stop := func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	b.c, b.stop = c, stop
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("canceller: %v", err)
		}
	})
}

// waitStats waits until cond holds for the canceller's counters, bounded.
func (b *bundle) waitStats(t *testing.T, cond func(Stats) bool) {
	t.Helper()
	waitFor(t, "stats", func() bool { return cond(b.c.Stats()) }, func() string { return fmt.Sprintf("%+v", b.c.Stats()) })
}

// waitFor polls cond until it holds, for at most 10s.
func waitFor(t *testing.T, what string, cond func() bool, state func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; now %s", what, state())
		case <-tick.C:
		}
	}
}

func hdr(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }

func hdrMillis(k string, at time.Time) kgo.RecordHeader {
	return kgo.RecordHeader{Key: k, Value: tiers.FormatMillis(at)}
}

// produce writes a cancel record and returns its offset. A nil key is left
// out.
func (b *bundle) produce(t *testing.T, key, value string, hs ...kgo.RecordHeader) int64 {
	t.Helper()
	r := &kgo.Record{Topic: b.cfg.Topics[0], Value: []byte(value), Headers: hs}
	if key != "" {
		r.Key = []byte(key)
	}
	res := b.cl.ProduceSync(context.Background(), r)
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	return res[0].Record.Offset
}

// read returns the records of topic from its start up to and including the
// first with key last.
func (b *bundle) read(t *testing.T, topic, last string) []*kgo.Record {
	t.Helper()
	return readUntil(t, topic, fmt.Sprintf("a record with key %q", last), func(out []*kgo.Record) bool {
		return string(out[len(out)-1].Key) == last
	})
}

// readN returns the first n records of topic.
func (b *bundle) readN(t *testing.T, topic string, n int) []*kgo.Record {
	t.Helper()
	return readUntil(t, topic, fmt.Sprint(n, " records"), func(out []*kgo.Record) bool { return len(out) == n })
}

// readUntil reads topic from its start, a record at a time, until done
// holds for the records read, for at most 10s.
func readUntil(t *testing.T, topic, what string, done func([]*kgo.Record) bool) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(seeds, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: no %s in 10s; got %d records", topic, what, len(out))
		}
		for it := fs.RecordIter(); !it.Done(); {
			out = append(out, it.Next())
			if done(out) {
				return out
			}
		}
	}
}

// outcomes reads the outcome events up to and including the one of task
// last, by task id; it fails on a task with two events.
func (b *bundle) outcomes(t *testing.T, last string) map[string]outcomeRecord {
	t.Helper()
	out := make(map[string]outcomeRecord)
	for _, r := range b.read(t, b.cfg.Outcomes, last) {
		e, err := outcome.Unmarshal(r.Value)
		if err != nil {
			t.Fatalf("outcome %s: %v", r.Value, err)
		}
		if string(r.Key) != e.TaskID {
			t.Errorf("outcome record key %q, event task %q", r.Key, e.TaskID)
		}
		if _, dup := out[e.TaskID]; dup {
			t.Errorf("two outcome events for task %q", e.TaskID)
		}
		out[e.TaskID] = outcomeRecord{e, r}
	}
	return out
}

type outcomeRecord struct {
	outcome.Event
	rec *kgo.Record
}

// committed returns the group's committed offset of the cancel topic's
// partition 0, or -1.
func (b *bundle) committed(t *testing.T) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := b.adm.FetchOffsets(ctx, b.cfg.Group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	o, ok := offs.Lookup(b.cfg.Topics[0], 0)
	if !ok {
		return -1
	}
	if o.Err != nil {
		t.Fatalf("fetch offsets: %v", o.Err)
	}
	return o.At
}

// TestOutcomeEvent: a close produces one outcome event that copies the
// contract headers and measures lateness on the canceller's clock.
func TestOutcomeEvent(t *testing.T) {
	var (
		mu    sync.Mutex
		tasks = map[string]closer.Task{}
	)
	cr := closer.CloserFunc(func(ctx context.Context, tk closer.Task) (closer.Result, error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Errorf("close of %s without a deadline", tk.ID)
		}
		mu.Lock()
		tasks[tk.ID] = tk
		mu.Unlock()
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setup(t, Config{DefaultKind: "invoice-timeout"}, cr)

	due := t0.Add(-1500 * time.Millisecond)
	scheduled := t0.Add(-time.Hour)
	forwarded := due.Add(3 * time.Millisecond)
	off1 := b.produce(t, "order-1", "payload-1",
		hdrMillis(tiers.HeaderDue, due),
		hdr(tiers.HeaderKind, "order-timeout"),
		hdrMillis(tiers.HeaderScheduled, scheduled),
		hdrMillis(tiers.HeaderForwarded, forwarded),
		hdr(tiers.HeaderHops, "4"),
		hdr(tiers.HeaderPath, "30m,5m,1m*2"),
		hdr("x-other", "kept"),
	)
	b.waitStats(t, func(s Stats) bool { return s.Closed == 1 })

	// The second task has only the required header, and is handled later.
	b.clock.Advance(250 * time.Millisecond)
	due2 := t0.Add(200 * time.Millisecond) // 50ms late at t0+250ms
	deadline2 := t0.Add(-time.Minute)      // a retry: due after its deadline
	off2 := b.produce(t, "order-2", "", hdrMillis(tiers.HeaderDue, due2), hdr(tiers.HeaderAttempt, "3"),
		hdrMillis(tiers.HeaderDeadline, deadline2))
	b.waitStats(t, func(s Stats) bool { return s.Closed == 2 })

	got := b.outcomes(t, "order-2")
	if len(got) != 2 {
		t.Fatalf("%d outcome events, want 2: %+v", len(got), got)
	}
	for _, tc := range []struct {
		id      string
		want    outcome.Event
		closeAt time.Time
	}{
		{"order-1", outcome.Event{
			V: outcome.Version, TaskID: "order-1", Kind: "order-timeout", Outcome: "closed",
			Attempt: 1, Hops: 4, Path: "30m,5m,1m*2",
			ScheduledMs: scheduled.UnixMilli(), DueMs: due.UnixMilli(), DeadlineMs: due.UnixMilli(), ForwardedMs: forwarded.UnixMilli(),
			ClosedMs: t0.UnixMilli(), LatenessMs: 1500, Instance: "test-instance",
			Topic: b.cfg.Topics[0], Partition: 0, Offset: off1,
		}, t0},
		{"order-2", outcome.Event{
			V: outcome.Version, TaskID: "order-2", Kind: "invoice-timeout", Outcome: "closed",
			Attempt: 3, DueMs: due2.UnixMilli(), DeadlineMs: deadline2.UnixMilli(),
			ClosedMs: t0.Add(250 * time.Millisecond).UnixMilli(), LatenessMs: 50, Instance: "test-instance",
			Topic: b.cfg.Topics[0], Partition: 0, Offset: off2,
		}, t0.Add(250 * time.Millisecond)},
	} {
		o := got[tc.id]
		if o.Event != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.id, o.Event, tc.want)
		}
		if !o.rec.Timestamp.Equal(tc.closeAt) {
			t.Errorf("%s: outcome record timestamp %v, want the canceller's clock %v", tc.id, o.rec.Timestamp, tc.closeAt)
		}
	}

	// The closer saw the task as the contract describes it.
	mu.Lock()
	defer mu.Unlock()
	if tk := tasks["order-1"]; tk.Kind != "order-timeout" || string(tk.Payload) != "payload-1" || tk.Attempt != 1 ||
		!tk.Meta.Due.Equal(due) || tk.Meta.Hops != 4 {
		t.Errorf("closer got %+v", tk)
	}
	if tk := tasks["order-2"]; tk.Kind != "invoice-timeout" || tk.Attempt != 3 {
		t.Errorf("closer got %+v, want the default kind and attempt 3", tk)
	}
	if s := b.c.Stats(); s != (Stats{Closed: 2}) {
		t.Errorf("stats %+v, want 2 closed", s)
	}
}

// TestCloseFailed: a close that errs on its last attempt, errs for good or
// returns no final outcome is reported as failed and dead-lettered with the
// cause; the record is kept unchanged.
func TestCloseFailed(t *testing.T) {
	cr := closer.CloserFunc(func(_ context.Context, tk closer.Task) (closer.Result, error) {
		switch tk.ID {
		case "err":
			return closer.Result{}, errors.New("db down")
		case "err-permanent":
			return closer.Result{Outcome: outcome.Closed, Detail: "half"}, closer.Permanent(errors.New("bad payload"))
		case "empty":
			return closer.Result{}, nil
		case "unknown":
			return closer.Result{Outcome: "vanished"}, nil
		case "failed-no-err":
			return closer.Result{Outcome: outcome.Failed}, nil
		}
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setup(t, Config{MaxAttempts: 1}, cr)
	due := t0.Add(-time.Second)
	offs := map[string]int64{}
	for _, id := range []string{"err", "err-permanent", "empty", "unknown", "failed-no-err", "ok"} {
		offs[id] = b.produce(t, id, "v-"+id, hdrMillis(tiers.HeaderDue, due), hdr("x-trace", id))
	}
	b.waitStats(t, func(s Stats) bool { return s.Closed == 1 && s.Failed == 5 })

	got := b.outcomes(t, "ok")
	for id, wantErr := range map[string]string{
		"err":           "attempt 1 of 1: db down",
		"err-permanent": "bad payload",
		"empty":         `closer returned outcome "" without an error`,
		"unknown":       `closer returned outcome "vanished" without an error`,
		"failed-no-err": `closer returned outcome "failed" without an error`,
	} {
		e := got[id]
		if e.Outcome != outcome.Failed || e.Error != wantErr || e.Attempt != 1 || e.Offset != offs[id] {
			t.Errorf("%s: outcome %+v, want failed with error %q", id, e.Event, wantErr)
		}
	}
	if got["ok"].Outcome != "closed" || got["ok"].Error != "" {
		t.Errorf("ok: outcome %+v", got["ok"].Event)
	}

	dlq := b.read(t, b.cfg.DeadLetter, "failed-no-err")
	if len(dlq) != 5 {
		t.Fatalf("%d dead letters, want 5", len(dlq))
	}
	for _, r := range dlq {
		id := string(r.Key)
		reason, _ := tiers.Header(r.Headers, tiers.HeaderReason)
		want := "close_failed: "
		if id == "err" {
			want = "retries_exhausted: "
		}
		if string(reason) != want+got[id].Error {
			t.Errorf("%s: reason %q, want %q", id, reason, want+got[id].Error)
		}
		if n, _ := tiers.Header(r.Headers, tiers.HeaderAttempt); string(n) != "1" {
			t.Errorf("%s: attempt header %q, want 1", id, n)
		}
		if src, _ := tiers.Header(r.Headers, tiers.HeaderSource); string(src) != fmt.Sprintf("%s[0]@%d", b.cfg.Topics[0], offs[id]) {
			t.Errorf("%s: source %q", id, src)
		}
		if at, _ := tiers.Header(r.Headers, tiers.HeaderDeadAt); !bytes.Equal(at, tiers.FormatMillis(t0)) {
			t.Errorf("%s: dead at %q, want %d", id, at, t0.UnixMilli())
		}
		if string(r.Value) != "v-"+id {
			t.Errorf("%s: value %q, want it unchanged", id, r.Value)
		}
		if v, _ := tiers.Header(r.Headers, "x-trace"); string(v) != id {
			t.Errorf("%s: the record's own headers were not kept: %v", id, r.Headers)
		}
		if v, _ := tiers.Header(r.Headers, tiers.HeaderDue); !bytes.Equal(v, tiers.FormatMillis(due)) {
			t.Errorf("%s: due header %q not kept", id, v)
		}
	}
	if s := b.c.Stats(); s != (Stats{Closed: 1, Failed: 5, DeadLettered: 5}) {
		t.Errorf("stats %+v", s)
	}
}

// TestMalformed: a record that breaks the contract is dead-lettered with the
// reason, is not handed to the closer and has no outcome event; the records
// after it are handled.
func TestMalformed(t *testing.T) {
	var calls atomic.Int32
	cr := closer.CloserFunc(func(_ context.Context, tk closer.Task) (closer.Result, error) {
		calls.Add(1)
		if tk.ID != "good" {
			t.Errorf("closer called for %q", tk.ID)
		}
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setup(t, Config{}, cr)
	due := hdrMillis(tiers.HeaderDue, t0)
	cases := []struct {
		key    string
		hs     []kgo.RecordHeader
		reason tiers.Reason
	}{
		{"", []kgo.RecordHeader{due}, tiers.ReasonKeyMissing},
		{"no-due", []kgo.RecordHeader{hdr(tiers.HeaderKind, "k")}, tiers.ReasonDueMissing},
		{"due-nan", []kgo.RecordHeader{hdr(tiers.HeaderDue, "soon")}, tiers.ReasonDueNotNumber},
		{"due-twice", []kgo.RecordHeader{due, due}, tiers.ReasonDuplicateHeader},
		{"bad-hops", []kgo.RecordHeader{due, hdr(tiers.HeaderHops, "-1")}, tiers.ReasonHeaderInvalid},
	}
	for i, tc := range cases {
		b.produce(t, tc.key, fmt.Sprint("bad-", i), tc.hs...)
	}
	b.produce(t, "good", "", due)
	b.waitStats(t, func(s Stats) bool { return s.Closed == 1 })

	// Outcome events are produced in handling order: one for a malformed
	// record would come before good's.
	got := b.outcomes(t, "good")
	if len(got) != 1 {
		t.Errorf("outcome events for %v, want only good", got)
	}
	if calls.Load() != 1 {
		t.Errorf("closer called %d times, want 1", calls.Load())
	}
	dlq := b.read(t, b.cfg.DeadLetter, "bad-hops")
	if len(dlq) != len(cases) {
		t.Fatalf("%d dead letters, want %d", len(dlq), len(cases))
	}
	for i, r := range dlq {
		tc := cases[i]
		if string(r.Key) != tc.key || string(r.Value) != fmt.Sprint("bad-", i) {
			t.Errorf("dead letter %d: key %q value %q, want %q, bad-%d", i, r.Key, r.Value, tc.key, i)
		}
		reason, _ := tiers.Header(r.Headers, tiers.HeaderReason)
		if !strings.HasPrefix(string(reason), string(tc.reason)+": ") {
			t.Errorf("dead letter %d (%q): reason %q, want %s", i, tc.key, reason, tc.reason)
		}
	}
	if s := b.c.Stats(); s != (Stats{Closed: 1, DeadLettered: int64(len(cases))}) {
		t.Errorf("stats %+v", s)
	}
}

// TestResumeAfterStop: a graceful stop commits every handled record, so the
// group resumes after the last one and nothing is closed twice.
func TestResumeAfterStop(t *testing.T) {
	var m closer.Memory
	b := setup(t, Config{}, &m)
	for i := range 3 {
		id := fmt.Sprint("o", i)
		m.Put(id, closer.StateUnpaid)
		b.produce(t, id, "", hdrMillis(tiers.HeaderDue, t0))
	}
	b.waitStats(t, func(s Stats) bool { return s.Closed == 3 })
	if !b.c.Ready() {
		t.Error("not ready while consuming")
	}
	if err := b.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if b.c.Ready() {
		t.Error("ready after Run returned")
	}
	if got := b.committed(t); got != 3 {
		t.Fatalf("committed offset %d after a graceful stop, want 3", got)
	}

	// A plain consumer in the group starts after the handled records.
	after := b.produce(t, "after", "", hdrMillis(tiers.HeaderDue, t0))
	cl, err := kgo.NewClient(seeds, kgo.ConsumerGroup(b.cfg.Group), kgo.ConsumeTopics(b.cfg.Topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var first *kgo.Record
	for first == nil {
		fs := cl.PollRecords(ctx, 1)
		if ctx.Err() != nil {
			t.Fatal("the group consumer got no record in 10s")
		}
		if recs := fs.Records(); len(recs) > 0 {
			first = recs[0]
		}
	}
	cl.Close()
	if first.Offset != after || string(first.Key) != "after" {
		t.Fatalf("group resumed at %s@%d, want after@%d", first.Key, first.Offset, after)
	}

	// So does a new canceller: it closes only the new task.
	b.start(t, Options{Closer: &m})
	b.waitStats(t, func(s Stats) bool { return s.NotFound == 1 })
	if s := b.c.Stats(); s != (Stats{NotFound: 1}) {
		t.Errorf("restarted canceller stats %+v, want only the new task", s)
	}
	for i := range 3 {
		if n := m.Closes(fmt.Sprint("o", i)); n != 1 {
			t.Errorf("o%d closed %d times", i, n)
		}
	}
	if err := b.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := b.committed(t); got != after+1 {
		t.Errorf("committed offset %d, want %d", got, after+1)
	}
}

// TestCommitOnlyDone: the periodic commit, driven by the clock, never passes
// a record whose close is still running.
func TestCommitOnlyDone(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	cr := closer.CloserFunc(func(ctx context.Context, tk closer.Task) (closer.Result, error) {
		if tk.ID == "slow" {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
				return closer.Result{}, ctx.Err()
			}
		}
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	b := setup(t, Config{CommitInterval: time.Second}, cr)
	// Registered after setup's cleanups, so it runs before them: a failed
	// test must not leave the stop waiting for the close timeout.
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	for _, id := range []string{"a", "b", "slow", "c"} {
		b.produce(t, id, "", hdrMillis(tiers.HeaderDue, t0))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatalf("the slow close never started; stats %+v", b.c.Stats())
	}

	// commit lets a commit interval pass on the canceller's clock, so that
	// the committer may commit what has finished since its last commit.
	commit := func() { b.clock.Advance(b.cfg.CommitInterval) }
	// a and b are done once their outcomes are acknowledged; slow (offset
	// 2) is not, so the watermark stops at 2 however often it commits.
	waitFor(t, "offset 2 committed", func() bool {
		commit()
		got := b.committed(t)
		if got > 2 {
			t.Fatalf("committed %d while the close of offset 2 runs", got)
		}
		return got == 2
	}, func() string { return fmt.Sprint(b.committed(t)) })
	commit()
	if got := b.committed(t); got != 2 {
		t.Fatalf("committed %d while the close of offset 2 runs, want 2", got)
	}

	unblock()
	b.waitStats(t, func(s Stats) bool { return s.Closed == 4 })
	if err := b.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := b.committed(t); got != 4 {
		t.Errorf("committed %d after the stop, want 4", got)
	}
}

// TestMemoryCloser runs the in-memory order store end to end: each state
// gets its outcome, and a duplicate delivery changes nothing.
func TestMemoryCloser(t *testing.T) {
	var m closer.Memory
	m.Put("unpaid", closer.StateUnpaid)
	m.Put("paid", closer.StatePaid)
	m.Put("closed", closer.StateClosed)
	b := setup(t, Config{}, &m)
	due := hdrMillis(tiers.HeaderDue, t0.Add(-time.Minute))
	for _, id := range []string{"unpaid", "paid", "closed", "unknown"} {
		b.produce(t, id, "", due)
	}
	b.waitStats(t, func(s Stats) bool { return s.Closed+s.Skipped+s.AlreadyClosed+s.NotFound == 4 })
	got := b.outcomes(t, "unknown")
	for id, want := range map[string]outcome.Event{
		"unpaid":  {Outcome: "closed"},
		"paid":    {Outcome: "skipped", Detail: closer.StatePaid},
		"closed":  {Outcome: "already_closed"},
		"unknown": {Outcome: "not_found"},
	} {
		if e := got[id]; e.Outcome != want.Outcome || e.Detail != want.Detail || e.Error != "" || e.LatenessMs != 60_000 {
			t.Errorf("%s: %+v, want outcome %s detail %q", id, e.Event, want.Outcome, want.Detail)
		}
	}

	// The same task again, as after a crash before the commit.
	b.produce(t, "unpaid", "", due)
	b.waitStats(t, func(s Stats) bool { return s.AlreadyClosed == 2 })
	if s := b.c.Stats(); s != (Stats{Closed: 1, Skipped: 1, AlreadyClosed: 2, NotFound: 1}) {
		t.Errorf("stats %+v", s)
	}
	if n := m.Closes("unpaid"); n != 1 {
		t.Errorf("unpaid closed %d times, want 1", n)
	}
	if s, _ := m.State("paid"); s != closer.StatePaid {
		t.Errorf("paid order is %s", s)
	}
}

// TestNewRejectsBadConfig: New reports every problem and starts no client.
func TestNewRejectsBadConfig(t *testing.T) {
	_, err := New(Config{
		Prefix: "x.", Topics: []string{"x.outcomes"}, MaxPollRecords: -1, CloseTimeout: -time.Second,
	}, Options{Kafka: []kgo.Opt{seeds}})
	if err == nil {
		t.Fatal("New accepted a bad config")
	}
	for _, want := range []string{"Topics", "MaxPollRecords", "CloseTimeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestFetchBounds: the canceller's client fetches at most fetchMaxBytes at
// once, so a burst does not fill its memory with decoded fetches.
func TestFetchBounds(t *testing.T) {
	b := setup(t, Config{}, nil)
	cl := b.c.Client()
	if got := cl.OptValue(kgo.FetchMaxBytes); got != int32(fetchMaxBytes) {
		t.Errorf("FetchMaxBytes = %v, want %d", got, fetchMaxBytes)
	}
	if got := cl.OptValue(kgo.FetchMaxPartitionBytes); got != int32(fetchMaxPartitionBytes) {
		t.Errorf("FetchMaxPartitionBytes = %v, want %d", got, fetchMaxPartitionBytes)
	}
}
