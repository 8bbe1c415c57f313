package canceller

import (
	"sync/atomic"

	"github.com/hourglass/hourglass/internal/closer"
)

type stats struct {
	closed, alreadyClosed, skipped, notFound, failed, deadLettered atomic.Int64
}

func (s *stats) count(o closer.Outcome) {
	switch o {
	case closer.Closed:
		s.closed.Add(1)
	case closer.AlreadyClosed:
		s.alreadyClosed.Add(1)
	case closer.Skipped:
		s.skipped.Add(1)
	case closer.NotFound:
		s.notFound.Add(1)
	default:
		s.failed.Add(1)
	}
}

// Stats are the canceller's counters since it started.
type Stats struct {
	Closed, AlreadyClosed, Skipped, NotFound, Failed, DeadLettered int64
}

// Stats returns the counters.
func (c *Canceller) Stats() Stats {
	return Stats{
		Closed: c.stats.closed.Load(), AlreadyClosed: c.stats.alreadyClosed.Load(),
		Skipped: c.stats.skipped.Load(), NotFound: c.stats.notFound.Load(),
		Failed: c.stats.failed.Load(), DeadLettered: c.stats.deadLettered.Load(),
	}
}
