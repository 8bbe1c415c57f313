package cancels

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rounds answers Want: each round notes the time, lists the end offsets
// (high watermarks) of the topic and waits until the positions reach them;
// every record acknowledged before the noted time has then been read, and
// Covered moves to it. Rounds run back to back while a later Covered is
// wanted, each as soon as the time it is to cover has come.
func (r *Reader) rounds(ctx context.Context) {
	timer := r.cfg.Clock.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		now := r.cfg.Clock.Now()
		next := r.nextRound()
		if next == 0 || next > now.UnixNano() {
			var tick <-chan time.Time
			if next != 0 {
				timer.Reset(time.Unix(0, next).Sub(now))
				tick = timer.C()
			}
			select {
			case <-ctx.Done():
				return
			case <-r.want:
			case <-tick:
			}
			timer.Stop()
			continue
		}
		// Owed since the first round that has not ended well.
		r.behindSince.CompareAndSwap(0, now.UnixNano())
		err := r.round(ctx, now)
		if err == nil {
			r.behindSince.Store(0)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		r.cfg.Logger.Warn("listing the end of the cancellations failed; forwarding waits", "topic", r.cfg.Topic, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(roundRetry):
		}
	}
}

// nextRound returns when the next round is to start, in unix ns: the
// wanted time, if it is not covered yet; 0 for none.
func (r *Reader) nextRound() int64 {
	if w := r.wanted.Load(); w > r.covered.Load() {
		return w
	}
	return 0
}

// round, begun at t0, lists the end offsets and waits until every
// partition's position has reached its end; then it moves Covered to t0.
// t0 is noted before the listing: a record acknowledged before it is below
// the end offsets listed after it, one acknowledged during the round may
// not be.
func (r *Reader) round(ctx context.Context, t0 time.Time) error {
	var ends, stable map[int32]int64
	var err error
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	if r.openTxns.Load() > 0 || r.isFrozen() {
		// Listed before the ends, to find transactions whose markers are
		// gone (see endOrphans).
		stable, err = r.endOffsets(lctx, 1)
	}
	if err == nil && time.Since(r.partitionsChecked) >= partitionsEvery {
		ends, err = r.checkPartitions(lctx)
	} else if err == nil {
		ends, err = r.endOffsets(lctx, 0)
	}
	cancel()
	if err != nil {
		return err
	}
	if err := r.reach(ctx, ends); err != nil {
		return err
	}
	if stable != nil {
		if err := r.endOrphans(stable); err != nil {
			return err
		}
	}
	if ns := t0.UnixNano(); ns > r.covered.Load() {
		r.covered.Store(ns)
		signal(r.advanced)
	}
	return nil
}

// reach waits until every partition's position has reached ends. The
// fetches may not get there (a partition without a leader, a broker that
// does not answer): it says so while every due deadline waits.
func (r *Reader) reach(ctx context.Context, ends map[int32]int64) error {
	if r.reached(ends) {
		return nil // the common case: nothing new to read
	}
	start := time.Now()
	warn := time.NewTicker(stallWarn)
	defer warn.Stop()
	for !r.reached(ends) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.progress:
		case <-warn.C:
			r.cfg.Logger.Warn("the cancellations are not read up to their end; forwarding waits", "topic", r.cfg.Topic,
				"waited", time.Since(start).Round(time.Second), "behind", r.behind(ends))
		}
	}
	return nil
}

// behind returns the partitions whose position is short of ends, and by
// how many offsets.
func (r *Reader) behind(ends map[int32]int64) map[int32]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int32]int64)
	for p, end := range ends {
		if r.pos[p] < end {
			out[p] = end - r.pos[p]
		}
	}
	return out
}

// endOffsets lists the end offset of every partition being read, in one
// ListOffsets request per broker and without a metadata request: with
// isolation 0 the high watermark, with 1 the last stable offset.
func (r *Reader) endOffsets(ctx context.Context, isolation int8) (map[int32]int64, error) {
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = r.cfg.Topic
	r.mu.Lock()
	for p := range r.pos {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1 // -1: the end
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.mu.Unlock()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	resp, err := req.RequestWith(ctx, r.cl)
	if err != nil {
		return nil, fmt.Errorf("cancels: list end offsets of %s: %w", r.cfg.Topic, err)
	}
	ends := make(map[int32]int64, len(rt.Partitions))
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("cancels: list end offsets of %s[%d]: %w", r.cfg.Topic, p.Partition, err)
			}
			ends[p.Partition] = p.Offset
		}
	}
	return ends, nil
}

// checkPartitions lists the start and end offsets of every partition of
// the topic, and reads a partition added since the start from its start.
func (r *Reader) checkPartitions(ctx context.Context) (map[int32]int64, error) {
	starts, ends, err := r.listOffsets(ctx)
	if err != nil {
		return nil, err
	}
	r.partitionsChecked = time.Now()
	r.mu.Lock()
	added := make(map[int32]kgo.Offset)
	for p, start := range starts {
		if _, ok := r.pos[p]; !ok {
			r.pos[p] = start
			added[p] = kgo.NewOffset().At(start)
		}
	}
	r.mu.Unlock()
	if len(added) > 0 {
		// The guarantee holds for the partitions the topic has
		// (docs/cancel.md): a cancellation acknowledged in one of these
		// before now may have missed its deadline, and a task's records
		// in two partitions are no longer read in order.
		r.cfg.Logger.Warn("partitions were added to the cancellations topic: cancellations acknowledged through them before now may have missed their deadlines, and a task's cancellations before and after are no longer read in order",
			"topic", r.cfg.Topic, "partitions", len(added))
		r.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{r.cfg.Topic: added})
	}
	return ends, nil
}

// endOrphans ends, as committed, the transactions whose records are below
// their partition's last stable offset, listed before the end offsets the
// positions have just reached, when their markers were not read (see
// txns.orphans).
func (r *Reader) endOrphans(stable map[int32]int64) error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	b := r.store.NewBatch()
	found := 0
	for p, lso := range stable {
		live, n := r.txns.orphans(p, lso)
		found += n
		for _, rec := range live {
			r.write(b, rec.txn.partition, rec.offset, rec.change)
		}
	}
	if found == 0 {
		return nil
	}
	r.cfg.Logger.Error("transactions of the cancellations topic ended without a marker the reader could read; their records count as committed",
		"topic", r.cfg.Topic, "transactions", found)
	if err := b.Commit(); err != nil {
		return fmt.Errorf("cancels: write the store: %w", err)
	}
	rewind := r.txns.replay() // the orphans may have been the last dropped transactions open
	r.publish(r.txns.takeDeltas())
	if len(rewind) > 0 {
		r.mu.Lock()
		for p, o := range rewind {
			r.pos[p] = min(r.pos[p], o)
		}
		r.mu.Unlock()
		r.readAgain(rewind)
	}
	return nil
}

// reached reports whether every partition's position is at or past ends.
func (r *Reader) reached(ends map[int32]int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, end := range ends {
		if r.pos[p] < end {
			return false
		}
	}
	return true
}

// sweep deletes expired cancellations every sweepEvery.
func (r *Reader) sweep(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := r.store.Sweep(r.cfg.Clock.Now())
		if err != nil {
			r.cfg.Logger.Error("deleting expired cancellations failed", "err", err)
			continue
		}
		if n > 0 {
			r.cfg.Logger.Debug("deleted expired cancellations", "n", n)
		}
	}
}
