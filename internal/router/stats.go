package router

import (
	"sync/atomic"
	"time"
)

// stats are the router's counters; Stats and the unlabelled Prometheus
// series read them. The loop goroutine writes them.
type stats struct {
	forwarded, hopped, deadLettered atomic.Int64
	cancelled                       atomic.Int64
	handedOff                       atomic.Int64
	paused                          atomic.Int64 // partitions paused now
	timer                           atomic.Int64 // records in the in-memory timer now
	heldBytes                       atomic.Int64 // bytes of the records held now
	queued                          atomic.Int64 // produces waiting for room at their target now
	deadLetterRetries               atomic.Int64
	held                            atomic.Int64 // records waiting out their tier or in the timer now
	gated                           atomic.Int64 // due records waiting for the cancellations reader now
	heldByTxn                       atomic.Int64 // of those, records waiting for a transaction to end
	// busySince is when the router last went from holding no due record
	// (gated, produced and not acknowledged, or waiting for room) to
	// holding some, and lastAck when a produce was last acknowledged; unix
	// ns, busySince 0 while it holds none. See stalled.
	busySince, lastAck atomic.Int64
}

// stalled returns how long, at now, the router has held due records
// without a produce acknowledged, in seconds; 0 while it holds none.
func (s *stats) stalled(now time.Time) float64 {
	since := s.busySince.Load()
	if since == 0 {
		return 0
	}
	since = max(since, s.lastAck.Load())
	return max(now.Sub(time.Unix(0, since)).Seconds(), 0)
}

// Stats are the router's counters since it started.
type Stats struct {
	Forwarded    int64 // records produced to their target
	Hopped       int64 // records moved to a shorter (or the same) tier
	DeadLettered int64 // records sent to the dead-letter topic
	Cancelled    int64 // records dropped because their task was cancelled
	Paused       int64 // partitions paused now
	HandedOff    int64 // held records put back into Kafka at a revoke or stop
	HeldBytes    int64 // bytes of the records held now
	// DeadLetterRetries counts dead letters the dead-letter topic refused.
	DeadLetterRetries int64
	// Held counts the records held now, waiting out their tier or in the
	// timer.
	Held int64
	// Gated counts the due records waiting for the cancellations reader
	// now, and HeldByTransaction those of them whose task id a transaction
	// still open wrote.
	Gated, HeldByTransaction int64
}

// Stats returns the counters.
func (r *Router) Stats() Stats {
	return Stats{
		Forwarded:         r.stats.forwarded.Load(),
		Hopped:            r.stats.hopped.Load(),
		DeadLettered:      r.stats.deadLettered.Load(),
		Cancelled:         r.stats.cancelled.Load(),
		Paused:            r.stats.paused.Load(),
		HandedOff:         r.stats.handedOff.Load(),
		HeldBytes:         r.stats.heldBytes.Load(),
		DeadLetterRetries: r.stats.deadLetterRetries.Load(),
		Held:              r.stats.held.Load(),
		Gated:             r.stats.gated.Load(),
		HeldByTransaction: r.stats.heldByTxn.Load(),
	}
}
