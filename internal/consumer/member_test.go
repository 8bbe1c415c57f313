package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
	"github.com/hourglass/hourglass/internal/testutil/poll"
)

var cluster *kfake.Cluster

// testTimeout bounds every wait on the broker.
const testTimeout = 20 * time.Second

func TestMain(m *testing.M) {
	kfaketest.Main(m, func(c *kfake.Cluster) { cluster = c })
}

var seq atomic.Int64

// bundle is a member of a new group on a new one-partition topic holding n
// records, which the member has taken, in offset order.
type bundle struct {
	m     *Member
	adm   *kadm.Client
	topic string
	group string
	marks []Mark
	// released records each call of Release.
	released chan release
}

type release struct {
	parts    map[string][]int32
	lost     bool
	deadline time.Time
}

// setup starts a member with cfg (Group, Kafka and Release are set here;
// release, if not nil, runs inside Release) and takes n records.
func setup(t *testing.T, n int, cfg Config, onRelease func()) *bundle {
	t.Helper()
	id := seq.Add(1)
	b := &bundle{topic: fmt.Sprintf("member.%s.%d", t.Name(), id), group: fmt.Sprintf("group.%d", id), released: make(chan release, 16)}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admCl.Close)
	b.adm = kadm.NewClient(admCl)
	ctx := testCtx(t)
	if _, err := b.adm.CreateTopic(ctx, 1, 1, nil, b.topic); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := admCl.ProduceSync(ctx, &kgo.Record{Topic: b.topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Group.Name, cfg.Group.Topics = b.group, []string{b.topic}
	cfg.Kafka = []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Release = func(parts map[string][]int32, lost bool, deadline time.Time) {
		if onRelease != nil {
			onRelease()
		}
		b.released <- release{parts, lost, deadline}
	}
	b.m, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.m.Client().Close() })
	for len(b.marks) < n && ctx.Err() == nil {
		fs := b.m.Client().PollRecords(ctx, n-len(b.marks))
		fs.EachRecord(func(r *kgo.Record) { b.marks = append(b.marks, b.m.Take(r)) })
		b.m.Client().AllowRebalance()
	}
	if len(b.marks) < n {
		t.Fatalf("took %d of %d records", len(b.marks), n)
	}
	return b
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// committed returns the group's committed offset of the partition, -1 for
// none.
func (b *bundle) committed(t *testing.T) int64 {
	t.Helper()
	offs, err := b.adm.FetchOffsets(testCtx(t), b.group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(b.topic, 0); ok {
		return o.At
	}
	return -1
}

func (b *bundle) waitCommitted(t *testing.T, want int64) {
	t.Helper()
	poll.Until(t, testTimeout, fmt.Sprintf("commit of offset %d", want),
		func() bool { return b.committed(t) == want },
		func() string { return fmt.Sprintf("committed %d", b.committed(t)) })
}

// TestCommitsContiguousWatermark: the member commits below the first
// record not finished, whatever order records finish in, soon after the
// watermark moves.
func TestCommitsContiguousWatermark(t *testing.T) {
	b := setup(t, 5, Config{}, nil)
	b.m.Start()
	b.m.Done(b.marks[3], b.marks[4])
	b.m.Done(b.marks[0])
	b.waitCommitted(t, 1)
	b.m.Done(b.marks[1])
	b.waitCommitted(t, 2)
	b.m.Done(b.marks[2])
	b.waitCommitted(t, 5)
	b.m.Close(t.Context())
}

// TestCommitNothingTaken: a member that took nothing commits nothing.
func TestCommitNothingTaken(t *testing.T) {
	b := setup(t, 0, Config{}, nil)
	if err := b.m.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := b.committed(t); got != -1 {
		t.Fatalf("committed %d, want nothing", got)
	}
}

// TestRevoke: a revoke asks the service to let go of the partition with a
// deadline RevokeTimeout away, commits what is finished once it has, and
// forgets the partition: marks finished afterwards are stale and move
// nothing.
func TestRevoke(t *testing.T) {
	var b *bundle
	b = setup(t, 4, Config{RevokeTimeout: 3 * time.Second}, func() {
		b.m.Done(b.marks[0], b.marks[1]) // finished while letting go
	})
	start := time.Now()
	b.m.Revoked(map[string][]int32{b.topic: {0}})
	r := <-b.released
	if r.lost || len(r.parts[b.topic]) != 1 {
		t.Errorf("released %+v, want the revoked partition", r)
	}
	if d := r.deadline.Sub(start); d < 3*time.Second || d > 4*time.Second {
		t.Errorf("release deadline %v after the revoke, want RevokeTimeout (3s)", d)
	}
	if got := b.committed(t); got != 2 {
		t.Errorf("committed %d when the revoke returned, want 2", got)
	}
	if !b.m.Stale(b.marks[2]) {
		t.Error("a mark of a revoked partition is not stale")
	}
	b.m.Done(b.marks[2], b.marks[3])
	if err := b.m.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := b.committed(t); got != 2 {
		t.Errorf("committed %d after finishing marks of the revoked partition, want 2", got)
	}
}

// TestLost: a loss lets the service drop the partition's records and
// commits nothing for it, then or later.
func TestLost(t *testing.T) {
	b := setup(t, 3, Config{}, nil)
	b.m.Done(b.marks[0])
	b.m.Lost(map[string][]int32{b.topic: {0}})
	if r := <-b.released; !r.lost {
		t.Errorf("released %+v, want lost", r)
	}
	b.m.Done(b.marks[1], b.marks[2])
	if err := b.m.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := b.committed(t); got != -1 {
		t.Errorf("committed %d for a lost partition, want nothing", got)
	}
}

// TestCommitsDuringRelease: commits go on while a revoke waits for the
// service to let go (a slow close must not hold up the commits of the
// partitions that stay), and the revoke's own commit comes after the
// release.
func TestCommitsDuringRelease(t *testing.T) {
	var (
		b    *bundle
		once sync.Once // not again at the revoke of the client's Close
	)
	b = setup(t, 3, Config{}, func() { once.Do(func() { releaseCommitting(t, b) }) })
	b.m.Revoked(map[string][]int32{b.topic: {0}})
	if got := b.committed(t); got != 2 {
		t.Errorf("committed %d after the revoke, want 2", got)
	}
}

// releaseCommitting is TestCommitsDuringRelease's Release: a commit
// completes while it runs, and a record finishes.
func releaseCommitting(t *testing.T, b *bundle) {
	b.m.Done(b.marks[0])
	committed := make(chan error, 1)
	go func() { committed <- b.m.Commit() }()
	select {
	case err := <-committed:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(testTimeout):
		t.Error("a commit waited for the revoke's release")
	}
	if got := b.committed(t); got != 1 {
		t.Errorf("committed %d during the release, want 1", got)
	}
	b.m.Done(b.marks[1])
}

// TestResetMakesMarksStale: an offset taken again (the partition was reset
// below what was taken) makes the marks from there up stale; their Done
// moves nothing, and the records taken again are the ones to finish.
func TestResetMakesMarksStale(t *testing.T) {
	b := setup(t, 4, Config{}, nil)
	again := b.m.Take(&kgo.Record{Topic: b.topic, Partition: 0, Offset: 2})
	if !b.m.Stale(b.marks[2]) || !b.m.Stale(b.marks[3]) || b.m.Stale(b.marks[1]) {
		t.Fatal("after a reset to offset 2: want the marks of 2 and 3 stale, not 1")
	}
	b.m.Done(b.marks...)
	if err := b.m.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := b.committed(t); got != 2 {
		t.Errorf("committed %d, want 2 (offset 2 taken again and not finished)", got)
	}
	b.m.Done(again)
	if err := b.m.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := b.committed(t); got != 3 {
		t.Errorf("committed %d, want 3", got)
	}
}

// TestSkippedBatch: a skipped batch is one mark whose Done moves the
// watermark past the whole batch.
func TestSkippedBatch(t *testing.T) {
	b := setup(t, 1, Config{}, nil)
	k := b.m.TakeSkipped(&kgo.ErrDecompressTooLarge{Topic: b.topic, Partition: 0, Offset: 1, NextOffset: 7})
	b.m.Done(b.marks[0])
	if err := b.m.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := b.committed(t); got != 1 {
		t.Errorf("committed %d before the skipped batch is finished, want 1", got)
	}
	b.m.Done(k)
	if err := b.m.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := b.committed(t); got != 7 {
		t.Errorf("committed %d, want 7 (past the batch)", got)
	}
}

// TestCloseStatic: Close commits what is finished and, for a static
// member, leaves the group explicitly, so that no member is left holding
// the partitions until the session timeout.
func TestCloseStatic(t *testing.T) {
	b := setup(t, 3, Config{Group: Group{InstanceID: "member-1"}}, nil)
	b.m.Start()
	b.m.Done(b.marks[0], b.marks[1])
	b.m.Close(t.Context())
	if got := b.committed(t); got != 2 {
		t.Errorf("committed %d after Close, want 2", got)
	}
	groups, err := b.adm.DescribeGroups(testCtx(t), b.group)
	if err != nil {
		t.Fatal(err)
	}
	if g := groups[b.group]; len(g.Members) != 0 {
		t.Errorf("group still has %d members after a static member's Close", len(g.Members))
	}
}

// TestNewNeedsGroup: a member needs a group name and topics.
func TestNewNeedsGroup(t *testing.T) {
	if _, err := New(Config{Group: Group{Name: "g"}}); err == nil {
		t.Error("New without topics: no error")
	}
	if _, err := New(Config{Group: Group{Topics: []string{"t"}}}); err == nil {
		t.Error("New without a group name: no error")
	}
}

// TestCommitFailuresBackOff: the group refuses every commit (an ACL the
// member lacks): the member tries again with a backoff doubling from the
// commit interval, not every interval (20 commits and log lines a
// second, for good), counts the failures in
// hourglass_consumer_commit_failures_total, and commits once the broker
// takes commits again.
func TestCommitFailuresBackOff(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := setup(t, 1, Config{Registerer: reg}, nil)
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: b.group, Err: kerr.GroupAuthorizationFailed, Count: -1})
	defer fault.Remove()
	b.m.Start()
	defer b.m.Close(t.Context())
	b.m.Done(b.marks[0])
	if err := fault.Wait(testCtx(t), 1); err != nil {
		t.Fatalf("no commit: %v", err)
	}
	from, hits := time.Now(), fault.Hits()
	poll.Until(t, testTimeout, "three seconds", func() bool { return time.Since(from) >= 3*time.Second }, nil)
	// 50 ms doubling: about six in three seconds; every 50 ms, sixty.
	if n := fault.Hits() - hits; n > 12 {
		t.Errorf("%d commits refused in %v: no backoff", n, time.Since(from).Round(time.Millisecond))
	}
	// Every refused commit is counted, with the group's label.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var counted float64
	for _, mf := range mfs {
		if mf.GetName() == "hourglass_consumer_commit_failures_total" {
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() == b.group {
					counted = m.GetCounter().GetValue()
				}
			}
		}
	}
	if total := float64(fault.Hits()); counted < 1 || counted > total {
		t.Errorf("hourglass_consumer_commit_failures_total{group=%q} = %v; want 1 to %v (the commits refused)", b.group, counted, total)
	}
	fault.Remove()
	b.waitCommitted(t, 1)
}

