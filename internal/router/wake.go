package router

import "container/heap"

// wakeHeap orders the entries in memory that wait for a time (waiting out a
// tier, in the timer, or waiting to retry a dead letter) by that time; one
// clock timer is armed for its minimum. Ready times in a delay topic rise
// with the offset only roughly (a producer's linger or clock puts a record
// behind one that is ready a few milliseconds later), so a record is never
// made to wait for the records before it in its partition.
//
// Each slot keeps its entry's ready time beside the pointer, so that
// comparing two slots reads the slots alone, not the entries they point to
// (which are spread over the heap memory).
// An entry's ready time does not change while it is in the heap.
type wakeHeap []wakeSlot

type wakeSlot struct {
	at int64 // e.ready in Unix nanoseconds
	e  *entry
}

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h wakeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].e.idx, h[j].e.idx = i, j
}

// Push and Pop take and return the entry, not its slot: a pointer in an
// interface costs no allocation.
func (h *wakeHeap) Push(x any) {
	e := x.(*entry)
	e.idx = len(*h)
	*h = append(*h, wakeSlot{at: e.ready.UnixNano(), e: e})
}
func (h *wakeHeap) Pop() any {
	old := *h
	e := old[len(old)-1].e
	old[len(old)-1] = wakeSlot{}
	e.idx = -1
	*h = old[:len(old)-1]
	return e
}

func (h *wakeHeap) push(e *entry) { heap.Push(h, e) }

func (h *wakeHeap) remove(e *entry) {
	if e.idx >= 0 {
		heap.Remove(h, e.idx)
	}
}

func (h wakeHeap) peek() *entry {
	if len(h) == 0 {
		return nil
	}
	return h[0].e
}

func (h *wakeHeap) pop() *entry { return heap.Pop(h).(*entry) }
