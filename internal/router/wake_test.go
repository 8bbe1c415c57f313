package router

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestWakeHeap pushes, removes and pops entries at random and checks, after
// every step, that each entry knows its index and that pops come in ready
// order, against a sorted list of what should be in the heap.
func TestWakeHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Unix(1_700_000_000, 0)
	var h wakeHeap
	var in []*entry // what the heap should hold
	check := func(step int) {
		t.Helper()
		if len(h) != len(in) {
			t.Fatalf("step %d: heap holds %d, want %d", step, len(h), len(in))
		}
		for i, s := range h {
			if s.e.idx != i || s.at != s.e.ready.UnixNano() {
				t.Fatalf("step %d: slot %d holds an entry with index %d, at %d for ready %d", step, i, s.e.idx, s.at, s.e.ready.UnixNano())
			}
			if i > 0 && h[(i-1)/2].at > s.at {
				t.Fatalf("step %d: slot %d is before its parent", step, i)
			}
		}
	}
	for step := range 20_000 {
		switch op := rng.IntN(10); {
		case op < 5 || len(in) == 0: // push; ties are common
			e := &entry{idx: -1, ready: base.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)}
			h.push(e)
			in = append(in, e)
		case op < 7: // remove any
			e := in[rng.IntN(len(in))]
			h.remove(e)
			h.remove(e) // a second remove does nothing
			if e.idx != -1 {
				t.Fatalf("step %d: removed entry keeps index %d", step, e.idx)
			}
			in = slices.DeleteFunc(in, func(x *entry) bool { return x == e })
		default: // pop the earliest
			first := slices.MinFunc(in, func(a, b *entry) int { return a.ready.Compare(b.ready) })
			if h.peek().ready != first.ready {
				t.Fatalf("step %d: peek %v, want %v", step, h.peek().ready, first.ready)
			}
			e := h.pop()
			if !e.ready.Equal(first.ready) || e.idx != -1 {
				t.Fatalf("step %d: pop returned ready %v index %d, want ready %v", step, e.ready, e.idx, first.ready)
			}
			in = slices.DeleteFunc(in, func(x *entry) bool { return x == e })
		}
		check(step)
	}
	for len(in) > 0 {
		prev := h.pop()
		in = slices.DeleteFunc(in, func(x *entry) bool { return x == prev })
		if e := h.peek(); e != nil && e.ready.Before(prev.ready) {
			t.Fatalf("drain: %v after %v", e.ready, prev.ready)
		}
	}
	if h.peek() != nil || len(h) != 0 {
		t.Fatalf("drained heap holds %d", len(h))
	}
}
