package canceller

import (
	"sync/atomic"

	"github.com/hourglass/hourglass/internal/outcome"
)

// stats are the counters behind Stats.
type stats struct {
	closed        atomic.Int64
	alreadyClosed atomic.Int64
	skipped       atomic.Int64
	notFound      atomic.Int64
	retried       atomic.Int64
	failed        atomic.Int64
	deadLettered  atomic.Int64
}

// count counts a final outcome; retries are counted where they are made.
func (s *stats) count(o outcome.Outcome) {
	switch o {
	case outcome.Closed:
		s.closed.Add(1)
	case outcome.AlreadyClosed:
		s.alreadyClosed.Add(1)
	case outcome.Skipped:
		s.skipped.Add(1)
	case outcome.NotFound:
		s.notFound.Add(1)
	case outcome.Retry:
	default:
		s.failed.Add(1)
	}
}

// Stats are the canceller's counters since it started: closes by their
// final outcome, and the records rescheduled and dead-lettered.
type Stats struct {
	Closed        int64
	AlreadyClosed int64
	Skipped       int64
	NotFound      int64
	Retried       int64 // failed closes rescheduled through the tiers
	Failed        int64 // closes that failed for good
	DeadLettered  int64
}

// Stats returns the counters.
func (c *Canceller) Stats() Stats {
	return Stats{
		Closed:        c.stats.closed.Load(),
		AlreadyClosed: c.stats.alreadyClosed.Load(),
		Skipped:       c.stats.skipped.Load(),
		NotFound:      c.stats.notFound.Load(),
		Retried:       c.stats.retried.Load(),
		Failed:        c.stats.failed.Load(),
		DeadLettered:  c.stats.deadLettered.Load(),
	}
}
