package benchcmd

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// delayFigures are what the delay topics cost per deadline, read from the
// broker at the end of a run: the records the bench's scheduling and the
// router's hops produced into them, and the bytes the broker keeps for
// those records (record batches as written, compressed as the producers
// compressed them). Hostile records (--hostile-rate, --bombs,
// --big-batches), dead-lettered at the router, are among them.
type delayFigures struct {
	DelayRecords        int64   `json:"delay_records"`
	DelayBytes          int64   `json:"delay_bytes"`
	ProducesPerDeadline float64 `json:"produces_per_deadline"`
	BytesPerDeadline    float64 `json:"delay_bytes_per_deadline"`
}

// delayFiguresOf returns the figures of records and bytes written into the
// delay topics for n deadlines scheduled; per deadline figures are zero
// when n is.
func delayFiguresOf(records, bytes int64, n int) delayFigures {
	f := delayFigures{DelayRecords: records, DelayBytes: bytes}
	if n > 0 {
		f.ProducesPerDeadline = math.Round(float64(records)*100/float64(n)) / 100
		f.BytesPerDeadline = round(float64(bytes) / float64(n))
	}
	return f
}

// delayFigures reads the delay topics' figures for n deadlines scheduled;
// nil, with the error on stderr, when the broker could not be read. It
// reads them after a --timeout too, for what was produced by then.
func (r *rig) delayFigures(ctx context.Context, n int) *delayFigures {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	records, bytes, err := delayWrites(ctx, r.seed, r.c.tiers)
	if err != nil {
		fmt.Fprintln(r.stderr, err)
		return nil
	}
	f := delayFiguresOf(records, bytes, n)
	return &f
}

// delayWrites returns the records and bytes written into the delay topics
// of table (prefix tiers.DefaultPrefix): the sum of their partitions' end
// offsets (no record is deleted during a run: the delay topics keep a week
// at least) and of their partitions' sizes in the broker's log.
func delayWrites(ctx context.Context, seed []kgo.Opt, table tiers.Table) (records, bytes int64, err error) {
	cl, err := kgo.NewClient(seed...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	names := table.Topics(tiers.DefaultPrefix)
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("bench: end offsets of the delay topics: %w", err)
	}
	ends.Each(func(o kadm.ListedOffset) { records += o.Offset })
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("bench: log dirs of the delay topics: %w", err)
	}
	for _, dirs := range all {
		if err := dirs.Error(); err != nil {
			return 0, 0, fmt.Errorf("bench: log dirs of the delay topics: %w", err)
		}
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
			if slices.Contains(names, p.Topic) {
				bytes += p.Size
			}
		})
	}
	return records, bytes, nil
}
