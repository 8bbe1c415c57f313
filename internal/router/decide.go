package router

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// take adds one poll's records to the partitions' state.
func (r *Router) take(fs kgo.Fetches) {
	now := r.clock.Now()
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		if len(fp.Records) == 0 {
			return
		}
		p := r.part(fp.Topic, fp.Partition)
		if p == nil || p.leaving {
			return
		}
		for _, rec := range fp.Records {
			if mark := r.member.Take(rec); !mark.Handled() { // else moved on before the last assignment
				r.arrive(p, rec, mark, now)
			}
		}
		r.maybePause(p)
	})
	if err := r.member.FetchErrors(fs, func(b *kgo.ErrDecompressTooLarge) { r.skipBatch(b, now) }); err != nil && r.fatal == nil {
		r.fatal = err
	}
}

// skipBatch dead-letters a batch the client refused to decompress (the
// client has moved past it): one dead letter, without key or value, whose
// reason names the batch's offsets. The offsets are done when it is
// acknowledged.
func (r *Router) skipBatch(b *kgo.ErrDecompressTooLarge, now time.Time) {
	p := r.part(b.Topic, b.Partition)
	if p == nil || p.leaving {
		return
	}
	rec := &kgo.Record{Topic: b.Topic, Partition: b.Partition, Offset: b.Offset, Timestamp: now}
	e := r.newEntry(p, rec, r.member.TakeSkipped(b), tiers.Meta{})
	r.deadLetter(e, kafka.SkippedBatch(b))
}

func (r *Router) part(topic string, id int32) *partition {
	k := tp{topic, id}
	if p, ok := r.parts[k]; ok {
		return p
	}
	tier, ok := r.tierOf[topic]
	if !ok {
		if tier, ok = r.otherTier(topic); !ok {
			r.log.Error("records from a topic that is not a delay topic", "topic", topic)
			return nil
		}
	}
	name := tiers.Name(tier)
	p := &partition{tp: k, tier: tier,
		heldGauge: r.metrics.held.WithLabelValues(name),
		forwarded: r.metrics.forwarded.WithLabelValues(name),
		overrun:   r.metrics.overrun.WithLabelValues(name),
	}
	r.parts[k] = p
	return p
}

// otherTier returns the tier of topic, a delay topic of the prefix whose
// tier is not configured (left by a change of tiers, or written by a
// producer with other tiers). Its records wait out that tier and hop into
// the configured ones, so that a change of tiers loses nothing; the first
// of its records is logged as a warning.
func (r *Router) otherTier(topic string) (time.Duration, bool) {
	if tier, ok := r.others[topic]; ok {
		return tier, true
	}
	tier, ok := tiers.TierOf(r.cfg.Prefix, topic)
	if !ok {
		return 0, false
	}
	r.others[topic] = tier
	r.log.Warn("reading a delay topic whose tier is not in the configured tiers: its records hop into those tiers; once its lag is 0 it may be deleted, or its tier added to the producers' and routers' tiers", "topic", topic, "tiers", r.cfg.Tiers.String())
	return tier, true
}

// newEntry makes rec an entry of p and counts its bytes in p.
func (r *Router) newEntry(p *partition, rec *kgo.Record, mark consumer.Mark, m tiers.Meta) *entry {
	size := recordBytes(rec) + entryOverhead
	e := &entry{rec: rec, meta: m, part: p, idx: -1, size: size, mark: mark}
	p.bytes += size
	r.stats.heldBytes.Add(int64(size))
	return e
}

// arrive decides what to do with a record just fetched.
func (r *Router) arrive(p *partition, rec *kgo.Record, mark consumer.Mark, now time.Time) {
	err := r.cfg.Limits.Check(rec)
	var m tiers.Meta
	if err == nil {
		m, err = tiers.DecodeRecord(rec)
	}
	if err == nil {
		err = record.CheckDue(m.Due, now, r.cfg.MaxDelay)
	}
	if err == nil {
		err = r.checkTarget(r.target(m))
	}
	e := r.newEntry(p, rec, mark, m)
	if err != nil {
		r.deadLetter(e, err)
		return
	}
	if !m.Due.After(now) {
		r.forward(e, now)
		return
	}
	// A record is ready when it has waited out its tier or when it is due,
	// whichever comes first. The wait is measured from its timestamp, or
	// from now if the producer's clock runs ahead (a record is never held
	// longer than its tier: a timestamp a day ahead would otherwise hold it
	// a day and pin its partition's commit); a clock that runs ahead can
	// delay a hop by at most the tier, never a fire.
	from := rec.Timestamp
	if from.After(now) {
		from = now
	}
	e.ready = from.Add(p.tier)
	if m.Due.Before(e.ready) {
		// Due before its tier wait ends (a delay shorter than the smallest
		// tier): into the timer if it is near and there is room.
		e.ready = m.Due
		if m.Due.Sub(now) < r.cfg.Tiers.Smallest() && r.hold(e) {
			return
		}
	}
	r.wait(e)
}

