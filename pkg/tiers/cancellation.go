package tiers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// CancellationsTopic returns the topic of cancellations for a prefix:
// hourglass.cancellations with DefaultPrefix. It is compacted: the latest
// record of a task id is that task's cancellation.
func CancellationsTopic(prefix string) string { return prefix + "cancellations" }

// Cancellation calls off deadlines of one task. It is one record of the
// cancellations topic:
//
//   - key: the task id (required);
//   - timestamp: when the task was cancelled (At);
//   - header hourglass-due (optional): only the deadline due at this instant,
//     unix milliseconds as in a delay record (PlausibleDue); without it
//     every deadline of the task;
//   - header hourglass-version (optional): "1";
//   - value: ignored, but not null: a null value (a tombstone) withdraws the
//     task's cancellation.
//
// It applies to the deadlines of the task scheduled at or before At (their
// hourglass-scheduled header, or the record timestamp without one), so that
// a deadline scheduled after it, such as the new deadline of a reschedule,
// stands. The latest cancellation of a task replaces the earlier ones, as
// the compacted topic keeps only the latest record of a key: to call off two
// specific deadlines of one task, cancel the task.
type Cancellation struct {
	// ID is the task id. Required.
	ID string
	// At is when the task was cancelled. Required.
	At time.Time
	// Due, when set, limits the cancellation to the deadline due then;
	// like a task's, from 2000 to 9999 (see PlausibleDue).
	Due time.Time
	// Withdrawn is set on a tombstone: the task has no cancellation.
	Withdrawn bool
}

// Covers reports whether c calls off a deadline of its task scheduled at
// scheduled and due at due.
func (c Cancellation) Covers(scheduled, due time.Time) bool {
	if c.Withdrawn || scheduled.After(c.At) {
		return false
	}
	return c.Due.IsZero() || c.Due.UnixMilli() == due.UnixMilli()
}

// BuildCancellation builds the record of c for the given prefix. It does not
// produce it.
func BuildCancellation(prefix string, c Cancellation) (*kgo.Record, error) {
	switch {
	case c.ID == "":
		return nil, errors.New("tiers: cancellation has no task id")
	case c.At.IsZero():
		return nil, fmt.Errorf("tiers: cancellation of %s has no time", c.ID)
	}
	if !c.Due.IsZero() {
		if err := PlausibleDue(c.Due); err != nil {
			return nil, fmt.Errorf("tiers: cancellation of %s: %w", c.ID, err)
		}
	}
	r := &kgo.Record{
		Topic:     CancellationsTopic(prefix),
		Key:       []byte(c.ID),
		Timestamp: c.At,
		Headers:   []kgo.RecordHeader{{Key: HeaderVersion, Value: []byte(strconv.Itoa(Version))}},
	}
	if c.Withdrawn {
		return r, nil
	}
	r.Value = []byte{}
	if !c.Due.IsZero() {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: HeaderDue, Value: FormatMillis(c.Due)})
	}
	return r, nil
}

// DecodeCancellation reads a record of the cancellations topic. It returns an
// *InvalidError when the record breaks the contract: no key, or an invalid
// hourglass-due or hourglass-version header.
func DecodeCancellation(r *kgo.Record) (Cancellation, error) {
	if len(r.Key) == 0 {
		return Cancellation{}, invalid(ReasonKeyMissing, "cancellation has no key; the key is the task id")
	}
	c := Cancellation{ID: string(r.Key), At: r.Timestamp, Withdrawn: r.Value == nil}
	var seen uint16
	for _, h := range r.Headers {
		bit, ok := headerBits[h.Key]
		if !ok || (h.Key != HeaderDue && h.Key != HeaderVersion) {
			continue
		}
		if seen&bit != 0 {
			return Cancellation{}, invalid(ReasonDuplicateHeader, "header %s appears more than once", h.Key)
		}
		seen |= bit
		var m Meta
		if err := m.decodeHeader(h.Key, h.Value); err != nil {
			return Cancellation{}, err
		}
		if h.Key == HeaderDue {
			c.Due = m.Due
		}
	}
	return c, nil
}