// TestHandledAfterCrash: a member finishes every record but two (held, as
// the router holds a deadline in its timer) and commits; it dies without
// another commit. The next member of the group reads from the commit, at
// the first held record, and the records done after it come back Handled,
// to be skipped instead of repeated; the held ones come back to be done
// again, and once they are the commit passes them all.
func TestHandledAfterCrash(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := setup(t, 10, Config{Registerer: prometheus.NewRegistry()}, nil)
	for i, k := range a.marks {
		if i != 2 && i != 7 {
			a.m.Done(k)
		}
	}
	if err := a.m.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := a.committed(t); got != 2 {
		t.Fatalf("committed %d, want 2 (the first record held)", got)
	}
	a.m.Client().Close() // a crash: no final commit

	b, err := New(Config{Group: Group{Name: a.group, Topics: []string{a.topic}}, Kafka: []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)},
		Logger: slog.New(slog.DiscardHandler), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Client().Close() })
	ctx := testCtx(t)
	var handled, again []int64
	var marks []Mark
	for len(handled)+len(again) < 8 && ctx.Err() == nil {
		fs := b.Client().PollRecords(ctx, 10)
		fs.EachRecord(func(r *kgo.Record) {
			k := b.Take(r)
			if k.Handled() {
				handled = append(handled, r.Offset)
				return
			}
			again = append(again, r.Offset)
			marks = append(marks, k)
		})
		b.Client().AllowRebalance()
	}
	if want := []int64{3, 4, 5, 6, 8, 9}; !slices.Equal(handled, want) {
		t.Errorf("handled %v, want %v", handled, want)
	}
	if want := []int64{2, 7}; !slices.Equal(again, want) {
		t.Errorf("read again %v, want %v (the records held)", again, want)
	}
	b.Done(marks...)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	a.waitCommitted(t, 10)
	if got := testutil.ToFloat64(b.skipped); got != 6 {
		t.Errorf("hourglass_consumer_handled_skipped_total = %v, want 6", got)
	}
}

// TestCommitMetadataRefused: a cluster whose offset.metadata.max.bytes is
// below what a commit records refuses it: the member commits on without
// the done offsets, instead of failing every commit.
func TestCommitMetadataRefused(t *testing.T) {
	b := setup(t, 4, Config{}, nil)
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: b.group, Err: kerr.OffsetMetadataTooLarge, Count: 1})
	defer fault.Remove()
	b.m.Start()
	defer b.m.Close(t.Context())
	b.m.Done(b.marks[0], b.marks[2], b.marks[3]) // 1 held: metadata records 2 and 3
	b.waitCommitted(t, 1)
	if fault.Hits() != 1 {
		t.Fatalf("%d commits refused, want 1", fault.Hits())
	}
	if got := b.m.metaBits.Load(); got != 0 {
		t.Errorf("metadata bits %d after the brokers refused it, want 0", got)
	}
	b.m.Done(b.marks[1])
	b.waitCommitted(t, 4)
}
