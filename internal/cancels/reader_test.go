package cancels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/hostile"
	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/internal/testutil/syncbuf"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// readerBundle is a Reader on its own kfake cluster, running until the test
// ends, and the cluster's seeds, to produce cancellations.
type readerBundle struct {
	r     *Reader
	seeds kgo.Opt
	stop  func()
}

const testTopic = "t.cancellations"

func startReader(t *testing.T, c *kfake.Cluster, dir string) *readerBundle {
	t.Helper()
	return startReaderWith(t, c, dir, nil)
}

func startReaderWith(t *testing.T, c *kfake.Cluster, dir string, invalid func(*kgo.Record, error)) *readerBundle {
	t.Helper()
	seeds := kgo.SeedBrokers(c.ListenAddrs()...)
	store, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(ReaderConfig{Topic: testTopic, Kafka: []kgo.Opt{seeds}, MaxDelay: time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Invalid: invalid}, store)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("reader: %v", err)
		}
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return &readerBundle{r: r, seeds: seeds, stop: stop}
}

// cover asks r to cover now and waits for it, bounded.
func (b *readerBundle) cover(t *testing.T) {
	t.Helper()
	now := time.Now()
	b.r.Want(now)
	deadline := time.After(10 * time.Second)
	for b.r.Covered().Before(now) {
		select {
		case <-b.r.Advanced():
		case <-deadline:
			t.Fatalf("Covered %v never reached %v", b.r.Covered(), now)
		}
	}
}

