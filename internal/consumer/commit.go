package consumer

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commits are the offsets to commit, by topic and partition.
type commits map[string]map[int32]commitOffset

// commitOffset is a partition's watermark and the metadata committed with
// it: the done offsets above it (see handledMeta), or "" for franz-go's
// default.
type commitOffset struct {
	offset int64
	meta   string
}

// add sets the watermark of t for topic and partition, if t has one, with
// the done offsets above it, at most metaBits of them.
func (c commits) add(topic string, partition int32, t *tracker, metaBits int) {
	w, ok := t.Watermark()
	if !ok {
		return
	}
	if c[topic] == nil {
		c[topic] = make(map[int32]commitOffset)
	}
	c[topic][partition] = commitOffset{offset: w, meta: t.handledMeta(metaBits)}
}

// commit commits offs synchronously and returns the commit's error, or the
// first partition the broker refused. A failed commit loses nothing: the
// records after the last committed offset are read again.
func commit(ctx context.Context, cl *kgo.Client, offs commits) error {
	if len(offs) == 0 {
		return nil
	}
	eos := make(map[string]map[int32]kgo.EpochOffset, len(offs))
	for topic, ps := range offs {
		eos[topic] = make(map[int32]kgo.EpochOffset, len(ps))
		for p, o := range ps {
			// Epoch -1: the watermark's record may be older than the
			// newest epoch seen, and a wrong epoch would confuse
			// truncation detection.
			eos[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o.offset}
		}
	}
	ctx = kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
		for i := range req.Topics {
			t := &req.Topics[i]
			for j := range t.Partitions {
				if meta := offs[t.Topic][t.Partitions[j].Partition].meta; meta != "" {
					t.Partitions[j].Metadata = &meta
				}
			}
		}
		return nil
	})
	var err error
	cl.CommitOffsetsSync(ctx, eos, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, cerr error) {
		if cerr != nil {
			err = fmt.Errorf("commit: %w", cerr)
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil && err == nil {
					err = fmt.Errorf("commit %s[%d]: %w", t.Topic, p.Partition, perr)
				}
			}
		}
	})
	return err
}
