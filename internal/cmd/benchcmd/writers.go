package benchcmd

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// The other writers of the cancellations topic a router must withstand:
// with --open-txn, a writer that begins a transaction at the start, writes
// into it the cancellation of every 100th order scheduled while it is
// open, and aborts it --open-txn later (as the broker does with a killed
// writer's); with --cancel-flood, a writer of records whose keys are
// longer than any task id, at that many bytes a second while the orders
// are scheduled.

const (
	// txnEvery is how many orders apart the open transaction writes a
	// cancellation.
	txnEvery = 100
	// floodKeyBytes is the key of a flood record: longer than any task id
	// (--max-key-bytes is at most 1,024), within a producer's batch.
	floodKeyBytes = 900 << 10
)

// writers runs the open transaction and the flood, and tells from the
// outcome events what they did to the deadlines.
type writers struct {
	txn     *kgo.Client // nil without --open-txn
	txnEnds time.Time

	mu        sync.Mutex
	inTxn     map[string]bool // orders whose cancellation the open transaction wrote
	cancelled map[string]bool // orders cancelled outside it (--cancel-ratio)
	leaked    int             // of those, closed instead of cancelled
	heldLate  []int64         // lateness of the orders the transaction wrote
	otherLate []int64         // lateness of the other orders closed
	flooded   int             // flood records produced
}

// writersResult is the "writers" object of the bench's JSON line.
type writersResult struct {
	OpenTxnMs int64 `json:"open_txn_ms,omitempty"`
	// InTxn counts the orders whose cancellation the open transaction
	// wrote (held until it aborted, then closed), and InTxnLatenessMs
	// their lateness.
	InTxn           int                  `json:"in_txn"`
	InTxnLatenessMs embedded.Percentiles `json:"in_txn_lateness_ms"`
	// OthersLatenessMs is the lateness of the orders closed besides them.
	OthersLatenessMs embedded.Percentiles `json:"others_lateness_ms"`
	// Cancelled counts the orders cancelled outside the transaction, and
	// Leaked those of them closed instead: it must be 0.
	Cancelled     int `json:"cancelled"`
	Leaked        int `json:"leaked"`
	FloodBytesPS  int `json:"flood_bytes_per_s,omitempty"`
	FloodRecords  int `json:"flood_records,omitempty"`
	FloodKeyBytes int `json:"flood_key_bytes,omitempty"`
}

// startWriters begins the open transaction of --open-txn, if any.
func (r *rig) startWriters(ctx context.Context) (*writers, error) {
	w := &writers{inTxn: make(map[string]bool), cancelled: make(map[string]bool)}
	if r.c.openTxn == 0 {
		return w, nil
	}
	cl, err := kgo.NewClient(append(r.seed, kgo.TransactionalID("bench-open-txn"),
		kgo.TransactionTimeout(r.c.openTxn+30*time.Second))...)
	if err != nil {
		return nil, err
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return nil, err
	}
	w.txn, w.txnEnds = cl, time.Now().Add(r.c.openTxn)
	return w, nil
}

// cancel produces the cancellation of order i, id: into the open
// transaction for every txnEvery-th order while it is open, else as
// --cancel-ratio asks.
func (w *writers) cancel(ctx context.Context, r *rig, i int, id string, byRatio bool) {
	inTxn := w.txn != nil && i%txnEvery == 0 && time.Now().Before(w.txnEnds)
	if !inTxn && !byRatio {
		return
	}
	w.mu.Lock()
	if inTxn {
		w.inTxn[id] = true
	} else {
		w.cancelled[id] = true
	}
	w.mu.Unlock()
	if !inTxn {
		r.cancelAsync(ctx, id)
		return
	}
	rec, err := tiers.BuildCancellation(tiers.DefaultPrefix, tiers.Cancellation{ID: id, At: time.Now()})
	if err != nil {
		panic(err) // an id and a time always build
	}
	w.txn.Produce(ctx, rec, nil)
}

// cancelAsync produces the cancellation of task id, made now.
func (r *rig) cancelAsync(ctx context.Context, id string) {
	rec, err := tiers.BuildCancellation(tiers.DefaultPrefix, tiers.Cancellation{ID: id, At: time.Now()})
	if err != nil {
		panic(err) // an id and a time always build
	}
	r.prod.Produce(ctx, rec, nil)
}

// see takes the outcome events; it counts the first of each order.
func (w *writers) see(ev outcome.Event, first bool) {
	if !first {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.inTxn[ev.TaskID]:
		w.heldLate = append(w.heldLate, ev.ClosedMs-ev.DueMs)
	case w.cancelled[ev.TaskID] && ev.Outcome != outcome.Cancelled:
		w.leaked++
	case ev.Outcome != outcome.Cancelled:
		w.otherLate = append(w.otherLate, ev.ClosedMs-ev.DueMs)
	}
}

// abort aborts the open transaction when it is due, or when ctx ends.
func (w *writers) abort(ctx context.Context, stderr io.Writer) {
	sleepUntil(ctx, w.txnEnds)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := w.txn.EndTransaction(actx, kgo.TryAbort); err != nil {
		fmt.Fprintln(stderr, "bench: abort the open transaction:", err)
	}
	w.txn.Close()
}

// flood produces records of floodKeyBytes keys to the cancellations topic
// at --cancel-flood bytes a second until ctx ends.
func (w *writers) flood(ctx context.Context, r *rig, stderr io.Writer) {
	cl, err := kgo.NewClient(append(r.seed, kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(0))...)
	if err != nil {
		fmt.Fprintln(stderr, "bench: flood:", err)
		return
	}
	defer cl.Close()
	every := time.Duration(float64(time.Second) * floodKeyBytes / float64(r.c.cancelFlood))
	tick := time.NewTicker(every)
	defer tick.Stop()
	topic := tiers.CancellationsTopic(tiers.DefaultPrefix)
	for n := 0; ; n++ {
		key := strings.Repeat(strconv.Itoa(n%10), floodKeyBytes)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte{}}).FirstErr(); err != nil {
			if ctx.Err() == nil {
				fmt.Fprintln(stderr, "bench: flood:", err)
			}
			return
		}
		w.mu.Lock()
		w.flooded++
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// result returns the writers' figures, nil when there were none.
func (w *writers) result(c *benchConfig) *writersResult {
	if w.txn == nil && c.cancelFlood == 0 && c.cancelRatio == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	res := &writersResult{OpenTxnMs: c.openTxn.Milliseconds(), InTxn: len(w.inTxn), InTxnLatenessMs: embedded.PercentilesOf(w.heldLate),
		OthersLatenessMs: embedded.PercentilesOf(w.otherLate),
		Cancelled:        len(w.cancelled), Leaked: w.leaked, FloodBytesPS: c.cancelFlood, FloodRecords: w.flooded}
	if c.cancelFlood > 0 {
		res.FloodKeyBytes = floodKeyBytes
	}
	return res
}
