package cancels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// Batch is a set of writes that Commit applies atomically: the store holds
// all of them or, after a crash, none. Its zero value is not usable: get
// one from Store.NewBatch. A Batch is not safe for concurrent use.
type Batch struct {
	s   *Store
	ops []op
}

// op is one write of a Batch.
type op struct {
	kind      byte // opPut, opWithdraw or opOffset
	c         tiers.Cancellation
	expires   time.Time
	partition int32
	next      int64
}

const (
	opPut = iota
	opWithdraw
	opOffset
)

// NewBatch returns an empty batch of writes to s.
func (s *Store) NewBatch() *Batch { return &Batch{s: s} }

// Put sets the cancellation of task c.ID, replacing its earlier one, and
// its expiry: the time after which it can no longer matter, when Sweep may
// delete it (a zero expires is long past). A withdrawn c (a tombstone) is
// Withdraw(c.ID).
func (b *Batch) Put(c tiers.Cancellation, expires time.Time) {
	if c.Withdrawn {
		b.Withdraw(c.ID)
		return
	}
	b.ops = append(b.ops, op{kind: opPut, c: c, expires: expires})
}

// Withdraw removes the cancellation of task id, if there is one.
func (b *Batch) Withdraw(id string) {
	b.ops = append(b.ops, op{kind: opWithdraw, c: tiers.Cancellation{ID: id}})
}

// SetOffset records next as the next offset to read of a partition of the
// topic.
func (b *Batch) SetOffset(partition int32, next int64) {
	b.ops = append(b.ops, op{kind: opOffset, partition: partition, next: next})
}

// write runs f, which writes to s.db, as the only writer: with the store
// open, not broken, and its writes serialized.
func (s *Store) write(f func() error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return errClosed
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.broken(); err != nil {
		return err
	}
	return f()
}

// Commit applies the writes of the batch, in order, atomically, and empties
// the batch for reuse. Lookup sees them once Commit returns. Commit does not
// sync: after a crash the store may lack the latest batches (whole batches),
// and Offsets says where to read the topic again. On an error the batch is
// kept and nothing is applied.
func (b *Batch) Commit() error {
	return b.s.write(b.commit)
}

// commit is Commit under s.write.
func (b *Batch) commit() error {
	s := b.s
	pb := s.db.NewBatch()
	defer pb.Close()
	delta, err := s.fill(pb, b.ops)
	if err != nil {
		return fmt.Errorf("cancels: commit a batch of %d writes: %w", len(b.ops), err)
	}
	_ = pb.Set(keyLen, binary.AppendVarint(nil, s.n.Load()+delta), nil)
	if err := pb.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("cancels: commit a batch of %d writes: %w", len(b.ops), err)
	}
	s.n.Add(delta)
	clear(b.ops) // drop the references of the ids
	b.ops = b.ops[:0]
	return nil
}

// fill writes ops into pb and returns by how much they change the number of
// cancellations. A put or withdrawal first deletes the expiry index entry of
// the task's current cancellation (in the store, or written earlier in ops),
// so that the index holds exactly one entry per cancellation.
func (s *Store) fill(pb *pebble.Batch, ops []op) (delta int64, err error) {
	clear(s.seen)
	cur := cursor{db: s.db}
	defer cur.close()
	var k, v []byte
	for i := range ops {
		o := &ops[i]
		if o.kind == opOffset {
			_ = pb.Set(offsetKey(o.partition), binary.AppendVarint(v[:0], o.next), nil)
			continue
		}
		id := o.c.ID
		old, ok := s.seen[id]
		if !ok {
			if old, err = cur.current(id); err != nil {
				return 0, err
			}
		}
		if old.exists {
			_ = pb.Delete(expiryKey(k[:0], old.expires, id), nil)
		}
		k = cancelKey(k[:0], id)
		switch {
		case o.kind == opPut:
			v = appendValue(v[:0], o.c, o.expires)
			_ = pb.Set(k, v, nil)
			exp := o.expires.UnixMilli()
			k = expiryKey(k[:0], exp, id)
			_ = pb.Set(k, nil, nil)
			s.seen[id] = entry{expires: exp, exists: true}
			if !old.exists {
				delta++
			}
		case old.exists:
			_ = pb.Delete(k, nil)
			s.seen[id] = entry{}
			delta--
		}
	}
	return delta, nil
}

// cursor reads the current cancellations of the ids a write touches. One
// iterator serves all of them: a Get for each would set up an iterator over
// every table each time, which costs more than the seek.
type cursor struct {
	db  *pebble.DB
	it  *pebble.Iterator // nil until the first read
	key []byte
}

