package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// reasonProduceFailed is the dead-letter reason of a record whose produce
// onward failed for good.
const reasonProduceFailed tiers.Reason = "produce_failed"

type produceKind uint8

const (
	kindForward produceKind = iota
	kindHop
	kindDeadLetter
	kindCancelled // the outcome event of a cancelled deadline
)

// flight is one produce of an entry's record onward.
type flight struct {
	e    *entry
	out  *kgo.Record
	kind produceKind
	to   time.Duration // the tier of a hop
	// solo is set on a produce refused as too large or invalid: it is
	// tried once more alone, since a broker refuses a whole batch for one
	// record too large or invalid (INVALID_RECORD names the record only in
	// its record errors, which the client does not pass on), and the others
	// of the batch were refused with it.
	solo bool
}

type completion struct {
	f   *flight
	err error
}

// target is the produce state of one topic: at most MaxInFlightPerTarget
// produces in flight, the others waiting in order. A topic that keeps
// failing with a retriable error (its partitions have no leader, say) holds
// only its own records; the client's buffer and the loop stay free for the
// other topics.
type target struct {
	topic    string
	inflight int
	waiting  []*flight
	listed   bool // in Router.waitingFor
	solo     bool // a solo produce is in flight: nothing goes with it
}

// produce sends f, or queues it behind its target's produces in flight.
func (r *Router) produce(f *flight) {
	f.e.state = stateProducing
	f.e.part.producing++
	t := r.targets[f.out.Topic]
	if t == nil {
		t = &target{topic: f.out.Topic}
		r.targets[t.topic] = t
	}
	if t.inflight >= r.cfg.MaxInFlightPerTarget || len(t.waiting) > 0 || t.solo || r.bufferFull {
		r.queue(t, f, false)
		return
	}
	r.send(t, f)
}

// queue queues f at t, at the back or, for one that was sent before, at
// the front.
func (r *Router) queue(t *target, f *flight, front bool) {
	if front {
		t.waiting = append([]*flight{f}, t.waiting...)
	} else {
		t.waiting = append(t.waiting, f)
	}
	r.stats.queued.Add(1)
	if !t.listed {
		t.listed = true
		r.waitingFor = append(r.waitingFor, t)
	}
}

// send produces f without blocking: a full client buffer fails the produce
// with kgo.ErrMaxBuffered, and complete queues it again.
func (r *Router) send(t *target, f *flight) {
	t.inflight++
	t.solo = f.solo
	r.sent++
	// Records are produced with a background context: a stop waits for
	// them (bounded by ShutdownTimeout) instead of abandoning them.
	r.cl.TryProduce(context.Background(), f.out, func(_ *kgo.Record, err error) {
		r.mu.Lock()
		r.done = append(r.done, completion{f: f, err: err})
		r.mu.Unlock()
		select {
		case r.doneSig <- struct{}{}:
		default:
		}
	})
}

// sendWaiting sends the waiting produces of every target with room.
func (r *Router) sendWaiting() {
	if len(r.waitingFor) == 0 || r.bufferFull {
		return
	}
	keep := r.waitingFor[:0]
	for _, t := range r.waitingFor {
		for len(t.waiting) > 0 && t.inflight < r.cfg.MaxInFlightPerTarget && !t.solo {
			f := t.waiting[0]
			if f.solo && t.inflight > 0 {
				break // it goes alone: wait for those in flight
			}
			t.waiting[0] = nil
			t.waiting = t.waiting[1:]
			r.stats.queued.Add(-1)
			if f.e.part.gone {
				// Revoked or lost: the next owner reads it again.
				f.e.part.producing--
				r.release(f.e)
				continue
			}
			r.send(t, f)
		}
		if len(t.waiting) > 0 {
			keep = append(keep, t)
			continue
		}
		t.listed, t.waiting = false, nil
		r.forgetTarget(t)
	}
	clear(r.waitingFor[len(keep):])
	r.waitingFor = keep
}