// wait puts e into the wake heap to wait out its tier.
func (r *Router) wait(e *entry) {
	e.own()
	e.state = stateWaiting
	r.stats.held.Add(1)
	e.part.waiting++
	e.part.heldGauge.Inc()
	r.wake.push(e)
}

// target is the topic e's record goes to when due.
func (r *Router) target(m tiers.Meta) string {
	if m.Target != "" {
		return m.Target
	}
	return r.cfg.Target
}

// maxChecked bounds the cache of checked target topics.
const maxChecked = 4096

// checkTarget returns a target_invalid error when topic may not be a
// target: a delay topic (the record would loop), the dead-letter or
// outcomes topic, or a topic AllowedTargets does not match.
func (r *Router) checkTarget(topic string) error {
	why, ok := r.checked[topic]
	if !ok {
		if why = r.cfg.forbidden(topic); why == "" && !r.cfg.allowed(topic) {
			why = "not one of --allowed-targets"
		}
		if len(r.checked) < maxChecked {
			r.checked[topic] = why
		}
	}
	if why == "" {
		return nil
	}
	return &tiers.InvalidError{Reason: tiers.ReasonTargetInvalid, Detail: fmt.Sprintf("target %s is %s", strconv.QuoteToASCII(topic), why)}
}

// timerFull reports whether the in-memory timer is at its capacity.
func (r *Router) timerFull() bool {
	return r.stats.timer.Load() >= int64(r.cfg.TimerCapacity) || r.timerBytes >= r.cfg.TimerBytes
}

// maybePause pauses fetching p when it holds its limit of records waiting
// out their tier, or of bytes.
func (r *Router) maybePause(p *partition) {
	n, bytes := r.heldLimits()
	if !p.paused && !p.gone && (p.waiting >= n || p.bytes >= bytes) {
		r.setPaused(p, true)
		r.member.Pause(map[string][]int32{p.topic: {p.partition}})
	}
}

// maybeResume resumes fetching p once it holds at most half of both limits.
func (r *Router) maybeResume(p *partition) {
	n, bytes := r.heldLimits()
	if p.paused && !p.gone && p.waiting <= n/2 && p.bytes <= bytes/2 {
		r.setPaused(p, false)
		r.member.Resume(map[string][]int32{p.topic: {p.partition}})
	}
}

// pollLimit returns how many records the next poll may take: what is left
// of MaxHeld, at least a partition's even share of it, at most
// MaxHeldPerPartition. Every partition of a poll keeps what it brought, so
// polls that fit the router-wide limit keep it to about twice MaxHeld.
func (r *Router) pollLimit() int {
	return min(max(r.cfg.MaxHeld-r.waiting(), r.share(r.cfg.MaxHeld)), r.cfg.MaxHeldPerPartition)
}

// heldLimits returns what one partition may hold, in records waiting out
// their tier and in bytes: the limits per partition, or, while the router
// holds its router-wide limits, an even share of those, so that what it
// holds does not grow with the number of partitions (tiers) it reads.
func (r *Router) heldLimits() (records, bytes int) {
	records, bytes = r.cfg.MaxHeldPerPartition, r.cfg.MaxHeldBytesPerPartition
	if r.waiting() >= r.cfg.MaxHeld || int(r.stats.heldBytes.Load()) >= r.cfg.MaxHeldBytes {
		records = min(records, r.share(r.cfg.MaxHeld))
		bytes = min(bytes, r.share(r.cfg.MaxHeldBytes))
	}
	return records, bytes
}

// waiting returns the records the router holds waiting out their tier (not
// in the timer).
func (r *Router) waiting() int { return int(r.stats.held.Load() - r.stats.timer.Load()) }

// share returns a partition's even share of a router-wide limit, at least 1.
func (r *Router) share(limit int) int { return max(limit/max(len(r.parts), 1), 1) }