func produce(t *testing.T, cl *kgo.Client, c tiers.Cancellation) {
	t.Helper()
	rec, err := tiers.BuildCancellation("t.", c)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestReaderTransactions: cancellations produced in transactions count once
// committed, never when aborted, and the transaction markers do not hold a
// round up (the positions pass them).
func TestReaderTransactions(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, testTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	b := startReader(t, c, "")
	txn, err := kgo.NewClient(b.seeds, kgo.TransactionalID("reader-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	ctx := context.Background()
	for _, end := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		id := map[kgo.TransactionEndTry]string{kgo.TryCommit: "committed", kgo.TryAbort: "aborted"}[end]
		produce(t, txn, tiers.Cancellation{ID: id, At: time.Now()})
		if err := txn.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	b.cover(t)
	if _, ok, err := b.r.Lookup("committed"); !ok || err != nil {
		t.Errorf("the committed cancellation: found %v, %v", ok, err)
	}
	if _, ok, err := b.r.Lookup("aborted"); ok || err != nil {
		t.Errorf("the aborted cancellation: found %v, %v", ok, err)
	}
}

// TestReaderResumes: with a directory that survives, a reader started again
// has what the first read and reads on from its offsets; the latest
// cancellation of a task replaces the earlier one, a tombstone withdraws
// it, and one whose keeping time has passed is not kept.
func TestReaderResumes(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, testTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	dir := t.TempDir()
	b := startReader(t, c, dir)
	cl, err := kgo.NewClient(b.seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	now := time.Now()
	produce(t, cl, tiers.Cancellation{ID: "a", At: now})
	produce(t, cl, tiers.Cancellation{ID: "b", At: now})
	produce(t, cl, tiers.Cancellation{ID: "b", At: now, Due: now.Add(time.Minute)})
	produce(t, cl, tiers.Cancellation{ID: "gone", At: now})
	produce(t, cl, tiers.Cancellation{ID: "gone", At: now, Withdrawn: true})
	// Kept until the grace after the furthest deadline it can cover, not
	// after the one it names: a router may reach that deadline late.
	produce(t, cl, tiers.Cancellation{ID: "named", At: now, Due: now.Add(-2 * DefaultGrace)})
	produce(t, cl, tiers.Cancellation{ID: "expired", At: now.Add(-time.Hour - 2*DefaultGrace)}) // MaxDelay is an hour
	b.cover(t)
	b.stop()

	b2 := startReader(t, c, dir)
	produce(t, cl, tiers.Cancellation{ID: "c", At: now})
	b2.cover(t)
	for id, want := range map[string]bool{"a": true, "b": true, "c": true, "named": true, "gone": false, "expired": false} {
		got, ok, err := b2.r.Lookup(id)
		if err != nil || ok != want {
			t.Errorf("%s: found %v (%+v), %v; want found %v", id, ok, got, err, want)
		}
		if id == "b" && got.Due.UnixMilli() != now.Add(time.Minute).UnixMilli() {
			t.Errorf("b: %+v, want the later cancellation, of the deadline due in a minute", got)
		}
	}
	if n := b2.r.store.Len(); n != 4 {
		t.Errorf("store holds %d cancellations, want 4", n)
	}
}

// TestReaderSkipsBomb: a batch that decompresses beyond the cap of every
// reader is skipped and reported, and holds neither the reader nor a round
// up.
func TestReaderSkipsBomb(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, testTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var invalid atomic.Int64
	b := startReaderWith(t, c, "", func(*kgo.Record, error) { invalid.Add(1) })
	cl, err := kgo.NewClient(b.seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hostile.ZstdBomb(ctx, cl, testTopic, 0, []byte("bomb"), 32, 1<<20); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, tiers.Cancellation{ID: "after", At: time.Now()})
	b.cover(t)
	if _, ok, err := b.r.Lookup("after"); !ok || err != nil {
		t.Errorf("the cancellation after the bomb: found %v, %v", ok, err)
	}
	if invalid.Load() != 1 {
		t.Errorf("%d invalid reports, want 1 for the skipped batch", invalid.Load())
	}
}

// TestReaderAddedPartition: a partition added to the topic is found within
// partitionsEvery and read from its start (docs/cancel.md: the partitions
// of the topic are fixed, and a router sees one added within 10 s).
func TestReaderAddedPartition(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, testTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	b := startReader(t, c, "")
	b.cover(t)
	adm, err := kgo.NewClient(b.seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(adm).CreatePartitions(ctx, 1, testTopic); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(b.seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rec, err := tiers.BuildCancellation("t.", tiers.Cancellation{ID: "new-partition", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	rec.Partition = 1
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 3*partitionsEvery, "the cancellation in the added partition read", func() bool {
		b.cover(t)
		_, ok, err := b.r.Lookup("new-partition")
		return ok && err == nil
	}, func() string { return "not in the store" })
}

// TestReaderTopicCreatedAgain: a store kept from a topic that was deleted
// and created again is voided, even when the new topic holds as many
// records as the store had read: its offsets are of the old topic, and
// read on from there they would skip the new topic's first cancellations.
func TestReaderTopicCreatedAgain(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, testTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	dir := t.TempDir()
	b := startReader(t, c, dir)
	cl, err := kgo.NewClient(b.seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	now := time.Now()
	for _, id := range []string{"old-1", "old-2"} {
		produce(t, cl, tiers.Cancellation{ID: id, At: now})
	}
	b.cover(t)
	b.stop()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopic(ctx, testTopic); err != nil {
		t.Fatal(err)
	}
	var createErr error
	poll.Until(t, 10*time.Second, "the topic created again", func() bool {
		_, createErr = adm.CreateTopic(ctx, 1, 1, nil, testTopic)
		return createErr == nil
	}, func() string { return fmt.Sprint(createErr) })
	cl2, err := kgo.NewClient(b.seeds) // knows the new topic's id
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	for _, id := range []string{"new-1", "new-2", "new-3"} {
		produce(t, cl2, tiers.Cancellation{ID: id, At: now})
	}

	b2 := startReader(t, c, dir)
	b2.cover(t)
	for id, want := range map[string]bool{"old-1": false, "old-2": false, "new-1": true, "new-2": true, "new-3": true} {
		if _, ok, err := b2.r.Lookup(id); err != nil || ok != want {
			t.Errorf("%s: found %v, %v; want found %v", id, ok, err, want)
		}
	}
}

// TestReaderFetchErrorBacksOff: the fetches of the topic fail with an error
// franz-go does not retry itself (TOPIC_AUTHORIZATION_FAILED). The reader
// must pause the partition for a backoff instead of fetching it again at
// once (tens of thousands of fetches and log lines a second), and read the
// topic again once the broker answers.
func TestReaderFetchErrorBacksOff(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, testTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	b := startReader(t, c, "")
	b.cover(t)
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: testTopic, Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer fault.Remove()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fault.Wait(ctx, 1); err != nil {
		t.Fatalf("no fetch: %v", err)
	}
	from, hits := time.Now(), fault.Hits()
	poll.Until(t, 10*time.Second, "two seconds", func() bool { return time.Since(from) >= 2*time.Second }, nil)
	if n := fault.Hits() - hits; n > 50 {
		t.Errorf("%d fetches in %v: the reader loops on a fetch error", n, time.Since(from).Round(time.Millisecond))
	}
	fault.Remove()
	cl, err := kgo.NewClient(b.seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce(t, cl, tiers.Cancellation{ID: "after", At: time.Now()})
	b.cover(t)
	if _, ok, err := b.r.Lookup("after"); !ok || err != nil {
		t.Errorf("the cancellation produced once the fetches were answered again: found %v, %v", ok, err)
	}
}

// TestReaderReportsStall: the end offsets of the topic cannot be listed
// (NOT_LEADER_OR_FOLLOWER for every request, a partition without a
// leader). Every due deadline waits for the reader meanwhile, so the
// reader must say so within seconds; franz-go retries that answer by itself
// for 30 s, and the reader logged nothing until then.
func TestReaderReportsStall(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, testTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var logs syncbuf.Buffer
	store, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := NewReader(ReaderConfig{Topic: testTopic, Kafka: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, MaxDelay: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}, store)
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
	b.cover(t)
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: testTopic, Err: kerr.NotLeaderForPartition, Count: -1})
	defer fault.Remove()
	from := time.Now()
	r.Want(from)
	poll.Until(t, 12*time.Second, "a warning that forwarding waits", func() bool {
		return strings.Contains(logs.String(), "forwarding waits")
	}, func() string {
		return fmt.Sprintf("%d ListOffsets answered NOT_LEADER_OR_FOLLOWER; logs: %q", fault.Hits(), logs.String())
	})
	t.Logf("warned %v after the reader was asked to cover", time.Since(from).Round(time.Millisecond))
}
