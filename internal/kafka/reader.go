package kafka

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultMaxDecompressBatchBytes caps what one fetched record batch may
// decompress to. A batch produced within the broker's default
// message.max.bytes (1 MiB) by a client with ordinary batch sizes stays far
// below it; franz-go's own default, 1 GiB, lets a 35 kB zstd batch take 256
// MiB of memory.
const DefaultMaxDecompressBatchBytes = 16 << 20

// DecodeBudgetBatches is the decode budget of a reader, in batch caps: the
// records a client has decoded and not yet handed to a poll take at most
// this many times the cap of one batch (32 MiB by default). It is two so
// that a batch at the cap always fits beside what a poll left buffered,
// and every poll makes progress.
const DecodeBudgetBatches = 2

// ReaderOpts returns the options of any client that reads Hourglass topics,
// in a group or not (the dlq tool, watchers, the load test's verify): read
// committed; batches capped at maxBatch decompressed bytes (0 means
// DefaultMaxDecompressBatchBytes), a batch over the cap or malformed being
// reported as a *kgo.ErrDecompressTooLarge (see SkipBatch); and the
// client's decode budget (DecodeBudgetBatches): over it, the client leaves
// batches to a later fetch (see Deferred). Each call serves one client.
func ReaderOpts(maxBatch int) []kgo.Opt {
	return readerOpts(maxBatch, time.Now)
}

func readerOpts(maxBatch int, now func() time.Time) []kgo.Opt {
	if maxBatch <= 0 {
		maxBatch = DefaultMaxDecompressBatchBytes
	}
	budget := newDecodeBudget(DecodeBudgetBatches*maxBatch, maxBatch, now)
	return []kgo.Opt{
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.MaxDecompressBatchBytes(maxBatch),
		kgo.WithDecompressor(newDecompressor(maxBatch, budget)),
		kgo.WithHooks(budget),
		// A fetch decodes its partitions in the order of the response, and
		// those after the budget is spent wait for the next fetch. In a
		// fetch session the broker orders them (kfake puts the partitions
		// that moved first, and so the one of big batches, every time);
		// without one the response follows the request, which franz-go
		// starts one partition later at each fetch.
		kgo.DisableFetchSessions(),
	}
}

// SkipBatch moves cl past a batch the poll refused as too large to
// decompress or malformed, which otherwise stops its partition for good, and
// returns the refused batch. It returns nil when err is not such a refusal.
func SkipBatch(cl *kgo.Client, err error) *kgo.ErrDecompressTooLarge {
	tooLarge, ok := errors.AsType[*kgo.ErrDecompressTooLarge](err)
	if !ok {
		return nil
	}
	cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{
		tooLarge.Topic: {tooLarge.Partition: {Epoch: tooLarge.Epoch, Offset: tooLarge.NextOffset}},
	})
	return tooLarge
}
