package canceller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// onwardKind is what a record the canceller produces is.
type onwardKind uint8

const (
	kindOutcome onwardKind = iota
	kindRetry
	kindDeadLetter
)

func (k onwardKind) String() string {
	switch k {
	case kindOutcome:
		return "outcome"
	case kindRetry:
		return "retry"
	}
	return "dead_letter"
}

// onward is a record the canceller produces for a job: its outcome event,
// the retry of its task, or its dead letter.
type onward struct {
	rec  *kgo.Record
	kind onwardKind
}

// sending is the produce state of one job's records.
type sending struct {
	j    job
	left atomic.Int32
	once sync.Once
}

// end finishes the job once: done when all its records are acknowledged,
// not done when it is given up.
func (s *sending) end(c *Canceller, done bool) {
	s.once.Do(func() { c.finish(s.j, done) })
}

// send produces outs and finishes j when all are acknowledged.
func (c *Canceller) send(j job, outs []onward) {
	s := &sending{j: j}
	s.left.Store(int32(len(outs)))
	for _, o := range outs {
		c.produce(s, o, 0)
	}
}

func (c *Canceller) produce(s *sending, o onward, tries int) {
	c.cl.Produce(context.Background(), o.rec, func(_ *kgo.Record, err error) {
		if err == nil {
			c.acked(s)
			return
		}
		// A promise must not block on the client: go on elsewhere.
		go c.failed(s, o, tries+1, err)
	})
}

func (c *Canceller) acked(s *sending) {
	if s.left.Add(-1) == 0 {
		s.end(c, true)
	}
}

// failed handles a record kgo gave up on (a retriable error is retried by
// kgo itself without limit). A retry or a dead letter too large for its
// topic is replaced by a dead letter that fits; an outcome event too large
// (it cannot be: events are bounded) is given up with an error log; anything
// else is produced again after a backoff.
func (c *Canceller) failed(s *sending, o onward, tries int, err error) {
	c.metrics.produceErrors.WithLabelValues(o.kind.String()).Inc()
	r := s.j.r
	if kafka.Recreated(err) {
		// Deleted and created again: the client keeps the old topic's id
		// until the topic is purged from it.
		c.repurge.Purge(o.rec.Topic)
	}
	tooLarge := kafka.TooLarge(err)
	switch {
	case tooLarge && o.kind == kindRetry:
		cause := fmt.Errorf("%s: retry to %s: %w", reasonProduceFailed, o.rec.Topic, err)
		c.log.Warn("retry record refused; dead letter", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
		c.metrics.deadLetters.WithLabelValues(reasonProduceFailed).Inc()
		c.stats.deadLettered.Add(1)
		c.produce(s, onward{record.DeadLetter(r, c.cfg.DeadLetter, cause, c.clock.Now()), kindDeadLetter}, 0)
		return
	case tooLarge && o.kind == kindDeadLetter && tries == 1:
		cause, _ := tiers.Header(o.rec.Headers, tiers.HeaderReason)
		c.produce(s, onward{record.MinimalDeadLetter(r, c.cfg.DeadLetter, errors.New(string(cause)), c.clock.Now()), kindDeadLetter}, tries)
		return
	case tooLarge && o.kind == kindOutcome:
		c.log.Error("outcome event refused as too large; the close stands, but is not recorded", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
		c.acked(s)
		return
	}
	// Produced again until it is acknowledged or its partition is revoked
	// (kafka.RefusedWait): never fatal; the job stays unfinished (its
	// offset uncommitted) meanwhile, and the rest of the canceller goes on.
	wait := kafka.RefusedWait(tries)
	c.log.Error("produce refused; trying again", "record", o.kind.String(), "to", o.rec.Topic, "source_topic", r.Topic, "partition", r.Partition, "offset", r.Offset,
		"tries", tries, "in", wait, "err", err)
	t := c.clock.NewTimer(wait)
	select {
	case <-t.C():
		c.produce(s, o, tries)
	case <-s.j.p.ctx.Done():
		// Revoked or stopping: the next owner closes the task again.
		t.Stop()
		s.end(c, false)
	}
}

// retry returns the record that schedules attempt of r's task wait after
// now: r with its due time, target (the topic it came from), attempt and
// deadline set, in the delay topic of the wait.
func (c *Canceller) retry(r *kgo.Record, deadline time.Time, attempt int, now time.Time, wait time.Duration) *kgo.Record {
	return &kgo.Record{
		Topic: tiers.Topic(c.cfg.Prefix, c.cfg.Tiers.Pick(wait)), Key: r.Key, Value: r.Value, Timestamp: now,
		Headers: record.Onward(r.Headers,
			kgo.RecordHeader{Key: tiers.HeaderDue, Value: tiers.FormatMillis(now.Add(wait))},
			kgo.RecordHeader{Key: tiers.HeaderTarget, Value: []byte(r.Topic)},
			kgo.RecordHeader{Key: tiers.HeaderAttempt, Value: []byte(strconv.Itoa(attempt))},
			kgo.RecordHeader{Key: tiers.HeaderDeadline, Value: tiers.FormatMillis(deadline)},
		),
	}
}

// deadLetter sends a record that cannot be closed to the dead-letter topic.
func (c *Canceller) deadLetter(j job, reason string, cause error) {
	r := j.r
	c.metrics.deadLetters.WithLabelValues(reason).Inc()
	c.stats.deadLettered.Add(1)
	c.log.Warn("dead letter", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "reason", reason, "err", cause)
	if record.ReasonOf(cause, "") == "" {
		cause = fmt.Errorf("%s: %w", reason, cause)
	}
	c.send(j, []onward{{record.DeadLetter(r, c.cfg.DeadLetter, cause, c.clock.Now()), kindDeadLetter}})
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
