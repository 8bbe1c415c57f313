package consumer

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/clock"
)

// DefaultCommitTimeout bounds one commit of a committer.
const DefaultCommitTimeout = 10 * time.Second

// maxCommitBackoff bounds the wait after commits that failed in a row: the
// wait doubles from Interval with each failure, so that a commit the group
// refuses for good (an ACL the member lacks) is not tried, and logged, 20
// times a second.
const maxCommitBackoff = 5 * time.Second

// committer commits a consumer group's watermarks soon after they advance:
// Notify says a watermark moved, and Run commits what Source returns, at
// most one commit at a time and at most one per Interval. A crash therefore
// repeats only what was handed on in the last Interval plus one commit's
// round trip, not a fixed commit period's worth.
//
// Every commit runs with a fresh context bounded by Timeout, never with a
// caller's context that a stop, a revoke or a slow close may have used up:
// a commit is what makes finished work count, and is the last thing that
// should be cut short. Do serializes the commits of a revoke or a stop with
// Run's, so that a commit computed before a revoke never lands after it.
type committer struct {
	// Client commits; required.
	Client *kgo.Client
	// Source returns the watermarks to commit; Run calls it under the
	// commit lock. It may return nil (nothing to commit).
	Source func() commits
	// Interval is the least time between two of Run's commits; default
	// time.Second.
	Interval time.Duration
	// Timeout bounds one commit; default DefaultCommitTimeout.
	Timeout time.Duration
	// Clock times Interval; default the wall clock.
	Clock clock.Clock
	// OnError is told of a commit that failed, or of the partitions the
	// broker refused; default ignore. A failed commit loses nothing: the
	// records after the last committed offset are read again.
	OnError func(error)

	mu   sync.Mutex // serializes commits
	kick chan struct{}
	once sync.Once
}

func (c *committer) init() {
	c.once.Do(func() {
		c.kick = make(chan struct{}, 1)
		if c.Interval <= 0 {
			c.Interval = time.Second
		}
		if c.Timeout <= 0 {
			c.Timeout = DefaultCommitTimeout
		}
		if c.Clock == nil {
			c.Clock = clock.Real{}
		}
		if c.OnError == nil {
			c.OnError = func(error) {}
		}
	})
}

// Notify tells Run that a watermark has moved. It never blocks.
func (c *committer) Notify() {
	c.init()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run commits after each Notify, spaced by Interval, until ctx is done. A
// commit that fails is tried again after Interval, doubled for each
// failure in a row up to maxCommitBackoff.
func (c *committer) Run(ctx context.Context) {
	c.init()
	var last time.Time
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		space := c.Interval
		if failures > 0 {
			space = min(c.Interval<<min(failures, 16), max(maxCommitBackoff, c.Interval))
		}
		if wait := space - c.Clock.Now().Sub(last); !last.IsZero() && wait > 0 {
			t := c.Clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
		last = c.Clock.Now()
		if err := c.Do(c.Source); err != nil {
			failures++
			c.OnError(err)
			c.Notify() // try again after the backoff
		} else {
			failures = 0
		}
	}
}

// Do commits what source returns, with the commit lock held across both,
// and a fresh context bounded by Timeout. It returns the commit's error or
// the first partition the broker refused.
func (c *committer) Do(source func() commits) error {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	offs := source()
	if len(offs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	return commit(ctx, c.Client, offs)
}