// setPaused records whether p is paused; the caller pauses or resumes it in
// the client.
func (r *Router) setPaused(p *partition, paused bool) {
	if p.paused == paused {
		return
	}
	p.paused = paused
	if paused {
		r.stats.paused.Add(1)
	} else {
		r.stats.paused.Add(-1)
	}
}

// hold puts e into the in-memory timer, if it has room.
func (r *Router) hold(e *entry) bool {
	if r.timerFull() {
		return false
	}
	e.own()
	e.state, e.ready = stateTimer, e.meta.Due
	r.stats.held.Add(1)
	r.stats.timer.Add(1)
	r.timerBytes += e.size
	e.part.timed++
	r.wake.push(e)
	return true
}

// unhold takes e, just popped from the wake heap, out of the counts of its
// state.
func (r *Router) unhold(e *entry) {
	p := e.part
	switch e.state {
	case stateWaiting:
		r.stats.held.Add(-1)
		p.waiting--
		p.heldGauge.Dec()
	case stateTimer:
		r.stats.held.Add(-1)
		r.stats.timer.Add(-1)
		r.timerBytes -= e.size
		p.timed--
	}
	e.state = 0
}

// fire acts on every entry that is ready at now.
func (r *Router) fire(now time.Time) {
	for e := r.wake.peek(); e != nil && !e.ready.After(now); e = r.wake.peek() {
		r.wake.pop()
		p := e.part
		switch e.state {
		case stateRetry:
			if f := e.again; f != nil {
				e.again = nil
				r.produce(f)
				continue
			}
			r.produceDeadLetter(e)
			continue
		case stateTimer:
			r.unhold(e)
			r.forward(e, now)
			continue
		}
		// e has waited out its tier (or is due).
		p.overrun.Observe(now.Sub(e.ready).Seconds())
		remaining := e.meta.Due.Sub(now)
		if remaining > 0 && remaining < r.cfg.Tiers.Smallest() && r.timerFull() {
			// The timer is full: e waits where it is until due, and keeps
			// counting towards pausing its partition.
			e.ready = e.meta.Due
			r.wake.push(e)
			continue
		}
		r.unhold(e)
		switch {
		case remaining <= 0:
			r.forward(e, now)
		case remaining < r.cfg.Tiers.Smallest():
			r.hold(e)
		default:
			r.hop(e, r.cfg.Tiers.Pick(remaining), now)
		}
		r.maybeResume(p)
	}
}

// forward produces e to its target topic, unless it is cancelled: once
// the cancellations reader has read up to its due time (see mayLeave), a
// cancellation of its task drops it.
func (r *Router) forward(e *entry, now time.Time) {
	if !r.mayLeave(e, now) {
		return
	}
	if late := now.Sub(e.meta.Due); late < 0 {
		// Never reached: every path to here checks the due time. Counted
		// so that an alert would show a regression.
		r.metrics.early.Inc()
		r.log.Error("forwarding before the due time", "topic", e.rec.Topic, "partition", e.rec.Partition, "offset", e.rec.Offset, "early", -late)
	} else {
		r.metrics.lateness.Observe(late.Seconds())
	}
	out := onward(e, r.target(e.meta), now)
	// The target record is stamped now: without its hourglass-scheduled
	// (added as a hop adds it), a retry of its close would count as
	// scheduled when the close failed, and a cancellation of the deadline
	// made before that would not match it.
	out.Headers = record.Onward(e.rec.Headers, append(scheduledHeader(e),
		kgo.RecordHeader{Key: tiers.HeaderPath, Value: []byte(record.AppendPath(e.meta.Path, e.part.tier))},
		kgo.RecordHeader{Key: tiers.HeaderForwarded, Value: tiers.FormatMillis(now)})...,
	)
	r.produce(&flight{e: e, out: out, kind: kindForward})
}

// hop moves e to the delay topic of tier.
func (r *Router) hop(e *entry, tier time.Duration, now time.Time) {
	out := onward(e, r.topicOf[tier], now)
	out.Headers = record.Onward(e.rec.Headers, append(scheduledHeader(e),
		kgo.RecordHeader{Key: tiers.HeaderPath, Value: []byte(record.AppendPath(e.meta.Path, e.part.tier))},
		kgo.RecordHeader{Key: tiers.HeaderHops, Value: strconv.AppendInt(nil, int64(min(e.meta.Hops+1, tiers.MaxCount)), 10)})...,
	)
	r.produce(&flight{e: e, out: out, kind: kindHop, to: tier})
}

func onward(e *entry, topic string, now time.Time) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: e.rec.Key, Value: e.rec.Value, Timestamp: now}
}
