package cancels

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// consume reads the topic into the store until ctx is canceled. A store
// that cannot be written stops it with an error: the router must not
// forward what it cannot check.
func (r *Reader) consume(ctx context.Context) error {
	last := time.Now()
	// A partition whose fetch fails with an error the client does not
	// retry itself is fetched again at once; it is paused for a backoff
	// instead of looping on it.
	backoff := kafka.NewFetchBackoff(r.cl)
	defer backoff.Close()
	for {
		// Small batches: a large Pebble batch is held whole in memory
		// until it is flushed.
		fs := r.cl.PollRecords(ctx, applyBatch)
		if fs.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		var recreated error
		fs.EachError(func(topic string, p int32, err error) {
			if b := kafka.SkipBatch(r.cl, err); b != nil {
				r.skipped(b)
				return
			}
			if errors.Is(err, kerr.UnknownTopicID) && recreated == nil {
				// The topic was deleted and created again: the client
				// would never read the new one, and the rounds would
				// cover nothing it holds. A restart reads it from its
				// start (see start).
				recreated = kafka.RecreatedConsumed(topic, err)
			}
			if wait := backoff.Failed(topic, p); wait > 0 || topic == "" {
				r.cfg.Logger.Warn("fetching cancellations failed; trying again", "topic", topic, "partition", p, "in", wait, "err", err)
			}
		})
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if len(fp.Records) > 0 {
				backoff.Succeeded(fp.Topic, fp.Partition)
			}
		})
		if err := r.apply(fs); err != nil {
			return err
		}
		if recreated != nil {
			return fmt.Errorf("cancels: %w", recreated)
		}
		r.applied.Add(int64(fs.NumRecords()))
		if time.Since(last) >= progressEvery && r.covered.Load() == 0 {
			last = time.Now()
			r.cfg.Logger.Info("still reading cancellations", "topic", r.cfg.Topic, "held", r.store.Len())
		}
	}
}

// release returns the memory of a long read to the OS once the read is
// over (nothing applied for releaseIdle): reading a million cancellations
// makes garbage in the hundreds of megabytes, which the runtime would
// return only slowly, while what the reader keeps is a few megabytes beside
// the store's cache. Steady traffic never goes idle, and is left to the
// runtime.
func (r *Reader) release(ctx context.Context) {
	t := time.NewTicker(releaseIdle)
	defer t.Stop()
	var seen, freed int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := r.applied.Load()
		if n == seen && n-freed >= freeAfter {
			freed = n
			debug.FreeOSMemory()
		}
		seen = n
	}
}

// skipped moves the position past a batch the client refused to
// decompress (too large or malformed; the client has moved past it): its
// cancellations are not applied, and are reported as invalid.
func (r *Reader) skipped(b *kgo.ErrDecompressTooLarge) {
	err := kafka.SkippedBatch(b)
	r.cfg.Logger.Error("a batch of cancellations was skipped; its cancellations are not applied", "topic", b.Topic, "partition", b.Partition,
		"offset", b.Offset, "err", err)
	if r.cfg.Invalid != nil {
		r.cfg.Invalid(&kgo.Record{Topic: b.Topic, Partition: b.Partition, Offset: b.Offset}, err)
	}
	r.mu.Lock()
	r.pos[b.Partition] = max(r.pos[b.Partition], b.NextOffset)
	r.mu.Unlock()
	signal(r.progress)
}

// apply writes the records of fs to the store in one batch, with the next
// offset of each partition, then moves the positions the rounds wait for.
// The latest record of a task id replaces its earlier cancellation; one
// whose keeping time has passed (see expiry) removes it.
func (r *Reader) apply(fs kgo.Fetches) error {
	b := r.store.NewBatch()
	now := r.cfg.Clock.Now()
	next := make(map[int32]int64)
	fs.EachRecord(func(rec *kgo.Record) {
		next[rec.Partition] = rec.Offset + 1
		if rec.Attrs.IsControl() {
			return
		}
		c, err := tiers.DecodeCancellation(rec)
		switch {
		case err != nil:
			r.cfg.Logger.Warn("invalid cancellation; not applied", "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "err", err)
			if r.cfg.Invalid != nil {
				r.cfg.Invalid(rec, err)
			}
		case c.Withdrawn:
			b.Withdraw(c.ID)
		default:
			if exp := r.expiry(c); exp.After(now) {
				b.Put(c, exp)
			} else {
				b.Withdraw(c.ID)
			}
		}
	})
	if len(next) == 0 {
		return nil
	}
	for p, o := range next {
		b.SetOffset(p, o)
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("cancels: write the store: %w", err)
	}
	r.mu.Lock()
	for p, o := range next {
		r.pos[p] = max(r.pos[p], o)
	}
	r.mu.Unlock()
	signal(r.progress)
	return nil
}

// expiry is when c can no longer call off a deadline that is still to be
// forwarded: Grace after the deadline it names, or, without one, Grace
// after the furthest deadline it can cover (MaxDelay after it was made).
func (r *Reader) expiry(c tiers.Cancellation) time.Time {
	if !c.Due.IsZero() {
		return c.Due.Add(r.cfg.Grace)
	}
	return c.At.Add(r.cfg.MaxDelay + r.cfg.Grace)
}

// rounds answers Want: each round notes the time, lists the end offsets of
// the topic and waits until the positions reach them; every cancellation
// acknowledged before the noted time is then in the store, and Covered
// moves to it. Rounds run back to back while a later Covered is wanted.
func (r *Reader) rounds(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.want:
		}
		for r.wanted.Load() > r.covered.Load() {
			t0 := r.cfg.Clock.Now()
			if err := r.round(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				r.cfg.Logger.Warn("listing the end of the cancellations failed; forwarding waits", "topic", r.cfg.Topic, "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(roundRetry):
				}
				continue
			}
			if ns := t0.UnixNano(); ns > r.covered.Load() {
				r.covered.Store(ns)
				signal(r.advanced)
			}
		}
	}
}

// round lists the end offsets and waits until every partition's position
// has reached its end.
func (r *Reader) round(ctx context.Context) error {
	var ends map[int32]int64
	var err error
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	if time.Since(r.partitionsChecked) >= partitionsEvery {
		ends, err = r.checkPartitions(lctx)
	} else {
		ends, err = r.endOffsets(lctx)
	}
	cancel()
	if err != nil {
		return err
	}
	if r.reached(ends) {
		return nil // the common case: nothing new to read
	}
	// The fetches may not get there (a partition without a leader, a
	// broker that does not answer): say so while every due deadline waits.
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

// endOffsets lists the last stable offset of every partition being read, in
// one ListOffsets request per broker and without a metadata request: a
// round runs for every instant at which deadlines fall due.
func (r *Reader) endOffsets(ctx context.Context) (map[int32]int64, error) {
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
	req.IsolationLevel = 1 // read committed: the last stable offset
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