// ErrLate is returned, wrapped, by Scheduler.Cancel and Scheduler.Reschedule
// when the broker acknowledged the cancellation at or after the due time of
// the deadline it names: the cancellation is recorded, but the deadline may
// have fired already. Find out with "hourglass status".
var ErrLate = errors.New("cancellation acknowledged after the deadline was due")

// Cancel calls off the deadlines of task id scheduled until now: every one,
// or with due set (non-zero) only the one due then. It returns when the
// broker has the cancellation. A cancellation acknowledged before the
// deadline is due guarantees that the deadline never reaches its target;
// one acknowledged later returns an error wrapping ErrLate.
func (s *Scheduler) Cancel(ctx context.Context, id string, due time.Time) error {
	r, err := s.cancellation(Cancellation{ID: id, At: s.now(), Due: due})
	if err != nil {
		return err
	}
	if err := s.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("cancel %s: %w", id, err)
	}
	return s.late(id, due)
}

// cancellation builds the record of c on the Scheduler's topic.
func (s *Scheduler) cancellation(c Cancellation) (*kgo.Record, error) {
	r, err := BuildCancellation(s.prefix, c)
	if err == nil && s.cancellations != "" {
		r.Topic = s.cancellations
	}
	return r, err
}

func (s *Scheduler) late(id string, due time.Time) error {
	now := s.now()
	if due.IsZero() {
		return nil
	}
	// The deadline named is due at due's millisecond (hourglass-due is in
	// milliseconds): the router may forward it from then on.
	due = time.UnixMilli(due.UnixMilli())
	if !now.Before(due) {
		return fmt.Errorf("cancel %s: acknowledged at %s, due at %s: %w", id, now.UTC().Format(time.RFC3339Nano), due.UTC().Format(time.RFC3339Nano), ErrLate)
	}
	return nil
}

// Reschedule moves the deadlines of t.ID to t: it cancels the task's
// deadlines scheduled until now (every one, or with from set only the one
// due then) and schedules t one millisecond later, so that the cancellation
// does not cover t. On a transactional client (kgo.TransactionalID) both
// records are produced in one transaction: either both stand or neither. On
// another client the cancellation is produced first, then t: when it returns
// an error, t may not be scheduled; call Reschedule again.
func (s *Scheduler) Reschedule(ctx context.Context, t Task, from time.Time) error {
	now := s.now()
	c, err := s.cancellation(Cancellation{ID: t.ID, At: now, Due: from})
	if err != nil {
		return err
	}
	r, err := BuildRecord(s.prefix, s.table, now.Add(time.Millisecond), t)
	if err != nil {
		return err
	}
	if s.transactional() {
		err = s.produceTxn(ctx, c, r)
	} else if err = s.cl.ProduceSync(ctx, c).FirstErr(); err == nil {
		err = s.cl.ProduceSync(ctx, r).FirstErr()
	}
	if err != nil {
		return fmt.Errorf("reschedule %s: %w", t.ID, err)
	}
	return s.late(t.ID, from)
}

// transactional reports whether the client was created with
// kgo.TransactionalID.
func (s *Scheduler) transactional() bool {
	vs := s.cl.OptValues(kgo.TransactionalID)
	return len(vs) == 2 && vs[1] == true
}

// produceTxn produces rs in one transaction and commits it.
func (s *Scheduler) produceTxn(ctx context.Context, rs ...*kgo.Record) error {
	if err := s.cl.BeginTransaction(); err != nil {
		return err
	}
	perr := s.cl.ProduceSync(ctx, rs...).FirstErr()
	commit := kgo.TryCommit
	if perr != nil {
		commit = kgo.TryAbort
	}
	if err := s.cl.EndTransaction(ctx, commit); err != nil {
		return errors.Join(perr, err)
	}
	return perr
}
