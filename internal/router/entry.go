package router

import (
	"container/heap"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// entry is one delay record the router holds: waiting out its tier, or in
// the in-memory timer waiting for its due time.
type entry struct {
	rec   *kgo.Record
	meta  tiers.Meta
	part  *partition
	ready time.Time // when to act on it: tier wait over, or due
	timer bool      // held in the in-memory timer, not waiting out its tier
	idx   int       // index in wakeHeap; -1 when not in it
}

// wakeHeap orders every entry the router holds by ready time; one clock
// timer is armed for its minimum. Ready times in a delay topic rise with the
// offset only roughly (a producer's linger or clock puts a record behind one
// that is ready a few milliseconds later), so a record is never made to wait
// for the records before it in its partition.
type wakeHeap []*entry

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].ready.Before(h[j].ready) }
func (h wakeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *wakeHeap) Push(x any) {
	e := x.(*entry)
	e.idx = len(*h)
	*h = append(*h, e)
}
func (h *wakeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
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
	return h[0]
}

func (h *wakeHeap) pop() *entry { return heap.Pop(h).(*entry) }
