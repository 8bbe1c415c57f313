package router

import "sync/atomic"

type stats struct {
	forwarded, hopped, deadLettered atomic.Int64
	paused                          atomic.Int64
}

// Stats are the router's counters since it started.
type Stats struct {
	Forwarded    int64 // records produced to their target
	Hopped       int64 // records moved to a shorter (or the same) tier
	DeadLettered int64 // records sent to the dead-letter topic
	Paused       int64 // partitions paused now
}

// Stats returns the counters.
func (r *Router) Stats() Stats {
	return Stats{
		Forwarded:    r.stats.forwarded.Load(),
		Hopped:       r.stats.hopped.Load(),
		DeadLettered: r.stats.deadLettered.Load(),
		Paused:       r.stats.paused.Load(),
	}
}
