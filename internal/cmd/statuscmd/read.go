package statuscmd

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/taskstatus"
)

// Progress on stderr: a read of more than farRecords offsets in all is
// announced, and then reported every progressEvery until it ends.
// Variables for tests.
var (
	farRecords    int64 = 10_000
	progressEvery       = time.Second
)

// source is a topic status reads, and what it holds.
type source struct {
	topic string
	role  taskstatus.Role
}

// PartRead is what status read of one partition: the partition the task
// id's records go to in one topic, or with --all-partitions any of them.
type PartRead struct {
	Topic     string          `json:"topic"`
	Role      taskstatus.Role `json:"role"`
	Partition int32           `json:"partition"`
	// FromOffset is the first offset at or after --since; EndOffset the
	// last stable offset when the read began.
	FromOffset int64 `json:"from_offset"`
	EndOffset  int64 `json:"end_offset"`
	// Read counts the offsets read, Matched the records of the task.
	Read    int64 `json:"records_read"`
	Matched int   `json:"records_matched"`
	// Complete is set when the partition was read up to EndOffset.
	Complete bool `json:"complete"`
	// Missing is set when the topic does not exist.
	Missing bool   `json:"missing,omitempty"`
	Error   string `json:"error,omitempty"`
}

// total is the number of offsets to read.
func (p *PartRead) total() int64 { return p.EndOffset - p.FromOffset }

func (p *PartRead) String() string { return fmt.Sprintf("%s[%d]", p.Topic, p.Partition) }

// reader reads the task's partitions of topics.
type reader struct {
	opts     []kgo.Opt
	adm      *kadm.Client
	key      []byte
	prefix   string // of the delay topics
	all      bool   // read every partition of each topic, not the key's only
	progress io.Writer
	kept     kept // the records of the key read so far
}

// partKey names a partition being read.
type partKey struct {
	topic     string
	partition int32
}

// read reads, in each of srcs, the partition of r.key (every partition
// with r.all) from the first
// offset at or after from up to the last stable offset, and keeps the
// records of the key in r.kept. It stops when ctx is done, leaving the
// partitions not read to their end incomplete; it returns an error only
// when it could not start.
func (r *reader) read(ctx context.Context, srcs []source, from time.Time) ([]*PartRead, error) {
	parts, err := r.plan(ctx, srcs, from)
	if err != nil {
		return nil, err
	}
	consume := map[string]map[int32]kgo.Offset{}
	var total int64
	n := 0 // partitions to read
	for _, p := range parts {
		if p.Missing || p.Complete {
			continue
		}
		if consume[p.Topic] == nil {
			consume[p.Topic] = map[int32]kgo.Offset{}
		}
		consume[p.Topic][p.Partition] = kgo.NewOffset().At(p.FromOffset)
		total += p.total()
		n++
	}
	if n == 0 {
		return parts, nil
	}
	if total > farRecords {
		fmt.Fprintf(r.progress, "status: reading %d records in %d partitions since %s (--since narrows the read, --timeout bounds it)\n",
			total, n, from.UTC().Format(time.RFC3339))
	}
	// Control records (transaction markers) take offsets too: a partition
	// may end on one.
	opts := append(slices.Clip(r.opts), kafka.ReaderOpts(0)...)
	cl, err := kgo.NewClient(append(opts, kgo.KeepControlRecords(), kgo.ConsumePartitions(consume))...)
	if err != nil {
		return parts, fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	r.poll(ctx, cl, parts, total > farRecords)
	return parts, nil
}

// plan returns the partition to read of each source (each of its
// partitions with r.all): where --since starts it and where it ends.
func (r *reader) plan(ctx context.Context, srcs []source, from time.Time) ([]*PartRead, error) {
	names := make([]string, len(srcs))
	for i, s := range srcs {
		names[i] = s.topic
	}
	tds, err := r.adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	since := from.UTC().Format(time.RFC3339)
	starts, err := r.adm.ListOffsetsAfterMilli(ctx, from.UnixMilli(), names...)
	if err != nil && !partial(err) {
		return nil, fmt.Errorf("could not look up the first offsets since %s by timestamp in %s: %w", since, strings.Join(names, ", "), err)
	}
	ends, err := r.adm.ListCommittedOffsets(ctx, names...)
	if err != nil && !partial(err) {
		return nil, fmt.Errorf("could not list the end offsets of %s: %w", strings.Join(names, ", "), err)
	}
	parts := make([]*PartRead, 0, len(srcs))
	for _, s := range srcs {
		td, ok := tds[s.topic]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			parts = append(parts, &PartRead{Topic: s.topic, Role: s.role, Partition: -1, Missing: true, Complete: true})
			continue
		}
		ps := []int32{kafka.KeyPartition(s.topic, r.key, len(td.Partitions))}
		if r.all {
			ps = td.Partitions.Numbers()
		}
		for _, n := range ps {
			p := &PartRead{Topic: s.topic, Role: s.role, Partition: n}
			parts = append(parts, p)
			bounds(p, starts, ends, since)
		}
	}
	return parts, nil
}