// forgetTarget drops t once nothing is in flight or waiting for it, so that
// the targets kept stay bounded by those in use.
func (r *Router) forgetTarget(t *target) {
	if t.inflight == 0 && len(t.waiting) == 0 && !t.listed {
		delete(r.targets, t.topic)
	}
}

// complete applies the produce results waiting in r.done.
func (r *Router) complete() {
	r.mu.Lock()
	done := r.done
	r.done = nil
	r.mu.Unlock()
	r.noteAcks(done)
	var finished []consumer.Mark
	for _, c := range done {
		f, e := c.f, c.f.e
		p := e.part
		t := r.targets[f.out.Topic]
		t.inflight--
		t.solo = t.solo && !f.solo
		r.sent--
		if errors.Is(c.err, kgo.ErrMaxBuffered) {
			// The client's buffer is full (a backstop: targets are bounded
			// first). Send it again once a produce has finished, or at once
			// if none is in the client any more.
			r.bufferFull = r.sent > 0
			r.queue(t, f, true)
			continue
		}
		r.bufferFull = false // a produce that finished left the client's buffer
		if refusesRecord(c.err) && !f.solo && !p.gone {
			// A broker refuses a whole batch for one record too large or
			// invalid; the others of the batch were refused with it.
			f.solo = true
			r.queue(t, f, true)
			continue
		}
		r.forgetTarget(t)
		p.producing--
		if p.gone {
			r.release(e)
			continue
		}
		if c.err != nil && !r.produceFailed(f, c.err) {
			continue
		}
		switch f.kind {
		case kindForward:
			r.stats.forwarded.Add(1)
			p.forwarded.Inc()
		case kindHop:
			r.stats.hopped.Add(1)
			r.metrics.hop(p.tier, f.to).Inc()
		case kindCancelled:
			r.stats.cancelled.Add(1)
			r.metrics.cancelled.Inc()
		}
		finished = append(finished, e.mark)
		r.release(e)
		r.maybeResume(p)
	}
	if len(finished) > 0 {
		r.member.Done(finished...)
	}
}

// noteAcks notes the time of the acknowledgements among done, for the
// stalled gauge (stats.stalled).
func (r *Router) noteAcks(done []completion) {
	for _, c := range done {
		if c.err == nil {
			r.stats.lastAck.Store(r.clock.Now().UnixNano())
			return
		}
	}
}

// produceFailed handles a produce of f that failed for good: a dead letter
// is tried again, any other record is dead-lettered. It reports whether f's
// entry is done all the same: when the outcome event of a cancelled deadline
// is lost, the deadline stays cancelled.
func (r *Router) produceFailed(f *flight, err error) bool {
	e := f.e
	recreated := kafka.Recreated(err)
	if recreated {
		r.recreated(f.out.Topic, err)
	}
	switch f.kind {
	case kindCancelled:
		r.log.Error("producing the outcome of a cancelled deadline failed", "topic", e.rec.Topic, "partition", e.rec.Partition,
			"offset", e.rec.Offset, "to", f.out.Topic, "err", err)
		return true
	case kindDeadLetter:
		r.deadLetterFailed(e, err)
	default:
		if (r.own(f.out.Topic) || recreated) && !refusesRecord(err) {
			r.produceLater(f, err)
			break
		}
		r.deadLetter(e, fmt.Errorf("%s: %s to %s: %w", reasonProduceFailed, f.kind, f.out.Topic, err))
	}
	return false
}

// recreated handles a produce to topic refused because the topic was
// deleted and created again under the router: a delay topic, which the
// router also reads and would never read again, stops the router (a
// restart reads the new topic); any other is purged from the producer, so
// that the produce tried again goes to the new topic.
func (r *Router) recreated(topic string, err error) {
	_, delay := r.tierOf[topic]
	if _, other := r.others[topic]; delay || other {
		if r.fatal == nil {
			r.fatal = kafka.RecreatedConsumed(topic, err)
		}
		return
	}
	r.repurge.Purge(topic)
}

