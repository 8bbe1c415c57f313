package statuscmd

import (
	"container/heap"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// maxEvents bounds the records of the task that status keeps: the latest
// by time, a timeline longer than anyone reads, and a bound on memory
// whatever was written under the task's key. A variable for tests.
var maxEvents = 1000

// kept is what status keeps of the task's records as it reads them: the
// events it prints, copied out of the records (a record holds its whole
// fetched batch), at most maxEvents of them, the latest by time; how many
// older ones it left out; and the targets the delay records name that the
// first read did not cover, at most maxNamedTargets.
type kept struct {
	events  eventHeap
	dropped int
	targets []string
}

// add keeps the event of rec, found in a partition of p's topic, and notes
// the target a delay record names unless read already holds its topic.
func (k *kept) add(rec *kgo.Record, p *PartRead, prefix string, read []*PartRead) {
	if p.Role == taskstatus.RoleDelay {
		k.name(rec, read)
	}
	e := taskstatus.Decode(rec, p.Role, prefix)
	switch {
	case len(k.events) < maxEvents:
		heap.Push(&k.events, e)
	case e.TimeMs > k.events[0].TimeMs:
		k.events[0] = e
		heap.Fix(&k.events, 0)
		k.dropped++
	default:
		k.dropped++
	}
}

// name notes the target rec names, if it is valid, new, not in read and
// there is room.
func (k *kept) name(rec *kgo.Record, read []*PartRead) {
	v, ok := tiers.Header(rec.Headers, tiers.HeaderTarget)
	if !ok || len(k.targets) >= maxNamedTargets || tiers.ValidTopic(string(v)) != nil ||
		slices.ContainsFunc(read, func(p *PartRead) bool { return p.Topic == string(v) }) ||
		slices.Contains(k.targets, string(v)) {
		return
	}
	k.targets = append(k.targets, string(v))
}

// eventHeap is a min-heap of events by time: its first is the one to
// drop for a later one.
type eventHeap []taskstatus.Event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].TimeMs < h[j].TimeMs }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(taskstatus.Event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
