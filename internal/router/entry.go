package router

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// state is where an entry is.
type state uint8

const (
	// waiting out its tier, in the wake heap; counts towards pausing its
	// partition.
	stateWaiting state = iota + 1
	// in the in-memory timer (wake heap), waiting for its due time.
	stateTimer
	// in the wake heap, waiting to try its dead letter, or its produce
	// onward, again.
	stateRetry
	// being produced onward: waiting for room at its target or in flight.
	stateProducing
	// due, waiting for the cancellations reader (Router.gated).
	stateGated
)

// entry is one delay record the router holds from its fetch until its
// record onward (forward, hop or dead letter) is acknowledged.
type entry struct {
	rec   *kgo.Record
	meta  tiers.Meta
	part  *partition
	ready time.Time // when to act on it: tier wait over, due, or retry
	state state
	idx   int // index in wakeHeap; -1 when not in it
	size  int // bytes it counts for in its partition
	// mark finishes its record's offset once its record onward is
	// acknowledged.
	mark consumer.Mark

	// Dead letters: why, whether the dead-letter topic refused the full
	// dead letter as too large, and failed tries so far.
	cause   error
	minimal bool
	tries   int
	// again is the produce onward to try again when a retry is due (see
	// Router.produceLater); nil: the dead letter.
	again *flight

	owned bool // rec is a copy of its own (see own)
	held  bool // gated while a transaction that wrote its task id is open
}

// entryOverhead and headerOverhead make what an entry counts for in the
// byte limits what it takes in memory once produced onward, whatever its
// record holds: entryOverhead for the entry, its record, the record onward
// (which shares the key, value and header values) with the headers the
// router adds, and the producer's bookkeeping of it; headerOverhead for
// each header's name and its slots in both records' header slices.
const (
	entryOverhead  = 1024
	headerOverhead = 96
)

// recordBytes is what the key, value and headers of rec take, with
// headerOverhead for each header.
func recordBytes(rec *kgo.Record) int {
	return len(rec.Key) + len(rec.Value) + record.HeaderBytes(rec.Headers) + headerOverhead*len(rec.Headers)
}

// own makes e hold a copy of its record's key, value and header values in
// one allocation of its own, once. A record returned by a fetch points into
// the fetch's buffer, so an entry held for its tier would hold the whole
// buffer (up to the fetch's size, or a decompressed batch) for as long as it
// waits; the copy holds only itself, which is what the byte limits count.
func (e *entry) own() {
	if e.owned {
		return
	}
	e.owned = true
	rec := e.rec
	n := len(rec.Key) + len(rec.Value)
	for _, h := range rec.Headers {
		n += len(h.Value)
	}
	buf := make([]byte, 0, n)
	take := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		start := len(buf)
		buf = append(buf, b...)
		return buf[start:len(buf):len(buf)]
	}
	out := &kgo.Record{
		Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp,
		LeaderEpoch: rec.LeaderEpoch, Attrs: rec.Attrs,
		Key: take(rec.Key), Value: take(rec.Value),
	}
	if len(rec.Headers) > 0 {
		out.Headers = make([]kgo.RecordHeader, len(rec.Headers))
		for i, h := range rec.Headers {
			// Header names are strings of their own already.
			out.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: take(h.Value)}
		}
	}
	e.rec = out
}