// current reads the cancellation of task id from the store as it was when
// the cursor first read.
func (c *cursor) current(id string) (entry, error) {
	if c.it == nil {
		it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixCancel}, UpperBound: []byte{prefixCancel + 1}})
		if err != nil {
			return entry{}, err
		}
		c.it = it
	}
	c.key = cancelKey(c.key[:0], id)
	if !c.it.SeekPrefixGE(c.key) || !bytes.Equal(c.it.Key(), c.key) {
		return entry{}, c.it.Error()
	}
	v, err := c.it.ValueAndErr()
	if err != nil {
		return entry{}, fmt.Errorf("read %q: %w", id, err)
	}
	_, exp, err := decodeValue(v)
	if err != nil {
		return entry{}, fmt.Errorf("read %q: %w", id, err)
	}
	return entry{expires: exp, exists: true}, nil
}

// close closes the iterator of the cursor.
func (c *cursor) close() {
	if c.it != nil {
		_ = c.it.Close() // its error, if any, was returned by current
	}
}

// Sweep deletes the cancellations whose expiry, to the millisecond, is
// before t, and returns how many it deleted. It deletes them in batches of
// sweepChunk, so that Commit can run between them.
func (s *Store) Sweep(t time.Time) (int, error) {
	from, upper := []byte{prefixExpiry}, expiryKey(nil, t.UnixMilli(), "")
	total := 0
	for from != nil {
		n, next, err := s.sweepChunk(from, upper)
		total += n
		if err != nil {
			return total, fmt.Errorf("cancels: sweep before %s: %w", t.UTC().Format(time.RFC3339Nano), err)
		}
		from = next
	}
	return total, nil
}

// sweepChunk deletes up to sweepChunk expiry index entries from from to
// upper, and the cancellations they name whose expiry still is the
// entry's. It returns how many cancellations it deleted and where the next
// chunk starts (nil: nothing is left).
func (s *Store) sweepChunk(from, upper []byte) (deleted int, next []byte, err error) {
	err = s.write(func() error {
		deleted, next, err = s.sweepChunkLocked(from, upper)
		return err
	})
	return deleted, next, err
}

// sweepChunkLocked is sweepChunk under s.write.
func (s *Store) sweepChunkLocked(from, upper []byte) (deleted int, next []byte, err error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: upper})
	if err != nil {
		return 0, nil, err
	}
	defer it.Close()
	pb := s.db.NewBatch()
	defer pb.Close()
	cur := cursor{db: s.db}
	defer cur.close()
	var k []byte
	seen := 0
	for valid := it.First(); valid; valid = it.Next() {
		if seen == sweepChunk {
			next = append([]byte(nil), it.Key()...)
			break
		}
		seen++
		key := it.Key()
		_ = pb.Delete(key, nil)
		if len(key) < 9 {
			continue // not an index entry: drop it
		}
		exp, id := int64(binary.BigEndian.Uint64(key[1:9])^(1<<63)), string(key[9:])
		c, err := cur.current(id)
		if err != nil {
			return 0, nil, err
		}
		if c.exists && c.expires == exp {
			_ = pb.Delete(cancelKey(k[:0], id), nil)
			deleted++
		}
	}
	if err := it.Error(); err != nil || seen == 0 {
		return 0, nil, err
	}
	_ = pb.Set(keyLen, binary.AppendVarint(nil, s.n.Load()-int64(deleted)), nil)
	if err := pb.Commit(pebble.NoSync); err != nil {
		return 0, nil, err
	}
	s.n.Add(-int64(deleted))
	return deleted, next, nil
}

// Reset deletes everything: cancellations and offsets.
func (s *Store) Reset() error { return s.write(s.reset) }

// reset is Reset under s.write.
func (s *Store) reset() error {
	b := s.db.NewBatch()
	defer b.Close()
	// Range deletions: Pebble drops the tables they cover whole, in the
	// background, without rewriting them. (The writes of an unindexed
	// batch return no error, here and below.)
	for _, p := range []byte{prefixCancel, prefixExpiry, prefixOffset} {
		_ = b.DeleteRange([]byte{p}, []byte{p + 1}, nil)
	}
	_ = b.Set(keyLen, binary.AppendVarint(nil, 0), nil)
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("cancels: reset %s: %w", s.dir, err)
	}
	s.n.Store(0)
	return nil
}
