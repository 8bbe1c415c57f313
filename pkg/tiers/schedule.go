package tiers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Task is one deadline to schedule.
type Task struct {
	// ID is the task id (the order id). It is the record key, so that one
	// order's records stay on one partition of each topic. Required.
	ID string
	// Due is when the task fires. A time in the past fires at once.
	// Required; from 2000 to 9999 (see PlausibleDue).
	Due time.Time
	// Payload is passed through unchanged to the target topic. Optional.
	Payload []byte
	// Target overrides the router's target topic. Empty uses the router's
	// configured target (hourglass.cancel by default).
	Target string
	// Kind selects the canceller's closer ("order-timeout", "reminder").
	// Empty uses the canceller's default kind.
	Kind string
	// Headers are added to the record as they are. Headers named like the
	// contract's are rejected: set the fields above instead.
	Headers []kgo.RecordHeader
}

// Scheduler produces tasks into the right delay topic. It is safe for
// concurrent use. Create one with NewScheduler.
type Scheduler struct {
	cl            *kgo.Client
	table         Table
	prefix        string
	cancellations string // the topic of Cancel and Reschedule; "": CancellationsTopic(prefix)
	now           func() time.Time
}

// SchedulerOpt configures a Scheduler.
type SchedulerOpt func(*Scheduler)

// WithPrefix sets the topic prefix; the default is DefaultPrefix.
func WithPrefix(prefix string) SchedulerOpt { return func(s *Scheduler) { s.prefix = prefix } }

// WithCancellationsTopic sets the topic Cancel and Reschedule produce
// cancellations to (the router's --cancellations-topic); the default is
// CancellationsTopic of the prefix.
func WithCancellationsTopic(topic string) SchedulerOpt {
	return func(s *Scheduler) { s.cancellations = topic }
}

// WithClock sets the clock used to compute remaining delays and the scheduled
// time; the default is time.Now.
func WithClock(now func() time.Time) SchedulerOpt { return func(s *Scheduler) { s.now = now } }

// NewScheduler returns a Scheduler that produces on cl with the router's tier
// table. The client's producer settings (acks, idempotency, linger) apply;
// kgo's defaults (acks=all, idempotent) are the right ones.
func NewScheduler(cl *kgo.Client, table Table, opts ...SchedulerOpt) (*Scheduler, error) {
	if cl == nil {
		return nil, errors.New("tiers: nil client")
	}
	if table.Len() == 0 {
		return nil, errors.New("tiers: empty tier table")
	}
	s := &Scheduler{cl: cl, table: table, prefix: DefaultPrefix, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Record builds the record for t: its delay topic, key, payload and contract
// headers. It does not produce it.
func (s *Scheduler) Record(t Task) (*kgo.Record, error) {
	return BuildRecord(s.prefix, s.table, s.now(), t)
}

// BuildRecord builds the record that schedules t at time now with the given
// prefix and tier table: its topic is the delay topic of table.Pick(t.Due -
// now). Scheduler.Record uses it.
func BuildRecord(prefix string, table Table, now time.Time, t Task) (*kgo.Record, error) {
	switch {
	case t.ID == "":
		return nil, errors.New("tiers: task has no ID")
	case t.Due.IsZero():
		return nil, fmt.Errorf("tiers: task %s has no due time", t.ID)
	}
	if err := PlausibleDue(t.Due); err != nil {
		return nil, fmt.Errorf("tiers: task %s: %w", t.ID, err)
	}
	if t.Target != "" {
		if err := ValidTopic(t.Target); err != nil {
			return nil, fmt.Errorf("tiers: task %s target: %w", t.ID, err)
		}
	}
	if len(t.Kind) > maxKindLen || !printable([]byte(t.Kind)) {
		return nil, fmt.Errorf("tiers: task %s kind must be at most %d printable characters", t.ID, maxKindLen)
	}
	hs := make([]kgo.RecordHeader, 0, 5+len(t.Headers))
	hs = append(hs,
		kgo.RecordHeader{Key: HeaderDue, Value: FormatMillis(t.Due)},
		kgo.RecordHeader{Key: HeaderVersion, Value: []byte(strconv.Itoa(Version))},
		kgo.RecordHeader{Key: HeaderScheduled, Value: FormatMillis(now)},
	)
	if t.Target != "" {
		hs = append(hs, kgo.RecordHeader{Key: HeaderTarget, Value: []byte(t.Target)})
	}
	if t.Kind != "" {
		hs = append(hs, kgo.RecordHeader{Key: HeaderKind, Value: []byte(t.Kind)})
	}
	for _, h := range t.Headers {
		if _, ours := headerBits[h.Key]; ours {
			return nil, fmt.Errorf("tiers: task %s sets header %s directly; use the Task field", t.ID, h.Key)
		}
		hs = append(hs, h)
	}
	return &kgo.Record{
		Topic:     Topic(prefix, table.Pick(t.Due.Sub(now))),
		Key:       []byte(t.ID),
		Value:     t.Payload,
		Headers:   hs,
		Timestamp: now,
	}, nil
}

// Schedule produces t and waits until the broker has it.
func (s *Scheduler) Schedule(ctx context.Context, t Task) error {
	r, err := s.Record(t)
	if err != nil {
		return err
	}
	if err := s.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("schedule %s to %s: %w", t.ID, r.Topic, err)
	}
	return nil
}

// ScheduleAsync produces t without waiting; done (which may be nil) is called
// once with the produced record or the error. An invalid task calls done at
// once, before ScheduleAsync returns.
func (s *Scheduler) ScheduleAsync(ctx context.Context, t Task, done func(*kgo.Record, error)) {
	r, err := s.Record(t)
	if err != nil {
		if done != nil {
			done(nil, err)
		}
		return
	}
	s.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
		if err != nil {
			err = fmt.Errorf("schedule %s to %s: %w", t.ID, r.Topic, err)
		}
		if done != nil {
			done(r, err)
		}
	})
}