// own reports whether topic is one of the router's own topics, which exist
// by configuration: a delay topic or the default target.
func (r *Router) own(topic string) bool {
	_, delay := r.tierOf[topic]
	return delay || topic == r.cfg.Target
}

// refusesRecord reports whether err refuses the record itself, so that
// producing it again cannot help.
func refusesRecord(err error) bool {
	return kafka.TooLarge(err) || errors.Is(err, kerr.InvalidRecord)
}

// produceLater produces f again after a backoff: a forward or hop to one of
// the router's own topics that franz-go gave up on, though the record is not
// at fault. franz-go gives a record up after a few UNKNOWN_TOPIC_OR_PARTITION
// answers (UnknownTopicRetries), which a broker whose metadata lags a leader
// move or a reassignment gives for a topic that exists; a deadline must not
// become a dead letter for that. Like a refused dead letter, it is never
// given up on: the record stays uncommitted meanwhile, and the other
// partitions flow.
func (r *Router) produceLater(f *flight, err error) {
	e := f.e
	e.tries++
	wait := kafka.RefusedWait(e.tries)
	r.log.Error("producing to an own topic failed; trying again", "topic", e.rec.Topic, "partition", e.rec.Partition, "offset", e.rec.Offset,
		"to", f.out.Topic, "kind", f.kind.String(), "tries", e.tries, "in", wait, "err", err)
	e.again = f
	e.state, e.ready = stateRetry, r.clock.Now().Add(wait)
	r.wake.push(e)
}

// release stops counting e's bytes: it has left the router.
func (r *Router) release(e *entry) {
	e.part.bytes -= e.size
	r.stats.heldBytes.Add(-int64(e.size))
	e.state = 0
}

// deadLetter produces e to the dead-letter topic with the reason.
func (r *Router) deadLetter(e *entry, cause error) {
	code := record.ReasonOf(cause, reasonProduceFailed)
	r.log.Warn("dead letter", "topic", e.rec.Topic, "partition", e.rec.Partition, "offset", e.rec.Offset, "reason", code, "err", cause)
	r.stats.deadLettered.Add(1)
	r.metrics.deadLetters.WithLabelValues(string(code)).Inc()
	e.cause = cause
	r.produceDeadLetter(e)
}

// produceDeadLetter produces e's dead letter: the full one, cut to fit
// (record.DeadLetter), or the minimal one once the topic refused that as too
// large.
func (r *Router) produceDeadLetter(e *entry) {
	build := record.DeadLetter
	if e.minimal {
		build = record.MinimalDeadLetter
	}
	r.produce(&flight{e: e, out: build(e.rec, r.cfg.DeadLetter, e.cause, r.clock.Now()), kind: kindDeadLetter})
}

// deadLetterFailed handles a dead letter the topic refused: too large, it
// is sent again in its minimal form; otherwise it is tried again later,
// never given up on.
func (r *Router) deadLetterFailed(e *entry, err error) {
	e.tries++
	r.stats.deadLetterRetries.Add(1)
	if !e.minimal && kafka.TooLarge(err) {
		e.minimal = true
		r.produceDeadLetter(e)
		return
	}
	// Never given up on (kafka.RefusedWait): the record stays uncommitted
	// meanwhile, and the other partitions flow.
	wait := kafka.RefusedWait(e.tries)
	r.log.Error("the dead-letter topic refused a record; trying again", "topic", e.rec.Topic, "partition", e.rec.Partition, "offset", e.rec.Offset,
		"dlq_topic", r.cfg.DeadLetter, "tries", e.tries, "in", wait, "err", err)
	e.state, e.ready = stateRetry, r.clock.Now().Add(wait)
	r.wake.push(e)
}

func (k produceKind) String() string {
	switch k {
	case kindForward:
		return "forward"
	case kindHop:
		return "hop"
	case kindCancelled:
		return "cancelled outcome"
	}
	return "dead letter"
}
