package canceller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/time/rate"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// handle closes one task and produces its outcome event, and its retry or
// dead letter when the close failed or the record is malformed. The record
// is finished when every produce is acknowledged. A record whose partition
// was revoked before its close began is left undone for the next owner.
func (c *Canceller) handle(closeCtx context.Context, j job) {
	if j.p.ctx.Err() != nil {
		c.finish(j, false)
		return
	}
	task, route, reason, err := c.route(j.r)
	if err != nil {
		c.deadLetter(j, reason, err)
		return
	}
	// Wait for the rate limits. Neither wait holds a close slot of the
	// closer; both end when the partition is revoked.
	for _, l := range []*rate.Limiter{c.limit, route.Limit} {
		if l != nil && c.wait(j.p.ctx, l) != nil {
			c.finish(j, false)
			return
		}
	}
	started := c.clock.Now()
	res, err := c.close(closeCtx, route.Closer, task)
	now := c.clock.Now()
	ev := c.newEvent(j.r, task, res, now)
	out := c.settle(j.r, task, &ev, err, now)
	c.observe(task, &ev, started, now)
	c.send(j, append(out, onward{ev.Record(c.cfg.Outcomes, now, c.cfg.OutcomesKey), kindOutcome}))
}

// route decodes r into its task and finds the route of its kind. A record
// that breaks the contract, or whose kind has no closer, returns the reason
// and error of its dead letter.
func (c *Canceller) route(r *kgo.Record) (closer.Task, Route, string, error) {
	err := c.cfg.Limits.Check(r)
	var m tiers.Meta
	if err == nil {
		m, err = tiers.DecodeRecord(r)
	}
	if err != nil {
		return closer.Task{}, Route{}, string(record.ReasonOf(err, "invalid")), err
	}
	task := closer.Task{ID: string(r.Key), Kind: m.Kind, Payload: r.Value, Meta: m, Attempt: max(1, m.Attempt)}
	if task.Kind == "" {
		task.Kind = c.cfg.DefaultKind
	}
	route, ok := c.routes[task.Kind]
	if !ok {
		if c.fallback == nil {
			return task, Route{}, reasonUnknownKind, fmt.Errorf("no closer for kind %q", task.Kind)
		}
		route = *c.fallback
	}
	return task, route, "", nil
}

// close applies one close, bounded by CloseTimeout. A closer that returns
// no final outcome and no error has failed for good.
func (c *Canceller) close(closeCtx context.Context, cl closer.Closer, task closer.Task) (closer.Result, error) {
	ctx, cancel := context.WithTimeout(closeCtx, c.cfg.CloseTimeout)
	defer cancel()
	c.metrics.inFlight.Inc()
	defer c.metrics.inFlight.Dec()
	res, err := cl.Close(ctx, task)
	if err == nil && !res.Outcome.Final() {
		err = closer.Permanent(fmt.Errorf("closer returned outcome %q without an error", res.Outcome))
	}
	return res, err
}

// newEvent returns the outcome event of a close of task from r that found
// res at now.
func (c *Canceller) newEvent(r *kgo.Record, task closer.Task, res closer.Result, now time.Time) outcome.Event {
	m := task.Meta
	return outcome.Event{
		V: outcome.Version, TaskID: task.ID, Kind: task.Kind, Outcome: res.Outcome, Detail: res.Detail,
		Attempt: task.Attempt, Hops: m.Hops, Path: m.Path,
		ScheduledMs: millis(m.Scheduled), DueMs: m.Due.UnixMilli(), DeadlineMs: deadlineOf(m).UnixMilli(),
		ForwardedMs: millis(m.Forwarded), ClosedMs: now.UnixMilli(), LatenessMs: now.UnixMilli() - m.Due.UnixMilli(),
		Instance: c.cfg.Instance, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	}
}

// deadlineOf returns the task's deadline: its first due time, which retries
// carry in hourglass-deadline.
func deadlineOf(m tiers.Meta) time.Time {
	if !m.Deadline.IsZero() {
		return m.Deadline
	}
	return m.Due
}

// settle decides what follows a close that failed with err: a retry while
// the error is transient and attempts are left, otherwise a dead letter. It
// sets ev's outcome and error, and returns the records to produce besides
// the event.
func (c *Canceller) settle(r *kgo.Record, task closer.Task, ev *outcome.Event, err error, now time.Time) []onward {
	label := c.metrics.kind(task.Kind)
	switch {
	case err == nil:
		return nil
	case !closer.IsPermanent(err) && task.Attempt < c.cfg.MaxAttempts:
		wait := c.backoff(task.Attempt, err)
		ev.Outcome, ev.Error = outcome.Retry, err.Error()
		c.log.Debug("close failed; retrying", "task", task.ID, "kind", task.Kind, "attempt", task.Attempt, "in", wait, "err", err)
		c.stats.retried.Add(1)
		c.metrics.retries.WithLabelValues(label).Inc()
		return []onward{{c.retry(r, deadlineOf(task.Meta), task.Attempt+1, now, wait), kindRetry}}
	}
	reason := reasonCloseFailed
	if !closer.IsPermanent(err) {
		reason = reasonRetriesExhausted
		err = fmt.Errorf("attempt %d of %d: %w", task.Attempt, c.cfg.MaxAttempts, err)
	}
	ev.Outcome, ev.Error = outcome.Failed, err.Error()
	c.log.Warn("close failed; dead letter", "task", task.ID, "kind", task.Kind, "attempt", task.Attempt, "reason", reason, "err", err)
	dl := record.DeadLetter(r, c.cfg.DeadLetter, fmt.Errorf("%s: %w", reason, err), now)
	dl.Headers = record.SetHeader(dl.Headers, tiers.HeaderAttempt, []byte(strconv.Itoa(task.Attempt)))
	c.stats.deadLettered.Add(1)
	c.metrics.deadLetters.WithLabelValues(reason).Inc()
	return []onward{{dl, kindDeadLetter}}
}

// observe counts a close in the stats and metrics.
func (c *Canceller) observe(task closer.Task, ev *outcome.Event, started, now time.Time) {
	label := c.metrics.kind(task.Kind)
	c.stats.count(ev.Outcome)
	c.metrics.closes.WithLabelValues(label, string(ev.Outcome)).Inc()
	c.metrics.duration.WithLabelValues(label).Observe(now.Sub(started).Seconds())
	if late := now.Sub(task.Meta.Due); late < 0 {
		c.metrics.early.Inc()
	} else {
		c.metrics.lateness.WithLabelValues(label).Observe(late.Seconds())
	}
}

// wait takes a token of l, and reports ctx's error if ctx ends first.
func (c *Canceller) wait(ctx context.Context, l *rate.Limiter) error {
	if l.Allow() {
		return nil
	}
	start := time.Now()
	err := l.Wait(ctx)
	c.metrics.rateWait.Add(time.Since(start).Seconds())
	return err
}

// backoff returns the wait before the attempt after attempt: RetryBackoff
// doubled per attempt, capped at RetryBackoffMax, its upper half random
// ("equal jitter"), and at least what the closer asked for with
// closer.RetryAfter.
func (c *Canceller) backoff(attempt int, err error) time.Duration {
	d := c.cfg.RetryBackoff
	for i := 1; i < attempt && d < c.cfg.RetryBackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.cfg.RetryBackoffMax)
	d = d/2 + rand.N(d/2+1)
	if after, ok := closer.RetryAfterOf(err); ok && after > d {
		d = after
	}
	return d
}
