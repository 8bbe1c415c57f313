package router

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cancels"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// A due deadline is checked against the cancellations before it leaves
// (cancels.Reader.Check):
//
//  1. gate: it waits until the cancellations reader has read every record
//     acknowledged before the deadline was due (Unread), and, when a
//     transaction still open wrote a record of its task id, until that
//     transaction ends (Held). A cancellation acknowledged in time is then
//     in the store, whatever partition or router it went through.
//  2. look up: a cancellation of its task that covers it drops it: an
//     outcome event "cancelled" goes to the outcomes topic instead of the
//     record to its target, and its offset is done once that event is
//     acknowledged.
//
// A gated entry counts as being produced in its partition: a revoke or a
// stop waits for it, bounded, like a produce in flight.

// openCancellations opens the store and the reader of cfg.
func openCancellations(cfg Config, o Options, invalid *prometheus.CounterVec) (*cancels.Store, *cancels.Reader, error) {
	store, err := cancels.Open(cancels.Options{Dir: cfg.CancellationsDir})
	if err != nil {
		return nil, nil, fmt.Errorf("router: open the store of cancellations (--cancellations-dir): %w", err)
	}
	rd, err := cancels.NewReader(cancels.ReaderConfig{
		Topic: cfg.Cancellations, Kafka: o.Kafka, MaxDelay: cfg.MaxDelay, Grace: cfg.CancellationGrace,
		MaxKeyBytes: cfg.Limits.WithDefaults().KeyBytes, Clock: o.Clock, Logger: o.Logger,
		Invalid: func(_ *kgo.Record, err error) { invalid.WithLabelValues(invalidReason(err)).Inc() },
	}, store)
	if err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("router: %w", err)
	}
	return store, rd, nil
}

// invalidReason is the reason label of an invalid cancellation.
func invalidReason(err error) string {
	if ie, ok := errors.AsType[*tiers.InvalidError](err); ok {
		return string(ie.Reason)
	}
	return "other"
}

// mayLeave checks e, due, against the cancellations: true when it may
// leave now. Otherwise it waits in r.gated (see gate), or it is dropped as
// cancelled.
func (r *Router) mayLeave(e *entry, now time.Time) bool {
	v, c, err := r.cancels.Check(cancels.Deadline{ID: string(e.rec.Key), Scheduled: scheduledOf(e), Deadline: deadlineOf(e), Due: e.meta.Due}, now)
	switch {
	case err != nil:
		// The store cannot be read: nothing may leave unchecked.
		if r.fatal == nil {
			r.fatal = fmt.Errorf("router: look up a cancellation: %w", err)
		}
		r.log.Error("the store of cancellations cannot be read; stopping", "err", err)
		r.gate(e, false)
		return false
	case v == cancels.Unread:
		r.gate(e, false)
		r.cancels.Want(e.meta.Due)
		return false
	case v == cancels.Held:
		r.gate(e, true)
		return false
	}
	if now.Sub(e.meta.Due) > r.cfg.CancellationGrace {
		// Checked later than the grace the store keeps cancellations for
		// beyond the furthest deadline they can cover.
		r.metrics.lateChecks.Inc()
	}
	if v == cancels.Cancelled {
		r.dropCancelled(e, c, now)
		return false
	}
	return true
}

// gate makes e wait in r.gated for the cancellations reader: until it has
// read far enough, or, held, until a transaction that wrote e's task id
// ends.
func (r *Router) gate(e *entry, held bool) {
	e.own()
	e.state = stateGated
	e.held = held
	e.part.producing++
	r.gated = append(r.gated, e)
}

// ungate checks again the gated entries that the reader may have cleared
// (Covered at or after their due time), and lets go of those of
// partitions that are gone.
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
		e.state, e.held = 0, false
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

// dropCancelled drops e, which c cancels: its outcome event goes to the outcomes
// topic.
func (r *Router) dropCancelled(e *entry, c tiers.Cancellation, now time.Time) {
	deadline := deadlineOf(e)
	kind := e.meta.Kind
	if kind == "" {
		kind = r.cfg.DefaultKind
	}
	ev := outcome.Event{
		V: outcome.Version, TaskID: string(e.rec.Key), Kind: kind, Outcome: outcome.Cancelled,
		Detail:  "cancelled at " + c.At.UTC().Format(time.RFC3339Nano),
		Attempt: max(e.meta.Attempt, 1), Hops: e.meta.Hops, Path: record.AppendPath(e.meta.Path, e.part.tier),
		ScheduledMs: scheduledOf(e).UnixMilli(), DueMs: e.meta.Due.UnixMilli(), DeadlineMs: deadline.UnixMilli(),
		ClosedMs: now.UnixMilli(), LatenessMs: now.Sub(e.meta.Due).Milliseconds(), Instance: r.cfg.InstanceID,
		Topic: e.rec.Topic, Partition: e.rec.Partition, Offset: e.rec.Offset,
	}
	r.produce(&flight{e: e, out: ev.Record(r.cfg.Outcomes, now, r.cfg.OutcomesKey), kind: kindCancelled})
}

// deadlineOf is e's original due time: a retry of its close keeps it in
// hourglass-deadline while its own due time moves on.
func deadlineOf(e *entry) time.Time {
	if !e.meta.Deadline.IsZero() {
		return e.meta.Deadline
	}
	return e.meta.Due
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
