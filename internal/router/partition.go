package router

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hourglass/hourglass/internal/offsets"
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

	// waiting counts the records held waiting out their tier (in the wake
	// heap, not in the timer); it decides when the partition is paused.
	waiting int
	// track has every record fetched and not yet produced onward.
	track offsets.Tracker
	// inflight counts produces for this partition not yet acknowledged.
	inflight int
	// timed counts this partition's records in the in-memory timer.
	timed int
	// paused is whether the router paused fetching: it holds
	// MaxHeldPerPartition waiting records.
	paused bool
	// gone is set once a revoked partition's offsets are committed, and at
	// once for a lost one; completions for it are then ignored.
	gone bool
}
