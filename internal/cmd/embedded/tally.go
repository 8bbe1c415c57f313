package embedded

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/outcome"
)

// Tally collects outcome events: per task how often it was closed, and the
// lateness of each first close, as the canceller measured it.
type Tally struct {
	mu       sync.Mutex
	seen     map[string]int
	outcomes map[outcome.Outcome]int // outcome -> first events
	late     []int64                 // ms, first event per task
	fwd      []int64                 // ms, forward lateness of the first event per task
	lastFwd  int64                   // unix ms, latest forward among first events
	lastShut int64                   // unix ms, latest close among first events
	window   []int64                 // ms, first events since the last TakeWindow
	early    int
	dups     int
	invalid  int
	// OnEvent, if set, is called with every event, first=true the first
	// time the task is seen. Set it before the Tally is watched.
	OnEvent func(ev outcome.Event, first bool)
	// lateSample keeps the first events later than lateSampleMs, to show
	// where lateness comes from.
	lateSample []outcome.Event
}

const lateSampleMs = 100

// NewTally returns an empty Tally.
func NewTally() *Tally {
	return &Tally{seen: make(map[string]int), outcomes: make(map[outcome.Outcome]int), lateSample: make([]outcome.Event, 0, 10)}
}

func (t *Tally) add(ev outcome.Event) {
	t.mu.Lock()
	t.seen[ev.TaskID]++
	first := t.seen[ev.TaskID] == 1
	switch {
	case first && ev.Outcome == outcome.Cancelled:
		// Dropped by the router, never closed: no lateness of a close.
		t.outcomes[ev.Outcome]++
	case first:
		t.outcomes[ev.Outcome]++
		t.late = append(t.late, ev.LatenessMs)
		if ev.ForwardedMs > 0 {
			t.fwd = append(t.fwd, ev.ForwardedMs-ev.DueMs)
		}
		t.lastFwd, t.lastShut = max(t.lastFwd, ev.ForwardedMs), max(t.lastShut, ev.ClosedMs)
		t.window = append(t.window, ev.LatenessMs)
		if ev.LatenessMs > lateSampleMs && len(t.lateSample) < cap(t.lateSample) {
			t.lateSample = append(t.lateSample, ev)
		}
	default:
		t.dups++
	}
	if ev.ClosedMs < ev.DueMs || ev.ForwardedMs > 0 && ev.ForwardedMs < ev.DueMs {
		t.early++
	}
	fn := t.OnEvent
	t.mu.Unlock()
	if fn != nil {
		fn(ev, first)
	}
}

// GoWatch runs watchOutcomes in a goroutine and returns the function that
// stops it and waits for it.
func GoWatch(ctx context.Context, opts []kgo.Opt, topic string, t *Tally) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := watchOutcomes(ctx, opts, topic, t); err != nil {
			slog.Error("watch outcomes", "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

// watchOutcomes consumes the outcomes topic from the start into t until ctx
// is canceled. It reads committed events only (kafka.ReaderOpts); a batch
// too large to decompress is skipped and logged.
func watchOutcomes(ctx context.Context, opts []kgo.Opt, topic string, t *Tally) error {
	opts = append(slices.Clip(opts), kafka.ReaderOpts(0)...)
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fs.EachError(func(topic string, p int32, err error) {
			if big := kafka.SkipBatch(cl, err); big != nil {
				slog.Warn("watch outcomes: skipped a batch", "topic", topic, "partition", p, "err", kafka.SkippedBatch(big))
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			ev, err := outcome.Unmarshal(r.Value)
			if err != nil {
				t.mu.Lock()
				t.invalid++
				t.mu.Unlock()
				return
			}
			t.add(ev)
		})
	}
}

// Snapshot is a consistent view of a Tally.
type Snapshot struct {
	Tasks, Duplicates, Early int
	Outcomes                 map[outcome.Outcome]int
	// Late is the lateness of the first close of each task; ForwardLate
	// that of its forward by the router (tasks whose event has a forward
	// time).
	Late, ForwardLate Percentiles
	// LastForwardMs and LastCloseMs are the latest forward and close
	// among the first events, unix ms; 0 before any.
	LastForwardMs, LastCloseMs int64
}

// Percentiles are nearest-rank percentiles of lateness in milliseconds.
type Percentiles struct {
	P50  int64 `json:"p50"`
	P90  int64 `json:"p90"`
	P99  int64 `json:"p99"`
	P999 int64 `json:"p999"`
	Max  int64 `json:"max"`
}

// TakeWindow returns the Percentiles and the count of the first closes
// recorded since the last call.
func (t *Tally) TakeWindow() (Percentiles, int) {
	t.mu.Lock()
	w := t.window
	t.window = nil
	t.mu.Unlock()
	return PercentilesOf(w), len(w)
}

// LateSample returns the first few first events later than 100 ms, to show
// where lateness comes from.
func (t *Tally) LateSample() []outcome.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.lateSample)
}

// Snapshot returns the counts and the lateness so far.
func (t *Tally) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Snapshot{Tasks: len(t.seen), Duplicates: t.dups, Early: t.early, Outcomes: make(map[outcome.Outcome]int, len(t.outcomes))}
	for k, v := range t.outcomes {
		s.Outcomes[k] = v
	}
	s.Late, s.ForwardLate = PercentilesOf(t.late), PercentilesOf(t.fwd)
	s.LastForwardMs, s.LastCloseMs = t.lastFwd, t.lastShut
	return s
}

// PercentilesOf returns nearest-rank Percentiles of vs (which it sorts):
// the one rule of the demo, the bench and the load test's verify.
func PercentilesOf(vs []int64) Percentiles {
	if len(vs) == 0 {
		return Percentiles{}
	}
	slices.Sort(vs)
	at := func(q float64) int64 {
		i := int(math.Ceil(q*float64(len(vs)))) - 1
		return vs[max(0, min(i, len(vs)-1))]
	}
	return Percentiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), P999: at(0.999), Max: vs[len(vs)-1]}
}
