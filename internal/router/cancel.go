package router

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cancels"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// A due deadline is checked against the cancellations before it leaves:
//
//  1. gate: it waits until the cancellations reader has read every
//     cancellation acknowledged before the deadline was due (Covered at or
//     after its due time). A cancellation acknowledged in time is then in
//     the store, whatever partition or router it went through.
//  2. look up: a cancellation of its task that covers it (tiers.Cancellation
//     Covers) drops it: an outcome event "cancelled" goes to the outcomes
//     topic instead of the record to its target, and its offset is done
//     once that event is acknowledged.
//
// A gated entry counts as being produced in its partition: a revoke or a
// stop waits for it, bounded, like a produce in flight.

// openCancellations opens the store and the reader of cfg.
func openCancellations(cfg Config, o Options, invalid prometheus.Counter) (*cancels.Store, *cancels.Reader, error) {
	store, err := cancels.Open(cancels.Options{Dir: cfg.CancellationsDir})
	if err != nil {
		return nil, nil, fmt.Errorf("router: open the store of cancellations (--cancellations-dir): %w", err)
	}
	rd, err := cancels.NewReader(cancels.ReaderConfig{
		Topic: cfg.Cancellations, Kafka: o.Kafka, MaxDelay: cfg.MaxDelay, Grace: cfg.CancellationGrace,
		Clock: o.Clock, Logger: o.Logger,
		Invalid: func(*kgo.Record, error) { invalid.Inc() },
	}, store)
	if err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("router: %w", err)
	}
	return store, rd, nil
}

// cleared reports whether e may leave: the reader has covered its due time.
// Otherwise e waits in r.gated until it has.
func (r *Router) cleared(e *entry) bool {
	if !r.cancels.Covered().Before(e.meta.Due) {
		return true
	}
	e.own()
	e.state = stateGated
	e.part.producing++
	r.gated = append(r.gated, e)
	r.cancels.Want(e.meta.Due)
	return false
}

// ungate forwards the gated entries whose due time the reader has covered,
// and lets go of those of partitions that are gone.
func (r *Router) ungate() {
	if len(r.gated) == 0 {
		return
	}
	covered := r.cancels.Covered()
	var ready []*entry
	keep := r.gated[:0]
	for _, e := range r.gated {
		if e.part.gone || !e.meta.Due.After(covered) {
			ready = append(ready, e)
		} else {
			keep = append(keep, e)
		}
	}
	clear(r.gated[len(keep):])
	r.gated = keep
	now := r.clock.Now()
	for _, e := range ready {
		e.part.producing--
		e.state = 0
		if e.part.gone {
			r.release(e) // read again by the partition's next owner
			continue
		}
		r.forward(e, now)
	}
}

// dropGated lets go of every gated entry, uncommitted: the cancellations
// reader has stopped, so none can be checked any more, and the partition's
// next owner reads them again.
func (r *Router) dropGated() {
	for _, e := range r.gated {
		e.part.producing--
		r.release(e)
	}
	clear(r.gated)
	r.gated = r.gated[:0]
}

// cancelled reports whether a cancellation of e's task covers it and, if
// one does, drops e: its outcome event goes to the outcomes topic.
func (r *Router) cancelled(e *entry, now time.Time) bool {
	c, ok, err := r.cancels.Lookup(string(e.rec.Key))
	if err != nil {
		// The store cannot be read: nothing may leave unchecked.
		if r.fatal == nil {
			r.fatal = fmt.Errorf("router: look up a cancellation: %w", err)
		}
		r.log.Error("the store of cancellations cannot be read; stopping", "err", err)
		return false
	}
	deadline := e.meta.Due
	if !e.meta.Deadline.IsZero() {
		deadline = e.meta.Deadline
	}
	if !ok || !c.Covers(scheduledOf(e), deadline) {
		return false
	}
	ev := outcome.Event{
		V: outcome.Version, TaskID: string(e.rec.Key), Kind: e.meta.Kind, Outcome: outcome.Cancelled,
		Detail:  "cancelled at " + c.At.UTC().Format(time.RFC3339Nano),
		Attempt: max(e.meta.Attempt, 1), Hops: e.meta.Hops, Path: record.AppendPath(e.meta.Path, e.part.tier),
		ScheduledMs: scheduledOf(e).UnixMilli(), DueMs: e.meta.Due.UnixMilli(), DeadlineMs: deadline.UnixMilli(),
		ClosedMs: now.UnixMilli(), LatenessMs: now.Sub(e.meta.Due).Milliseconds(), Instance: r.cfg.InstanceID,
		Topic: e.rec.Topic, Partition: e.rec.Partition, Offset: e.rec.Offset,
	}
	r.produce(&flight{e: e, out: ev.Record(r.cfg.Outcomes, now, r.cfg.OutcomesKey), kind: kindCancelled})
	return true
}

// scheduledOf is when e's task was scheduled: its hourglass-scheduled
// header, or its record's timestamp without one (hop sets the header from
// it, so that a hopped or forwarded record keeps it).
func scheduledOf(e *entry) time.Time {
	if !e.meta.Scheduled.IsZero() {
		return e.meta.Scheduled
	}
	return e.rec.Timestamp
}

// scheduledHeader returns the hourglass-scheduled header a hop or a
// forward adds to a record that has none, or nothing. A timestamp before
// 1970 (Kafka's "no timestamp" is -1) is written as 0: the header is
// decimal digits, and a negative one would make the next tier dead-letter
// the record; every cancellation covers both alike.
func scheduledHeader(e *entry) []kgo.RecordHeader {
	if !e.meta.Scheduled.IsZero() {
		return nil
	}
	at := e.rec.Timestamp
	if at.UnixMilli() < 0 {
		at = time.UnixMilli(0)
	}
	return []kgo.RecordHeader{{Key: tiers.HeaderScheduled, Value: tiers.FormatMillis(at)}}
}
