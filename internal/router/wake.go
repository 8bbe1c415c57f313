package router

// wakeHeap orders the entries in memory that wait for a time (waiting out a
// tier, in the timer, or waiting to retry a dead letter) by that time; one
// clock timer is armed for its minimum. Ready times in a delay topic rise
// with the offset only roughly (a producer's linger or clock puts a record
// behind one that is ready a few milliseconds later), so a record is never
// made to wait for the records before it in its partition.
//
// Each slot keeps its entry's ready time beside the pointer, so that
// ordering the heap reads the slots alone, not the entries they point to.
// An entry's ready time does not change while it is in the heap.
type wakeHeap []wakeSlot

type wakeSlot struct {
	at int64 // e.ready in Unix nanoseconds
	e  *entry
}

func (h wakeHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].e.idx, h[j].e.idx = i, j
}

func (h wakeHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if h[i].at <= h[j].at {
			return
		}
		h.swap(i, j)
		j = i
	}
}

// down sifts the slot at i down among the first n; it reports whether the
// slot moved.
func (h wakeHeap) down(i, n int) bool {
	i0 := i
	for {
		j := 2*i + 1
		if j >= n || j < 0 {
			break
		}
		if r := j + 1; r < n && h[r].at < h[j].at {
			j = r
		}
		if h[i].at <= h[j].at {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

func (h *wakeHeap) push(e *entry) {
	e.idx = len(*h)
	*h = append(*h, wakeSlot{at: e.ready.UnixNano(), e: e})
	h.up(e.idx)
}

// cut takes the last slot off the heap and returns its entry.
func (h *wakeHeap) cut() *entry {
	old := *h
	n := len(old) - 1
	e := old[n].e
	old[n] = wakeSlot{}
	*h = old[:n]
	e.idx = -1
	return e
}

func (h *wakeHeap) remove(e *entry) {
	i := e.idx
	if i < 0 {
		return
	}
	if n := len(*h) - 1; i != n {
		h.swap(i, n)
		if !h.down(i, n) {
			h.up(i)
		}
	}
	h.cut()
}

func (h wakeHeap) peek() *entry {
	if len(h) == 0 {
		return nil
	}
	return h[0].e
}

func (h *wakeHeap) pop() *entry {
	n := len(*h) - 1
	h.swap(0, n)
	h.down(0, n)
	return h.cut()
}
