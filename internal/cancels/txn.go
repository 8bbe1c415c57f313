package cancels

import (
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// txnKey names the transaction one producer has open in one partition.
type txnKey struct {
	partition int32
	producer  int64
}

// change is what one record of the topic does to its task's cancellation
// once it counts: put c (with its expiry), or withdraw the task's
// cancellation when c.Withdrawn.
type change struct {
	c       tiers.Cancellation
	expires time.Time
}

// pendingRec is a record of a transaction still open: it counts once its
// transaction commits, unless a later record of its task id in its
// partition supersedes it first.
type pendingRec struct {
	txn    txnKey
	offset int64
	change change
	dead   bool // superseded
}

// openTxn is a transaction seen open, with its records in offset order.
type openTxn struct {
	first       time.Time // when its first record was read
	firstOffset int64
	recs        []*pendingRec
	dropped     bool // its records were dropped in an overflow
}

// ended is how a transaction whose records were dropped ended: the offset
// of its marker, and whether it committed.
type ended struct {
	marker int64
	commit bool
}

const (
	// pendingCost is what a pending record takes in memory besides its id.
	pendingCost = 160
	// maxPendingBytes bounds the memory of pending records. Transactions
	// that write more (a client that never ends one and writes on) make the
	// tracker overflow: see txns.
	maxPendingBytes = 32 << 20
)

// txns tracks the transactions open on the topic as a read of uncommitted
// records shows them, and the task ids they wrote. Whoever applies records
// holds Reader.applyMu; the router sees the effect through the deltas of
// held ids (see Reader.publish).
//
// Past maxPendingBytes of pending records it overflows: it drops them,
// notes where each partition must be read again (rewind), holds every task
// id (Frozen) and keeps reading, noting how each transaction then open
// ends. Once none is open, the partitions are read again from rewind, and
// the records of those transactions count or not as their markers said
// (ended), without being held pending again; the task ids are let go when
// the read has passed those markers. A client that writes without end in
// a transaction it leaves open holds every deadline, for as long as the
// broker lets the transaction live (transaction.max.timeout.ms).
type txns struct {
	open  map[txnKey]*openTxn
	byID  map[string][]*pendingRec // live pending records by task id
	bytes int                      // memory of the live pending records
	limit int                      // of bytes; maxPendingBytes

	overflow  bool             // records of open transactions are being dropped
	rewind    map[int32]int64  // where to read again once the dropped transactions ended
	ended     map[txnKey]ended // how the dropped transactions ended, until read again
	replaying bool             // reading again from rewind

	held []heldDelta // changes of the held ids since takeDeltas
}

// heldDelta is a change of the number of pending records of a task id.
type heldDelta struct {
	id string
	n  int
}

func newTxns() *txns {
	return &txns{open: make(map[txnKey]*openTxn), byID: make(map[string][]*pendingRec),
		rewind: make(map[int32]int64), ended: make(map[txnKey]ended), limit: maxPendingBytes}
}

// frozen reports whether every task id is held: records of open
// transactions were dropped, and are not read again yet.
func (t *txns) frozen() bool { return t.overflow || t.replaying }

// known returns how a record of a transaction read again after an
// overflow ends, if its transaction's end is known.
func (t *txns) known(rec *kgo.Record) (commit, ok bool) {
	e, ok := t.ended[txnKey{rec.Partition, rec.ProducerID}]
	if !ok || rec.Offset > e.marker {
		return false, false
	}
	return e.commit, true
}

// add records rec, read at now, as pending in the open transaction of its
// producer.
func (t *txns) add(rec *kgo.Record, ch change, now time.Time) {
	k := txnKey{rec.Partition, rec.ProducerID}
	tx := t.open[k]
	if tx == nil {
		tx = &openTxn{first: now, firstOffset: rec.Offset, dropped: t.overflow}
		t.open[k] = tx
	}
	if tx.dropped {
		t.rewindTo(rec.Partition, tx.firstOffset)
		return
	}
	p := &pendingRec{txn: k, offset: rec.Offset, change: ch}
	tx.recs = append(tx.recs, p)
	id := ch.c.ID
	t.byID[id] = append(t.byID[id], p)
	t.bytes += pendingCost + len(id)
	t.held = append(t.held, heldDelta{id, 1})
	if t.bytes > t.limit {
		t.spill()
	}
}

// spill drops every pending record: the tracker overflows.
func (t *txns) spill() {
	t.overflow = true
	for k, tx := range t.open {
		for _, p := range tx.recs {
			if !p.dead {
				t.drop(p)
			}
		}
		tx.recs, tx.dropped = nil, true
		t.rewindTo(k.partition, tx.firstOffset)
	}
}

func (t *txns) rewindTo(partition int32, offset int64) {
	if cur, ok := t.rewind[partition]; !ok || offset < cur {
		t.rewind[partition] = offset
	}
}

// end closes the transaction of marker's producer in its partition and
// returns its live records, in offset order, when it committed; nil when it
// aborted or wrote nothing pending.
func (t *txns) end(partition int32, producer int64, commit bool, offset int64) []*pendingRec {
	k := txnKey{partition, producer}
	tx := t.open[k]
	if tx == nil {
		return nil
	}
	delete(t.open, k)
	if tx.dropped {
		t.ended[k] = ended{marker: offset, commit: commit}
		return nil
	}
	var live []*pendingRec
	for _, p := range tx.recs {
		if p.dead {
			continue
		}
		t.drop(p)
		if commit {
			live = append(live, p)
		}
	}
	return live
}

// supersede drops the pending records of task id in partition below
// offset: a later record of the task replaces them, whatever becomes of
// their transactions.
func (t *txns) supersede(id string, partition int32, offset int64) {
	ps := t.byID[id]
	if len(ps) == 0 {
		return
	}
	for _, p := range append([]*pendingRec(nil), ps...) {
		if p.txn.partition == partition && p.offset < offset {
			t.drop(p)
		}
	}
}

// drop takes the live record p out of byID.
func (t *txns) drop(p *pendingRec) {
	p.dead = true
	id := p.change.c.ID
	ps := t.byID[id]
	for i, q := range ps {
		if q == p {
			ps = append(ps[:i], ps[i+1:]...)
			break
		}
	}
	if len(ps) == 0 {
		delete(t.byID, id)
	} else {
		t.byID[id] = ps
	}
	t.bytes -= pendingCost + len(id)
	t.held = append(t.held, heldDelta{id, -1})
}

// takeDeltas returns the changes of the held ids since the last call.
func (t *txns) takeDeltas() []heldDelta {
	d := t.held
	t.held = nil
	return d
}

// passed notes the next offset to read of a partition: the transactions
// read again up to their markers are known no more.
func (t *txns) passed(partition int32, next int64) {
	if !t.replaying {
		return
	}
	for k, e := range t.ended {
		if k.partition == partition && next > e.marker {
			delete(t.ended, k)
		}
	}
	if len(t.ended) == 0 {
		t.replaying = false
	}
}

// orphans ends, as committed, the transactions of partition whose records
// are below lso, its last stable offset, though the read has passed the
// high watermark listed after lso without their markers: a transaction
// below the last stable offset has ended, and its marker was removed while
// records of it remain (Kafka's log cleaner keeps a marker as long as
// records of its transaction remain, and removes the records of aborted
// transactions first). It returns their live records, in offset order.
func (t *txns) orphans(partition int32, lso int64) (live []*pendingRec, n int) {
	for k, tx := range t.open {
		if k.partition != partition || tx.firstOffset >= lso {
			continue
		}
		n++
		if tx.dropped {
			delete(t.open, k)
			t.ended[k] = ended{marker: lso - 1, commit: true}
			continue
		}
		live = append(live, t.end(k.partition, k.producer, true, lso)...)
	}
	slices.SortFunc(live, func(a, b *pendingRec) int { return cmp.Compare(a.offset, b.offset) })
	return live, n
}

// replay returns where to read each partition again when the tracker has
// overflowed and every transaction whose records it dropped has ended; nil
// otherwise. From then on it is replaying.
func (t *txns) replay() map[int32]int64 {
	if !t.overflow {
		return nil
	}
	for _, tx := range t.open {
		if tx.dropped {
			return nil
		}
	}
	t.overflow = false
	t.replaying = len(t.ended) > 0
	out := t.rewind
	t.rewind = make(map[int32]int64)
	return out
}

// floor returns, for each partition with an open transaction, the offset
// of its first live pending record, or where an overflow will read it
// again: a read started again must start there, since the store does not
// hold pending records.
func (t *txns) floor() map[int32]int64 {
	out := make(map[int32]int64, len(t.rewind))
	for p, o := range t.rewind {
		out[p] = o
	}
	for k, tx := range t.open {
		for _, p := range tx.recs {
			if p.dead {
				continue
			}
			if cur, ok := out[k.partition]; !ok || p.offset < cur {
				out[k.partition] = p.offset
			}
			break
		}
	}
	return out
}

// oldest returns when the oldest open transaction with a live record was
// first read, and how many transactions are open with live records.
func (t *txns) oldest() (time.Time, int) {
	var first time.Time
	n := 0
	for _, tx := range t.open {
		live := false
		for _, p := range tx.recs {
			if !p.dead {
				live = true
				break
			}
		}
		if !live {
			continue
		}
		n++
		if first.IsZero() || tx.first.Before(first) {
			first = tx.first
		}
	}
	return first, n
}

// marker reads a control record: whether it ends a transaction, and
// whether it commits it.
func marker(rec *kgo.Record) (commit, ok bool) {
	var k kmsg.ControlRecordKey
	if err := k.ReadFrom(rec.Key); err != nil {
		return false, false
	}
	switch k.Type {
	case kmsg.ControlRecordKeyTypeCommit:
		return true, true
	case kmsg.ControlRecordKeyTypeAbort:
		return false, true
	}
	return false, false
}
