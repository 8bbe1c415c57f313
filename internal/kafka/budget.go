package kafka

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// errDeferred is what the decompressor returns for a batch it does not
// decode because the client's decode budget is spent. franz-go then keeps
// what the partition decoded before it and fetches the batch again; on a
// partition's first batch, the poll reports the error for the partition
// (see Deferred).
var errDeferred = errors.New("the client's decode budget is spent: the batch is fetched again once polled records free it")

// Deferred reports whether err, a poll's error for a partition, only says
// that the client left the partition's next batch to a later fetch, being
// over its decode budget: not an error at all, to be neither logged, nor
// backed off from, nor dead-lettered.
func Deferred(err error) bool { return errors.Is(err, errDeferred) }

// leakAfter is how long after its last decompression a client still
// counts records decoded and not buffered: franz-go drops some records it
// decodes (below the fetch offset, in aborted transactions) without
// buffering them, and a fetch decodes its batches one after the other, so
// what is still counted when no batch was decoded for this long is such
// records, not a fetch in progress.
const leakAfter = 100 * time.Millisecond

// decodeBudget bounds the records a client has decoded and not yet handed
// to a poll: those of fetches being decoded (decoding) and those buffered
// (buffered), each record counted as what it takes (heldBytes). A batch is
// decoded only when the cap of one batch still fits in the budget besides
// them and the batches being decoded (reserved); otherwise the decompressor
// defers it (errDeferred). franz-go fetches again from a broker only once
// its buffered fetch is polled whole, so polls free the budget.
type decodeBudget struct {
	limit, batch int64
	now          func() time.Time

	decoding atomic.Int64
	buffered atomic.Int64

	mu         sync.Mutex
	reserved   int64
	lastCharge time.Time
}

func newDecodeBudget(limit, batch int, now func() time.Time) *decodeBudget {
	return &decodeBudget{limit: int64(limit), batch: int64(batch), now: now}
}

// reserve reserves the cap of one batch for a decompression, or reports
// that the budget has no room for it.
func (b *decodeBudget) reserve() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reserved == 0 && b.now().Sub(b.lastCharge) >= leakAfter {
		b.decoding.Store(0)
	}
	if b.reserved+max(b.decoding.Load(), 0)+b.buffered.Load()+b.batch > b.limit {
		return false
	}
	b.reserved += b.batch
	return true
}

// settle ends a decompression's reservation, counting held, what its
// records take, as being decoded until the client buffers them.
func (b *decodeBudget) settle(held int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reserved -= b.batch
	if held > 0 {
		b.decoding.Add(int64(held))
		b.lastCharge = b.now()
	}
}

// OnFetchRecordBuffered implements kgo.HookFetchRecordBuffered: a decoded
// record (or one of an uncompressed batch) is buffered.
func (b *decodeBudget) OnFetchRecordBuffered(r *kgo.Record) {
	n := heldBytes(r)
	if r.Attrs.CompressionType() != 0 {
		if d := b.decoding.Add(-n); d < 0 {
			b.decoding.CompareAndSwap(d, 0) // counted no more since leakAfter
		}
	}
	b.buffered.Add(n)
}

// OnFetchRecordUnbuffered implements kgo.HookFetchRecordUnbuffered: a
// buffered record is polled, or dropped.
func (b *decodeBudget) OnFetchRecordUnbuffered(r *kgo.Record, _ bool) {
	b.buffered.Add(-heldBytes(r))
}

// heldBytes is what a decoded record takes: its key, value and headers
// (which point into its batch) and, beside them, its kgo.Record and its
// headers (recordCost, headerCost). The decompressor counts the same for
// each record of a batch (decodedCost).
func heldBytes(r *kgo.Record) int64 {
	n := recordCost + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += headerCost + len(h.Key) + len(h.Value)
	}
	return int64(n)
}