// bounds sets where p's read starts (its first offset since) and ends, or
// the error that keeps it from being read.
func bounds(p *PartRead, starts, ends kadm.ListedOffsets, since string) {
	st, sok := starts.Lookup(p.Topic, p.Partition)
	en, eok := ends.Lookup(p.Topic, p.Partition)
	switch {
	case !sok || st.Err != nil:
		p.Error = fmt.Sprintf("could not look up %s by timestamp (its first offset since %s): %v", p, since, cmp.Or(st.Err, errNotListed))
	case st.Offset < 0:
		// kadm lists the end offset for a partition with no record since
		// from; -1 is left when that listing failed.
		p.Error = fmt.Sprintf("could not look up %s by timestamp (its first offset since %s): no offset listed", p, since)
	case !eok || en.Err != nil:
		p.Error = fmt.Sprintf("could not list the end offset of %s: %v", p, cmp.Or(en.Err, errNotListed))
	case st.Offset >= en.Offset:
		p.FromOffset, p.EndOffset, p.Complete = en.Offset, en.Offset, true
	default:
		p.FromOffset, p.EndOffset = st.Offset, en.Offset
	}
}

// partial reports whether err is kadm's report that only some brokers
// answered: what they did answer is used.
func partial(err error) bool {
	var se *kadm.ShardErrors
	return errors.As(err, &se) && !se.AllFailed
}

// errNotListed stands for a partition a listing of offsets left out: its
// broker did not answer.
var errNotListed = errors.New("its broker did not answer")

// poll reads cl's partitions until each reaches its end offset or ctx is
// done (its deadline, --timeout, bounds the loop), and keeps the records
// of r.key. With progress, it reports every progressEvery.
func (r *reader) poll(ctx context.Context, cl *kgo.Client, parts []*PartRead, progress bool) {
	left := map[partKey]*PartRead{}
	for _, p := range parts {
		if !p.Missing && !p.Complete && p.Error == "" {
			left[partKey{p.Topic, p.Partition}] = p
		}
	}
	last := time.Now()
	for len(left) > 0 && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, progressEvery)
		fs := cl.PollFetches(pctx)
		cancel()
		r.fetchErrors(cl, fs, left)
		for it := fs.RecordIter(); !it.Done(); {
			rec := it.Next()
			k := partKey{rec.Topic, rec.Partition}
			p, ok := left[k]
			if !ok || rec.Offset >= p.EndOffset {
				continue
			}
			p.Read = rec.Offset - p.FromOffset + 1
			if !rec.Attrs.IsControl() && bytes.Equal(rec.Key, r.key) {
				p.Matched++
				r.kept.add(rec, p, r.prefix, parts)
			}
			if rec.Offset >= p.EndOffset-1 {
				p.Read, p.Complete = p.total(), true
				delete(left, k)
				cl.PauseFetchPartitions(map[string][]int32{rec.Topic: {p.Partition}})
			}
		}
		if progress && len(left) > 0 && time.Since(last) >= progressEvery {
			last = time.Now()
			r.report(parts)
		}
	}
}

// fetchErrors notes the errors of a poll: a batch left to a later fetch
// (kafka.Deferred) is none; a batch too large to decompress is skipped and
// reported; any other error ends the read of its partition.
func (r *reader) fetchErrors(cl *kgo.Client, fs kgo.Fetches, left map[partKey]*PartRead) {
	fs.EachError(func(topic string, partition int32, err error) {
		k := partKey{topic, partition}
		p, ok := left[k]
		if !ok || kafka.Deferred(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if big := kafka.SkipBatch(cl, err); big != nil {
			fmt.Fprintf(r.progress, "status: skipped a batch of %s: %v\n", p, kafka.SkippedBatch(big))
			p.Read = min(big.NextOffset, p.EndOffset) - p.FromOffset
			if big.NextOffset >= p.EndOffset {
				p.Complete = true
				delete(left, k)
			}
			return
		}
		p.Error = fmt.Sprintf("read %s: %v", p, err)
		delete(left, k)
		cl.PauseFetchPartitions(map[string][]int32{topic: {partition}})
	})
}

// report writes the progress of the partitions still being read.
func (r *reader) report(parts []*PartRead) {
	for _, p := range parts {
		if !p.Complete && !p.Missing && p.Error == "" {
			fmt.Fprintf(r.progress, "status: %s: %d/%d records read\n", p, p.Read, p.total())
		}
	}
}
