package cancels

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

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
			if kafka.Deferred(err) {
				return // its next batches wait for the decode budget: no error
			}
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
// A record outside a transaction counts at once; one written in a
// transaction is pending until its transaction's marker, and counts if it
// committed (see txns). The latest record of a task id to count replaces
// its earlier cancellation.
func (r *Reader) apply(fs kgo.Fetches) error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	b := r.store.NewBatch()
	now := r.cfg.Clock.Now()
	next := make(map[int32]int64)
	fs.EachRecord(func(rec *kgo.Record) {
		next[rec.Partition] = rec.Offset + 1
		r.take(b, rec, now)
	})
	if len(next) == 0 {
		return nil
	}
	// The store holds no pending record: a read started again from its
	// offsets must read them again.
	floor := r.txns.floor()
	for p, o := range next {
		if f, ok := floor[p]; ok && f < o {
			o = f
		}
		b.SetOffset(p, o)
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("cancels: write the store: %w", err)
	}
	for p, o := range next {
		r.txns.passed(p, o)
	}
	// Held ids before positions: once a round sees the positions, Check
	// must see what the records up to them hold.
	rewind := r.txns.replay()
	r.publish(r.txns.takeDeltas())
	r.mu.Lock()
	for p, o := range next {
		r.pos[p] = max(r.pos[p], o)
	}
	for p, o := range rewind {
		r.pos[p] = min(r.pos[p], o)
	}
	r.mu.Unlock()
	if len(rewind) > 0 {
		r.readAgain(rewind)
	}
	signal(r.progress)
	return nil
}

// readAgain moves the client back to read the partitions again from
// offsets, after an overflow of the transactions' records (see txns).
func (r *Reader) readAgain(offsets map[int32]int64) {
	r.cfg.Logger.Warn("reading the cancellations again from where the records of transactions were dropped", "topic", r.cfg.Topic, "from", offsets)
	set := make(map[int32]kgo.EpochOffset, len(offsets))
	for p, o := range offsets {
		set[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	r.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{r.cfg.Topic: set})
}

// take adds what rec, read at now, does to b, or holds it pending.
func (r *Reader) take(b *Batch, rec *kgo.Record, now time.Time) {
	if rec.Attrs.IsControl() {
		if commit, ok := marker(rec); ok {
			for _, p := range r.txns.end(rec.Partition, rec.ProducerID, commit, rec.Offset) {
				r.write(b, p.txn.partition, p.offset, p.change)
			}
		}
		return
	}
	ch, ok := r.decode(rec, now)
	if !ok {
		return
	}
	if !rec.Attrs.IsTransactional() {
		r.write(b, rec.Partition, rec.Offset, ch)
		return
	}
	// Read again after an overflow, a transaction's end is known.
	if commit, known := r.txns.known(rec); known {
		if commit {
			r.write(b, rec.Partition, rec.Offset, ch)
		}
		return
	}
	r.txns.add(rec, ch, now)
}

// write adds what ch does to the task's cancellation to b: the record at
// offset of partition counts, and replaces the pending records of its task
// written before it in that partition.
func (r *Reader) write(b *Batch, partition int32, offset int64, ch change) {
	r.txns.supersede(ch.c.ID, partition, offset)
	if ch.c.Withdrawn {
		b.Withdraw(ch.c.ID)
		return
	}
	b.Put(ch.c, ch.expires)
}

// decode reads rec, read at now, as a change of its task's cancellation.
// A record that breaks the contract or the limits is reported and
// withdraws the task's cancellation: the compacted topic keeps the latest
// record of a key, valid or not, so the latest decides alike for every
// router, whenever it reads the topic. ok is false for a record that can
// concern no deadline (no key, or one longer than a deadline's).
func (r *Reader) decode(rec *kgo.Record, now time.Time) (ch change, ok bool) {
	if len(rec.Key) > r.cfg.MaxKeyBytes {
		r.invalid(rec, &tiers.InvalidError{Reason: tiers.ReasonKeyTooLarge,
			Detail: fmt.Sprintf("cancellation key of %d bytes; a deadline's is at most %d", len(rec.Key), r.cfg.MaxKeyBytes)})
		return change{}, false
	}
	c, err := tiers.DecodeCancellation(rec)
	if err == nil && !c.Withdrawn && !c.Due.IsZero() && c.Due.Sub(c.At) > r.cfg.MaxDelay {
		err = &tiers.InvalidError{Reason: tiers.ReasonDueTooFar, Detail: fmt.Sprintf("cancellation made at %s names a deadline due %s, more than the maximum delay %v after it",
			c.At.UTC().Format(time.RFC3339Nano), c.Due.UTC().Format(time.RFC3339Nano), r.cfg.MaxDelay)}
	}
	if err != nil {
		r.invalid(rec, err)
		if len(rec.Key) == 0 {
			return change{}, false
		}
		return change{c: tiers.Cancellation{ID: string(rec.Key), Withdrawn: true}}, true
	}
	if c.Withdrawn {
		return change{c: c}, true
	}
	if c.At.After(now.Add(MaxAhead)) {
		r.invalid(rec, &tiers.InvalidError{Reason: ReasonAhead, Detail: fmt.Sprintf("cancellation made at %s, more than %v after it was read at %s; it calls nothing off until then",
			c.At.UTC().Format(time.RFC3339Nano), MaxAhead, now.UTC().Format(time.RFC3339Nano))})
	}
	if exp := r.expiry(c, now); exp.After(now) {
		return change{c: c, expires: exp}, true
	}
	return change{c: tiers.Cancellation{ID: c.ID, Withdrawn: true}}, true
}

// ReasonAhead reports a cancellation stamped more than MaxAhead after the
// router read it.
const ReasonAhead tiers.Reason = "time_ahead"

// invalid logs and reports a record that breaks the contract or the limits.
func (r *Reader) invalid(rec *kgo.Record, err error) {
	r.cfg.Logger.Warn("invalid cancellation", "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "err", err)
	if r.cfg.Invalid != nil {
		r.cfg.Invalid(rec, err)
	}
}

// expiry is when c, read at now, can no longer call off a deadline that is
// still to be forwarded: Grace after the furthest deadline it can cover,
// which was scheduled at the latest when c was made and is due at most
// MaxDelay after that, however late the router gets to it. A time ahead of
// the router's clock counts as MaxAhead after now, so that a cancellation
// stamped years ahead is not kept for years.
func (r *Reader) expiry(c tiers.Cancellation, now time.Time) time.Time {
	return minTime(c.At, now.Add(MaxAhead)).Add(r.cfg.MaxDelay + r.cfg.Grace)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
