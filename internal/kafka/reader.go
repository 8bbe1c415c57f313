package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultMaxDecompressBatchBytes caps what one fetched record batch may
// decompress to. A batch produced within the broker's default
// message.max.bytes (1 MiB) by a client with ordinary batch sizes stays far
// below it; franz-go's own default, 1 GiB, lets a 35 kB zstd batch take 256
// MiB of memory.
const DefaultMaxDecompressBatchBytes = 16 << 20

// ReaderOpts returns the options of any client that reads Hourglass topics,
// in a group or not (the dlq tool, watchers, the load test's verify): read
// committed, and batches capped at maxBatch decompressed bytes (0 means
// DefaultMaxDecompressBatchBytes); a batch over the cap or malformed is
// reported as a *kgo.ErrDecompressTooLarge (see SkipBatch).
func ReaderOpts(maxBatch int) []kgo.Opt {
	if maxBatch <= 0 {
		maxBatch = DefaultMaxDecompressBatchBytes
	}
	return []kgo.Opt{
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.MaxDecompressBatchBytes(maxBatch),
		kgo.WithDecompressor(newDecompressor(maxBatch)),
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
