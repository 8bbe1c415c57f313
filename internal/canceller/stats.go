package canceller

import (
	"sync/atomic"

	"github.com/hourglass/hourglass/internal/outcome"
)

type stats struct {
	closed, alreadyClosed, skipped, notFound, retried, failed, deadLettered atomic.Int64
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

// Stats are the canceller's counters since it started. Failed counts
// closes that failed for good; Retried, failed closes rescheduled.
type Stats struct {
	Closed, AlreadyClosed, Skipped, NotFound, Retried, Failed, DeadLettered int64
}

// Stats returns the counters.
func (c *Canceller) Stats() Stats {
	return Stats{
		Closed: c.stats.closed.Load(), AlreadyClosed: c.stats.alreadyClosed.Load(),
		Skipped: c.stats.skipped.Load(), NotFound: c.stats.notFound.Load(), Retried: c.stats.retried.Load(),
		Failed: c.stats.failed.Load(), DeadLettered: c.stats.deadLettered.Load(),
	}
}
