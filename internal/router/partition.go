package router

import (
	"time"

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

	// queue holds the records waiting out their tier, in offset order; the
	// head (queue[0]) is in the wake heap.
	queue []*entry
	// track has every record fetched and not yet produced onward.
	track offsets.Tracker
	// inflight counts produces for this partition not yet acknowledged.
	inflight int
	// timed counts this partition's records in the in-memory timer.
	timed int
	// paused is whether the router paused fetching: the queue is full.
	paused bool
	// gone is set once a revoked partition's offsets are committed, and at
	// once for a lost one; completions for it are then ignored.
	gone bool
}

func (p *partition) head() *entry {
	if len(p.queue) == 0 {
		return nil
	}
	return p.queue[0]
}

func (p *partition) popHead() {
	p.queue[0] = nil
	p.queue = p.queue[1:]
	if len(p.queue) == 0 {
		p.queue = p.queue[:0:0] // let the backing array go
	}
}
