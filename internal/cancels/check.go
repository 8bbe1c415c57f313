package cancels

import (
	"fmt"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// Verdict is Check's answer for a due deadline.
type Verdict uint8

const (
	// Unread means that not every cancellation acknowledged before the
	// deadline was due has been read yet. Ask for it with Want and check again when
	// Advanced is signalled.
	Unread Verdict = iota
	// Held means that a transaction still open on the topic wrote a record
	// of the task id; it may cancel the deadline once committed. Check again when
	// Advanced is signalled.
	Held
	// Clear means that no cancellation calls the deadline off; it may leave.
	Clear
	// Cancelled means that a cancellation calls the deadline off.
	Cancelled
)

// Deadline is what Check needs to know of a due deadline.
type Deadline struct {
	// ID is the task id.
	ID string
	// Scheduled is when the deadline was scheduled.
	Scheduled time.Time
	// Deadline is its original due time, which a retry of its close keeps
	// while its record's due time moves on.
	Deadline time.Time
	// Due is when its record fell due: the cancellations acknowledged
	// before it must have been read.
	Due time.Time
}

// Check tells whether deadline d may leave at now (at or after d.Due) and,
// when it is Cancelled, by which cancellation. Its error says the store
// cannot be read: nothing may leave unchecked then.
//
// Every cancellation acknowledged before d.Due is applied once Covered
// reaches d.Due, except those of transactions whose markers are not read
// yet: their task ids are Held until then, so that a transaction left open
// holds only the deadlines of the task ids it wrote, and for no longer than
// it stays open. A cancellation stamped more than MaxAhead after now calls
// nothing off: its writer's clock is wrong, and it must not cover the
// deadlines its task has yet to be given.
func (r *Reader) Check(d Deadline, now time.Time) (Verdict, tiers.Cancellation, error) {
	if r.Covered().Before(d.Due) {
		return Unread, tiers.Cancellation{}, nil
	}
	r.mu.Lock()
	held := r.frozen || r.held[d.ID] > 0
	r.mu.Unlock()
	if held {
		return Held, tiers.Cancellation{}, nil
	}
	c, ok, err := r.store.Lookup(d.ID)
	if err != nil {
		return Unread, tiers.Cancellation{}, err
	}
	if !ok || c.At.After(now.Add(MaxAhead)) || !c.Covers(d.Scheduled, d.Deadline) {
		return Clear, tiers.Cancellation{}, nil
	}
	return Cancelled, c, nil
}

// Covered returns the instant up to which every record acknowledged by the
// brokers on the topic has been read; zero until the first read of the
// topic reaches its end.
func (r *Reader) Covered() time.Time {
	ns := r.covered.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Want asks for Covered to reach t: a round starts at t, at once for a t
// that has passed. Advanced is signalled when Covered moves.
func (r *Reader) Want(t time.Time) {
	ns := max(t.UnixNano(), 1) // 0 is "nothing covered"
	for {
		cur := r.wanted.Load()
		if cur >= ns || r.wanted.CompareAndSwap(cur, ns) {
			break
		}
	}
	signal(r.want)
}

// Behind returns how long, at now, the reader has owed a round that was
// wanted: while it cannot list the topic's end or read up to
// it, every due deadline waits. It is 0 while it owes none.
func (r *Reader) Behind(now time.Time) time.Duration {
	since := r.behindSince.Load()
	if since == 0 {
		return 0
	}
	return max(now.Sub(time.Unix(0, since)), 0)
}

// BehindAfter is how long the reader may owe a round before Stalled
// reports it: longer than a broker's restart or a leader's move, and than
// several of a round's listing timeouts.
const BehindAfter = 30 * time.Second

// Stalled returns an error saying how long the reader has owed a round,
// once that is BehindAfter or more (see Behind); nil otherwise. A router is
// not ready meanwhile: it forwards nothing.
func (r *Reader) Stalled(now time.Time) error {
	if d := r.Behind(now); d >= BehindAfter {
		return fmt.Errorf("the cancellations topic %s has not been read up to its end for %v: every due deadline waits", r.cfg.Topic, d.Round(time.Second))
	}
	return nil
}

// Advanced is signalled (capacity 1) each time Covered moves or a
// transaction's records stop holding their task ids.
func (r *Reader) Advanced() <-chan struct{} { return r.advanced }

// Lookup returns the cancellation of task id in the store, if there is one.
func (r *Reader) Lookup(id string) (tiers.Cancellation, bool, error) { return r.store.Lookup(id) }

// OpenTransactions returns how many transactions are open on the topic
// with records that hold task ids, and since when the oldest of them was
// first read (zero without one).
func (r *Reader) OpenTransactions() (int, time.Time) {
	n, ns := r.openTxns.Load(), r.oldestTxn.Load()
	if ns == 0 {
		return int(n), time.Time{}
	}
	return int(n), time.Unix(0, ns)
}

// isFrozen reports whether every task id is held.
func (r *Reader) isFrozen() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frozen
}

// publish makes the changes of the held ids visible to Check, and
// signals Advanced when task ids stop being held. It runs after the store
// has committed the batch the changes come with: a task id must not be let
// go before its cancellation is in the store.
func (r *Reader) publish(ds []heldDelta) {
	released := false
	frozen := r.txns.frozen()
	r.mu.Lock()
	if r.frozen != frozen {
		if frozen {
			r.cfg.Logger.Error("the records of transactions open on the cancellations topic take more than their limit: every due deadline waits until those transactions end and their records are read again",
				"topic", r.cfg.Topic, "limit_bytes", r.txns.limit)
		}
		released = released || !frozen
		r.frozen = frozen
	}
	for _, d := range ds {
		n := r.held[d.id] + d.n
		if n <= 0 {
			delete(r.held, d.id)
			released = released || d.n < 0
		} else {
			r.held[d.id] = n
		}
	}
	r.mu.Unlock()
	first, n := r.txns.oldest()
	r.openTxns.Store(int64(n))
	if first.IsZero() {
		r.oldestTxn.Store(0)
	} else {
		r.oldestTxn.Store(first.UnixNano())
	}
	if released {
		signal(r.advanced)
	}
}
