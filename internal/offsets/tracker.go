package offsets

import "math/bits"

// Tracker computes a partition's commit watermark: the lowest offset whose
// record is not yet durably produced onward, or one past the highest offset
// seen when every record is done. Offsets are added in increasing order (with
// gaps, for compaction and control records) and finished in any order. It
// keeps one bit per offset between the watermark and the highest offset seen,
// so a record held for a long time costs the records behind it a bit each.
type Tracker struct {
	words []uint64 // bit set = pending; words[head] holds offset base
	head  int
	base  int64
	next  int64 // one past the highest offset added; -1 before the first
	n     int   // pending offsets
}

// NewTracker returns an empty Tracker.
func NewTracker() Tracker { return Tracker{next: -1} }

// Add marks offset pending. It must be higher than every offset added before.
func (t *Tracker) Add(offset int64) {
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
}

// Done marks offset finished. Offsets not pending are ignored.
func (t *Tracker) Done(offset int64) {
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
func (t *Tracker) Watermark() (int64, bool) {
	switch {
	case t.next < 0:
		return 0, false
	case t.n == 0:
		return t.next, true
	}
	return t.base + int64(bits.TrailingZeros64(t.words[t.head])), true
}

// Pending returns how many offsets are not done.
func (t *Tracker) Pending() int { return t.n }
