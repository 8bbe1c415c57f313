package kafka

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/hostile"
)

// budgetCap is the batch cap of the budget tests: small, so that batches
// near it decode quickly under the race detector.
const budgetCap = 1 << 20

// bigBatch returns a zstd batch of about 3 kB on the wire that decodes to
// nine tenths of budgetCap: nine records of 100 kB, keyed by partition
// and index.
func bigBatch(t *testing.T, partition int32, i int) []byte {
	t.Helper()
	recs := make([]kgo.Record, 9)
	for j := range recs {
		recs[j] = kgo.Record{Key: fmt.Appendf(nil, "%d-%d-%d", partition, i, j), Value: make([]byte, 100_000)}
	}
	b, err := hostile.ZstdBatch(recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeBudget: partitions of many batches near the cap, each a few
// kB on the wire, fit whole in one fetch, and franz-go decodes every batch
// of a fetch at once: without a budget a poll returns them all (18 MB of
// records from 2 kB of cap). With it, no poll returns records taking more
// than the budget, every record arrives, the deferred batches are fetched
// again without a dead letter, and a lone batch over the cap is still
// refused and skipped. With three brokers, each fetch alone is within the
// budget: the budget is the client's.
func TestDecodeBudget(t *testing.T) {
	for _, brokers := range []int{1, 3} {
		t.Run(fmt.Sprintf("brokers=%d", brokers), func(t *testing.T) {
			c := cluster
			if brokers > 1 {
				var err error
				if c, err = kfake.NewCluster(kfake.NumBrokers(brokers)); err != nil {
					t.Fatal(err)
				}
				defer c.Close()
			}
			testDecodeBudget(t, c, int32(brokers))
		})
	}
}

func testDecodeBudget(t *testing.T, c *kfake.Cluster, partitions int32) {
	const batches = 10
	ctx := testCtx(t)
	topic := topicName(t, "budget")
	if _, err := newAdmin(t, c).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	seeds := kgo.SeedBrokers(c.ListenAddrs()...)
	prod, err := kgo.NewClient(seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for p := range partitions {
		for i := range batches {
			if err := hostile.ProduceBatch(ctx, prod, topic, p, bigBatch(t, p, i)); err != nil {
				t.Fatal(err)
			}
			if p == 0 && i == batches/2 { // a lone batch over the cap
				if err := hostile.ZstdBomb(ctx, prod, topic, p, []byte("over"), 15, 100_000); err != nil {
					t.Fatal(err)
				}
			}
		}
		last := &kgo.Record{Topic: topic, Partition: p, Key: []byte("last")}
		if err := prod.ProduceSync(ctx, last).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	frozen := time.Now() // no record is decoded and dropped here: nothing to forget
	starts := map[string]map[int32]kgo.Offset{topic: {}}
	for p := range partitions {
		starts[topic][p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append(readerOpts(budgetCap, func() time.Time { return frozen }), seeds,
		kgo.ConsumePartitions(starts), kgo.FetchMaxPartitionBytes(1<<20))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var (
		got, lasts, skipped, deferred int
		most                          int64 // held by the records of one poll
	)
	for lasts < int(partitions) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d partitions read to the end; %d records, %d skipped", lasts, partitions, got, skipped)
		}
		fs.EachError(func(topic string, p int32, err error) {
			switch {
			case Deferred(err):
				deferred++
			case SkipBatch(cl, err) != nil:
				skipped++
			default:
				t.Errorf("%s[%d]: %v", topic, p, err)
			}
		})
		var held int64
		fs.EachRecord(func(r *kgo.Record) {
			held += heldBytes(r)
			got++
			if bytes.Equal(r.Key, []byte("last")) {
				lasts++
			}
		})
		most = max(most, held)
	}
	if limit := int64(DecodeBudgetBatches * budgetCap); most > limit {
		t.Errorf("a poll returned records taking %d bytes; want at most the budget, %d", most, limit)
	}
	if want := int(partitions) * (batches*9 + 1); got != want || skipped != 1 {
		t.Errorf("got %d records and skipped %d batches; want %d records and the batch over the cap skipped", got, skipped, want)
	}
	t.Logf("%d partition errors deferred a batch; most held by one poll: %d bytes", deferred, most)
}

// TestDecodeBudgetForgets: the records of a batch in an aborted
// transaction are decoded and dropped by franz-go, never buffered, so they
// stay counted; once no batch was decoded for leakAfter they are not, and a
// read-committed reader does not stop at aborted transactions.
func TestDecodeBudgetForgets(t *testing.T) {
	ctx := testCtx(t)
	topic := topicName(t, "aborted")
	if _, err := newAdmin(t, nil).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	seeds := kgo.SeedBrokers(cluster.ListenAddrs()...)
	txn, err := kgo.NewClient(seeds, kgo.TransactionalID(topic), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	for i := range 3 { // three batches of 900 kB decoded, aborted
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 9 {
			txn.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "aborted-%d-%d", i, j), Value: make([]byte, 100_000)}, nil)
		}
		if err := txn.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Key: []byte("committed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	cl, err := kgo.NewClient(append(readerOpts(budgetCap, func() time.Time { return time.Unix(0, now.Load()) }), seeds,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var deferred int
	for committed := false; !committed; {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("the committed record never came; %d polls deferred", deferred)
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if !Deferred(err) && pctx.Err() == nil {
				t.Errorf("poll: %v", err)
			}
			if Deferred(err) {
				// Stuck until the aborted records are forgotten.
				deferred++
				now.Add(int64(leakAfter))
			}
		})
		fs.EachRecord(func(r *kgo.Record) { committed = committed || string(r.Key) == "committed" })
	}
	t.Logf("%d polls deferred", deferred)
}

// TestDecodeBudgetFair: a partition of big batches takes the budget of
// each fetch it comes first in, and the partitions after it wait for the
// next fetch. In a fetch session kfake answers the partitions that moved
// first, the big one every time: a record produced to another partition
// waited until the big one was read to its end. Without sessions each
// fetch starts one partition later, and the record comes while most of the
// big partition is still to be read.
func TestDecodeBudgetFair(t *testing.T) {
	const batches = 40
	ctx := testCtx(t)
	topic := topicName(t, "fair")
	if _, err := newAdmin(t, nil).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	seeds := kgo.SeedBrokers(cluster.ListenAddrs()...)
	prod, err := kgo.NewClient(seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range batches {
		if err := hostile.ProduceBatch(ctx, prod, topic, 0, bigBatch(t, 0, i)); err != nil {
			t.Fatal(err)
		}
	}
	frozen := time.Now()
	cl, err := kgo.NewClient(append(readerOpts(budgetCap, func() time.Time { return frozen }), seeds,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxPartitionBytes(1<<20))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	big := cl.PollFetches(ctx).NumRecords() // then a record in the other partition
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: make([]byte, 1000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for other := false; !other; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the other partition's record never came; read %d records of the big one", big)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Partition == 1 {
				other = true
			} else {
				big++
			}
		})
	}
	if big > batches*9/2 {
		t.Errorf("the other partition's record came after %d of the big partition's %d records; want before half", big, batches*9)
	}
}

// TestDecodedCostHeld: what the decompressor counts of a batch is what
// the client's hooks count of its records once buffered (heldBytes), to the
// byte: any difference would stay counted after every fetch.
func TestDecodedCostHeld(t *testing.T) {
	recs := []kgo.Record{
		{Key: []byte("order-1"), Value: []byte("payload"), Headers: []kgo.RecordHeader{
			{Key: "hourglass-due", Value: []byte("1800000000000")}, {Key: "empty"}}},
		{Value: []byte("no key")},
		{Key: []byte("no value")},
		{Key: []byte("big"), Value: make([]byte, 100_000), Headers: []kgo.RecordHeader{{Key: "h", Value: make([]byte, 3000)}}},
	}
	var raw []byte
	want := int64(0)
	for i, r := range recs {
		k := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			k.Headers = append(k.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		k.Length = int32(len(k.AppendTo(nil)) - 1)
		raw = k.AppendTo(raw)
		want += heldBytes(&recs[i])
	}
	if _, held := decodedCost(raw); int64(held) != want {
		t.Errorf("decodedCost holds %d bytes; the records' heldBytes are %d", held, want)
	}
}
