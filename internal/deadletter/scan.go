package deadletter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/kafka"
)

// scanFetchBytes bounds one fetch of the scan (kgo's default is 50 MiB): the
// records of a fetch are all decoded at once, so this, with the cap on a
// batch's decompressed size, is what the scan holds at a time. A larger
// dead letter is still fetched, alone.
const scanFetchBytes = 4 << 20

// Scan reads topic from from (its start when zero) up to its end
// offsets at the call, and hands each record match accepts to each, at
// most limit of them (0: no limit), as it reads them: it keeps none, so
// what it holds does not grow with the topic. It reads committed records
// only (kafka.ReaderOpts), and its end offsets are the last stable offsets,
// so a transaction still open neither shows nor holds the scan up. A batch
// too large to decompress is skipped and reported on notes. It returns
// how many records it handed on, and stops at the first error of each.
func Scan(ctx context.Context, opts []kgo.Opt, notes io.Writer, topic string, from time.Time, limit int, match func(DeadLetter) bool, each func(DeadLetter) error) (int, error) {
	opts = append(slices.Clip(opts), kafka.ReaderOpts(0)...)
	adm, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer adm.Close()
	left, read, err := scanRange(ctx, kadm.NewClient(adm), topic, from)
	if err != nil {
		return 0, err
	}
	if len(left) == 0 {
		return 0, nil
	}
	// Control records (the commit and abort markers of transactions) are
	// kept: they take offsets too, and a partition whose last offsets are
	// a marker, or aborted records and their marker, ends on the marker.
	cl, err := kgo.NewClient(append(opts, kgo.KeepControlRecords(), kgo.FetchMaxBytes(scanFetchBytes),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: read}))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	return readRange(ctx, cl, notes, topic, left, limit, match, each)
}

// scanRange returns where each partition of topic is to be read from (its
// start, or from when not zero) and the end offset it is read up to; a
// partition with nothing in that range is left out.
func scanRange(ctx context.Context, ka *kadm.Client, topic string, from time.Time) (left map[int32]int64, read map[int32]kgo.Offset, err error) {
	// Where each partition's range begins and ends: partitions with nothing
	// in it are not read at all.
	ends, err := ka.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("dlq: end offsets of %s: %w", topic, err)
	}
	var starts kadm.ListedOffsets
	if from.IsZero() {
		starts, err = ka.ListStartOffsets(ctx, topic)
	} else {
		starts, err = ka.ListOffsetsAfterMilli(ctx, from.UnixMilli(), topic)
	}
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("dlq: start offsets of %s: %w", topic, err)
	}
	left = map[int32]int64{} // partition -> end offset still to reach
	read = map[int32]kgo.Offset{}
	ends.Each(func(end kadm.ListedOffset) {
		if s, ok := starts.Lookup(topic, end.Partition); ok && s.Offset < end.Offset {
			left[end.Partition] = end.Offset
			read[end.Partition] = kgo.NewOffset().At(s.Offset)
		}
	})
	return left, read, nil
}

// readRange reads cl's partitions of topic until each reaches its end
// offset in left, and hands each dead letter match accepts to each, at most
// limit (0: no limit); it returns how many it handed on.
func readRange(ctx context.Context, cl *kgo.Client, notes io.Writer, topic string, left map[int32]int64, limit int, match func(DeadLetter) bool, each func(DeadLetter) error) (int, error) {
	// reached notes that partition p got to offset o.
	reached := func(p int32, o int64) {
		if end, ok := left[p]; ok && o >= end-1 {
			delete(left, p)
		}
	}
	n := 0
	for len(left) > 0 {
		// Below its last stable offset every offset of a partition is a
		// record, a marker, or an aborted record followed by its marker,
		// so a partition that yields nothing for long is unreachable, or
		// the marker of its last aborted records came after another
		// producer's transaction began, which is still open.
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if errors.Is(pctx.Err(), context.DeadlineExceeded) {
			return n, fmt.Errorf("dlq: %s partitions %v sent nothing for 30s before their end offsets (unreachable, or held by an open transaction)", topic, slices.Sorted(maps.Keys(left)))
		}
		if err := fetchErrors(cl, fs, notes, topic, reached); err != nil {
			return n, err
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			end, ok := left[r.Partition]
			reached(r.Partition, r.Offset)
			if !ok || r.Offset >= end || r.Attrs.IsControl() {
				continue
			}
			if d := Read(r); match(d) {
				if err := each(d); err != nil {
					return n, err
				}
				n++
				if limit > 0 && n >= limit {
					return n, nil
				}
			}
		}
	}
	return n, nil
}

// fetchErrors returns the errors of fs that end the read, joined. A batch
// too large to decode is skipped, with a line on notes, and its partition
// counted as read up to it; a deferred partition or an ended context is no
// error.
func fetchErrors(cl *kgo.Client, fs kgo.Fetches, notes io.Writer, topic string, reached func(int32, int64)) error {
	var fetchErr error
	fs.EachError(func(_ string, p int32, err error) {
		if kafka.Deferred(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if big := kafka.SkipBatch(cl, err); big != nil {
			fmt.Fprintf(notes, "dlq: skipped a batch of %s[%d]: %v\n", topic, p, kafka.SkippedBatch(big))
			reached(p, big.NextOffset-1)
			return
		}
		fetchErr = errors.Join(fetchErr, fmt.Errorf("dlq: read %s[%d]: %w", topic, p, err))
	})
	return fetchErr
}
