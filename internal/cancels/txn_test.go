package cancels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/hostile"
	"github.com/hourglass/hourglass/internal/testutil/syncbuf"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// newCluster starts a one-broker kfake cluster with the topic in
// partitions, closed when the test ends.
func newCluster(t *testing.T, partitions int32) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, testTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newTxnClient returns a transactional producer of its own id that has
// begun a transaction, closed when the test ends.
func newTxnClient(t *testing.T, seeds kgo.Opt, id string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(seeds, kgo.TransactionalID(id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	return cl
}

func endTxn(t *testing.T, cl *kgo.Client, commit kgo.TransactionEndTry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.EndTransaction(ctx, commit); err != nil {
		t.Fatal(err)
	}
}

// verdict checks a deadline of task id scheduled and due at due.
func (b *readerBundle) verdict(t *testing.T, id string, due time.Time) Verdict {
	t.Helper()
	v, _, err := b.r.Check(Deadline{ID: id, Scheduled: due.Add(-time.Hour), Deadline: due, Due: due}, due)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitVerdict waits, bounded, until the deadline of id due at due gets
// want, covering the topic again on each try.
func (b *readerBundle) waitVerdict(t *testing.T, id string, due time.Time, want Verdict) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.cover(t)
		got := b.verdict(t, id, due)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: verdict %v, want %v", id, got, want)
		}
		select {
		case <-b.r.Advanced():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestReaderOpenTransactionHoldsOnlyItsIDs: a transaction left open on the
// topic holds the deadlines of the task id it wrote, and no other: the
// cancellations acknowledged after it began are read and applied (a reader
// of committed records waits for the last stable offset, which the open
// transaction pins, and would pass them over). Its own task id is held
// until it commits (then cancelled) or aborts (then clear).
func TestReaderOpenTransactionHoldsOnlyItsIDs(t *testing.T) {
	c := newCluster(t, 2)
	b := startReader(t, c, "")
	cl, err := kgo.NewClient(b.seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	open := newTxnClient(t, b.seeds, "open")
	aborted := newTxnClient(t, b.seeds, "aborted")
	now := time.Now()
	produce(t, open, tiers.Cancellation{ID: "in-open", At: now})
	produce(t, aborted, tiers.Cancellation{ID: "in-aborted", At: now})
	ids := []string{"after-1", "after-2", "after-3", "after-4"}
	for _, id := range ids {
		produce(t, cl, tiers.Cancellation{ID: id, At: now})
	}
	due := time.Now()
	b.cover(t)
	for _, id := range ids {
		if v := b.verdict(t, id, due); v != Cancelled {
			t.Errorf("%s, acknowledged behind an open transaction: %v, want cancelled", id, v)
		}
	}
	if v := b.verdict(t, "untouched", due); v != Clear {
		t.Errorf("a task no transaction wrote: %v, want clear", v)
	}
	for _, id := range []string{"in-open", "in-aborted"} {
		if v := b.verdict(t, id, due); v != Held {
			t.Errorf("%s, written by an open transaction: %v, want held", id, v)
		}
	}
	if n, first := b.r.OpenTransactions(); n != 2 || first.IsZero() {
		t.Errorf("OpenTransactions %d since %v, want 2", n, first)
	}
	endTxn(t, open, kgo.TryCommit)
	endTxn(t, aborted, kgo.TryAbort)
	b.waitVerdict(t, "in-open", due, Cancelled)
	b.waitVerdict(t, "in-aborted", due, Clear)
	if n, first := b.r.OpenTransactions(); n != 0 || !first.IsZero() {
		t.Errorf("OpenTransactions %d since %v once both ended, want none", n, first)
	}
}

// TestReaderSupersedesPending: a record of a task id written after a
// pending one in its partition replaces it, whatever its transaction does
// after (the compacted topic keeps the latest record of a key): a
// withdrawal written after an open transaction's cancellation stands when
// that transaction commits, and lets the task's deadlines go at once; a
// transaction's withdrawal written after a cancellation holds the task
// until it commits, then stands.
func TestReaderSupersedesPending(t *testing.T) {
	c := newCluster(t, 1)
	b := startReader(t, c, "")
	cl, err := kgo.NewClient(b.seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	now := time.Now()
	first := newTxnClient(t, b.seeds, "first")
	produce(t, first, tiers.Cancellation{ID: "k", At: now})
	produce(t, cl, tiers.Cancellation{ID: "k", At: now, Withdrawn: true})
	produce(t, cl, tiers.Cancellation{ID: "m", At: now})
	second := newTxnClient(t, b.seeds, "second")
	produce(t, second, tiers.Cancellation{ID: "m", At: now, Withdrawn: true})
	due := time.Now()
	b.cover(t)
	if v := b.verdict(t, "k", due); v != Clear {
		t.Errorf("k, withdrawn after the open transaction's cancellation: %v, want clear", v)
	}
	if v := b.verdict(t, "m", due); v != Held {
		t.Errorf("m, withdrawn in an open transaction: %v, want held", v)
	}
	endTxn(t, first, kgo.TryCommit)
	endTxn(t, second, kgo.TryCommit)
	b.waitVerdict(t, "m", due, Clear)
	if v := b.verdict(t, "k", due); v != Clear {
		t.Errorf("k once the earlier transaction committed: %v, want clear (the later withdrawal stands)", v)
	}
}

// TestReaderOpenTransactionRestart: a router stopped while a transaction is
// open, with a store that survives, reads the transaction's records again
// when it starts (the store holds no pending record), so the task stays
// held and is cancelled when the transaction commits.
func TestReaderOpenTransactionRestart(t *testing.T) {
	c := newCluster(t, 1)
	dir := t.TempDir()
	b := startReader(t, c, dir)
	cl, err := kgo.NewClient(b.seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	now := time.Now()
	open := newTxnClient(t, b.seeds, "open")
	produce(t, open, tiers.Cancellation{ID: "r", At: now})
	produce(t, cl, tiers.Cancellation{ID: "plain", At: now})
	b.cover(t)
	b.stop()

	b2 := startReader(t, c, dir)
	due := time.Now()
	b2.cover(t)
	if v := b2.verdict(t, "r", due); v != Held {
		t.Errorf("r after the restart: %v, want held", v)
	}
	if v := b2.verdict(t, "plain", due); v != Cancelled {
		t.Errorf("plain after the restart: %v, want cancelled", v)
	}
	endTxn(t, open, kgo.TryCommit)
	b2.waitVerdict(t, "r", due, Cancelled)
}

// TestReaderCoveredFromRoundStart: Covered moves to when a round began,
// before it listed the end offsets, not to when it ended: a cancellation
// acknowledged while the listing is under way may be beyond the offsets it
// lists. The broker moves the clock a minute on while it answers.
func TestReaderCoveredFromRoundStart(t *testing.T) {
	c := newCluster(t, 1)
	fc := clock.NewFake(time.UnixMilli(1_800_000_000_000))
	store, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := NewReader(ReaderConfig{Topic: testTopic, Kafka: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, MaxDelay: time.Hour,
		Clock: fc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	b := &readerBundle{r: r}
	b.waitCovered(t, fc.Now())
	c.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		fc.Advance(time.Minute)
		return nil, nil, false
	})
	fc.Advance(time.Second)
	t0 := fc.Now()
	r.Want(t0)
	b.waitCovered(t, t0)
	if got := r.Covered(); !got.Equal(t0) {
		t.Errorf("Covered %v after a round begun at %v: it claims %v during which it listed nothing", got, t0, got.Sub(t0))
	}
}

// waitCovered waits, bounded, until Covered reaches at.
func (b *readerBundle) waitCovered(t *testing.T, at time.Time) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for b.r.Covered().Before(at) {
		select {
		case <-b.r.Advanced():
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("Covered %v never reached %v", b.r.Covered(), at)
		}
	}
}

// TestReaderTransactionOverflow: a transaction left open that writes more
// than the tracker keeps in memory holds every task id (the records it
// dropped could be any), while the reader reads on; once it commits, the
// reader reads its records again and applies them as committed, and lets
// the task ids go.
func TestReaderTransactionOverflow(t *testing.T) {
	c := newCluster(t, 2)
	seeds := kgo.SeedBrokers(c.ListenAddrs()...)
	store, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := NewReader(ReaderConfig{Topic: testTopic, Kafka: []kgo.Opt{seeds}, MaxDelay: time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store)
	if err != nil {
		t.Fatal(err)
	}
	r.txns.limit = 20 * (pendingCost + len("big-00")) // 20 records
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	b := &readerBundle{r: r, seeds: seeds}
	cl, err := kgo.NewClient(seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	now := time.Now()
	big := newTxnClient(t, seeds, "big")
	for i := range 50 {
		produce(t, big, tiers.Cancellation{ID: fmt.Sprintf("big-%02d", i), At: now})
	}
	produce(t, cl, tiers.Cancellation{ID: "plain", At: now})
	due := time.Now()
	b.cover(t)
	for _, id := range []string{"untouched", "plain", "big-07"} {
		if v := b.verdict(t, id, due); v != Held {
			t.Errorf("%s while the tracker overflows: %v, want held", id, v)
		}
	}
	endTxn(t, big, kgo.TryCommit)
	b.waitVerdict(t, "untouched", due, Clear)
	for i := range 50 {
		if v := b.verdict(t, fmt.Sprintf("big-%02d", i), due); v != Cancelled {
			t.Errorf("big-%02d once its transaction committed: %v, want cancelled", i, v)
		}
	}
	if v := b.verdict(t, "plain", due); v != Cancelled {
		t.Errorf("plain: %v, want cancelled", v)
	}
}

// txnRec is a record of a transaction of producer pid in partition p.
func txnRec(p int32, pid, offset int64, id string) (*kgo.Record, change) {
	return &kgo.Record{Partition: p, ProducerID: pid, Offset: offset, Key: []byte(id)},
		change{c: tiers.Cancellation{ID: id, At: time.UnixMilli(1)}}
}

func heldIDs(t *txns) map[string]int {
	out := map[string]int{}
	for _, d := range t.takeDeltas() {
		out[d.id] += d.n
		if out[d.id] == 0 {
			delete(out, d.id)
		}
	}
	return out
}

// TestTxnsOrphans: a transaction below its partition's last stable offset
// whose marker the read passed without seeing ends as committed; those of
// other partitions, or at or above the last stable offset, stay open.
func TestTxnsOrphans(t *testing.T) {
	tr := newTxns()
	now := time.Now()
	for _, r := range []struct {
		p      int32
		pid    int64
		offset int64
		id     string
	}{{0, 7, 10, "a"}, {0, 7, 12, "b"}, {0, 8, 11, "c"}, {0, 9, 20, "d"}, {1, 7, 5, "e"}} {
		rec, ch := txnRec(r.p, r.pid, r.offset, r.id)
		tr.add(rec, ch, now)
	}
	live, n := tr.orphans(0, 20)
	if n != 2 {
		t.Errorf("%d orphans, want 2 (producers 7 and 8 of partition 0)", n)
	}
	var got []string
	for _, p := range live {
		got = append(got, fmt.Sprintf("%s@%d", p.change.c.ID, p.offset))
	}
	if want := "[a@10 c@11 b@12]"; fmt.Sprint(got) != want {
		t.Errorf("orphans' records %v, want %s in offset order", got, want)
	}
	if held := heldIDs(tr); fmt.Sprint(held) != "map[d:1 e:1]" {
		t.Errorf("held %v, want d and e", held)
	}
}

// TestTxnsOverflow: past the limit the tracker drops the pending records,
// holds every id and notes where to read again; a transaction that begins
// meanwhile is dropped too; once both have ended it reads again from the
// lowest of their first offsets, knows how each ended up to its marker,
// and stops holding every id once the read has passed both markers.
func TestTxnsOverflow(t *testing.T) {
	tr := newTxns()
	tr.limit = 2 * (pendingCost + 1)
	now := time.Now()
	for i, id := range []string{"a", "b", "c"} {
		rec, ch := txnRec(0, 7, int64(10+i), id)
		tr.add(rec, ch, now)
	}
	if !tr.frozen() || len(tr.byID) != 0 || tr.bytes != 0 {
		t.Fatalf("after 3 records over a limit of 2: frozen %v, %d ids pending, %d bytes", tr.frozen(), len(tr.byID), tr.bytes)
	}
	rec, ch := txnRec(0, 8, 15, "d")
	tr.add(rec, ch, now)
	if tr.replay() != nil {
		t.Fatal("replay while the dropped transactions are open")
	}
	tr.end(0, 7, true, 16)
	tr.end(0, 8, false, 17)
	rewind := tr.replay()
	if fmt.Sprint(rewind) != "map[0:10]" || !tr.frozen() {
		t.Fatalf("rewind %v, frozen %v; want map[0:10], frozen while replaying", rewind, tr.frozen())
	}
	for _, c := range []struct {
		offset int64
		pid    int64
		commit bool
	}{{11, 7, true}, {15, 8, false}} {
		rec, _ := txnRec(0, c.pid, c.offset, "x")
		if commit, ok := tr.known(rec); !ok || commit != c.commit {
			t.Errorf("offset %d of producer %d: known %v, commit %v; want known, commit %v", c.offset, c.pid, ok, commit, c.commit)
		}
	}
	tr.passed(0, 17)
	if !tr.frozen() {
		t.Error("no longer frozen before the read passed the last marker")
	}
	tr.passed(0, 18)
	if tr.frozen() {
		t.Error("still frozen once the read passed both markers")
	}
}

// TestReaderBigBatches: batches of cancellations in two partitions that
// each decode to megabytes (within the cap) are read a decode budget at a
// time: a partition whose first batch a fetch leaves for later is neither
// warned about nor paused, and every cancellation is read.
func TestReaderBigBatches(t *testing.T) {
	c := newCluster(t, 2)
	var logs syncbuf.Buffer
	seeds := kgo.SeedBrokers(c.ListenAddrs()...)
	cl, err := kgo.NewClient(seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	now := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const batches, perBatch = 8, 10
	for i := range batches {
		recs := make([]kgo.Record, perBatch)
		for j := range recs {
			recs[j] = kgo.Record{Key: []byte(fmt.Sprintf("big-%d-%d", i, j)), Value: make([]byte, 1<<20), Timestamp: now}
		}
		batch, err := hostile.ZstdBatch(recs)
		if err != nil {
			t.Fatal(err)
		}
		if err := hostile.ProduceBatch(ctx, cl, testTopic, int32(i%2), batch); err != nil {
			t.Fatal(err)
		}
	}
	produce(t, cl, tiers.Cancellation{ID: "after", At: now})
	store, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := NewReader(ReaderConfig{Topic: testTopic, Kafka: []kgo.Opt{seeds}, MaxDelay: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}, store)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	b := &readerBundle{r: r, seeds: seeds}
	due := time.Now()
	b.cover(t)
	for _, id := range []string{"big-0-0", "big-7-9", "after"} {
		if v := b.verdict(t, id, due); v != Cancelled {
			t.Errorf("%s: %v, want cancelled", id, v)
		}
	}
	if strings.Contains(logs.String(), "fetching cancellations failed") {
		t.Errorf("a batch left to a later fetch was taken for a failed fetch: %s", logs.String())
	}
}
