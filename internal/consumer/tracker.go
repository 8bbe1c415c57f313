package consumer

import "math/bits"

// tracker computes a partition's commit watermark: the lowest offset whose
// record is not yet durably produced onward, or one past the highest offset
// seen when every record is done. Offsets are added in increasing order (with
// gaps, for compaction, control records and aborted transactions) and
// finished in any order; an offset at or below one added before is a reset of
// the partition (see Add). It keeps one bit per offset between the watermark
// and the highest offset seen, so a record held for a long time costs the
// records behind it a bit each.
type tracker struct {
	words  []uint64 // bit set = pending; words[head] holds offset base
	head   int
	base   int64
	next   int64   // one past the highest offset added; -1 before the first
	n      int     // pending offsets
	resets []int64 // the offsets of the resets so far, in order
}

// newTracker returns an empty tracker.
func newTracker() tracker { return tracker{next: -1} }

// Add marks offset pending. Offsets normally rise; an offset at or below
// one added before means the partition was reset to it (the log was
// truncated after a leader change, or the consumer was moved back): the
// offsets from there up, pending or not, are forgotten, since the records
// now at those offsets are new ones, and Add reports true. Offsets below it
// that are still pending stay pending. A record taken before the reset at
// an offset from there up is stale (see Stale): its Done would finish the
// new record at the same offset.
func (t *tracker) Add(offset int64) (reset bool) {
	if t.next >= 0 && offset < t.next {
		reset = true
		t.forgetFrom(offset)
		t.resets = append(t.resets, offset)
	}
	if t.next < 0 || t.n == 0 {
		// Nothing pending: restart the window at this offset.
		t.words, t.head, t.base = t.words[:0], 0, offset&^63
	}
	t.next = offset + 1
	i := t.head + int((offset-t.base)/64)
	for len(t.words) <= i {
		t.words = append(t.words, 0)
	}
	t.words[i] |= 1 << ((offset - t.base) % 64)
	t.n++
	return reset
}

// forgetFrom drops every pending offset at or above offset.
func (t *tracker) forgetFrom(offset int64) {
	d := offset - t.base
	if t.n == 0 || d <= 0 {
		t.n = 0
		return
	}
	i := t.head + int(d/64)
	if i >= len(t.words) {
		return
	}
	t.words[i] &= 1<<(d%64) - 1
	t.words = t.words[:i+1]
	t.n = 0
	for _, w := range t.words[t.head:] {
		t.n += bits.OnesCount64(w)
	}
}

// Epoch counts the resets so far; record it with each offset added, for
// Stale.
func (t *tracker) Epoch() int { return len(t.resets) }

// Stale reports whether the record at offset, added at epoch, was forgotten
// by a later reset to an offset at or below it; its Done must be skipped.
func (t *tracker) Stale(epoch int, offset int64) bool {
	for _, o := range t.resets[epoch:] {
		if o <= offset {
			return true
		}
	}
	return false
}

// Skip records that the offsets below next hold nothing to do (a batch the
// consumer skipped): once every pending offset is done, the watermark is at
// least next.
func (t *tracker) Skip(next int64) {
	t.next = max(t.next, next)
}

// Done marks offset finished. Offsets not pending are ignored.
func (t *tracker) Done(offset int64) {
	d := offset - t.base
	if d < 0 {
		return
	}
	i := t.head + int(d/64)
	if i >= len(t.words) || t.words[i]&(1<<(d%64)) == 0 {
		return
	}
	t.words[i] &^= 1 << (d % 64)
	t.n--
	if i != t.head {
		return
	}
	for t.head < len(t.words)-1 && t.words[t.head] == 0 {
		t.head++
		t.base += 64
	}
	if t.head >= 1024 && t.head >= len(t.words)/2 {
		n := copy(t.words, t.words[t.head:])
		t.words, t.head = t.words[:n], 0
	}
}

// Watermark returns the offset to commit, and false before any offset was
// added.
func (t *tracker) Watermark() (int64, bool) {
	switch {
	case t.next < 0:
		return 0, false
	case t.n == 0:
		return t.next, true
	}
	return t.base + int64(bits.TrailingZeros64(t.words[t.head])), true
}

// Pending returns how many offsets are not done.
func (t *tracker) Pending() int { return t.n }
