package router

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// partition is the router's state for one assigned delay-topic partition.
type partition struct {
	tp
	tier time.Duration

	// This partition's series, looked up once.
	heldGauge prometheus.Gauge
	forwarded prometheus.Counter
	overrun   prometheus.Observer

	// waiting counts the entries waiting out their tier; with bytes, it
	// decides when the partition is paused.
	waiting int
	// bytes counts the bytes of every entry of the partition in memory:
	// waiting, in the timer, retrying a dead letter or being produced.
	bytes int
	// producing counts the entries being produced onward (waiting for room
	// at their target or in flight).
	producing int
	// timed counts the entries in the in-memory timer.
	timed int
	// paused is whether the router paused fetching it.
	paused bool
	// leaving is set when the partition is being revoked or is lost: its
	// held records are handed off or dropped, and records fetched for it
	// from then on are not taken (the next owner reads them).
	leaving bool
	// gone is set once a revoked partition's offsets are taken for its
	// last commit, and at once for a lost one; what is left of it is then
	// dropped.
	gone bool
}
