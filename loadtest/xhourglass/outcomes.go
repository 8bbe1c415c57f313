package xhourglass

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/loadtest/verify"
)

// outcomesLookBack is how far before the producer started the outcomes
// watcher starts reading (by record timestamp), for clocks a little apart.
const outcomesLookBack = time.Minute

// OutcomeStats are what the outcomes watcher judged of a producer's tasks:
// as the verify command judges them, from each task's first final outcome.
type OutcomeStats struct {
	// Topic is the outcomes topic read.
	Topic string `json:"topic"`
	// Final is the tasks with a final outcome (closed, already_closed,
	// skipped, not_found, failed).
	Final int64 `json:"final"`
	// Pending is the produced tasks without a final outcome yet; Close
	// counts those left at the end of its wait as Lost.
	Pending int64 `json:"pending"`
	// Lost is the tasks without a final outcome at the end of Close's
	// wait.
	Lost int64 `json:"lost"`
	// Early is the tasks whose first final outcome closed before the due
	// time.
	Early int64 `json:"early"`
	// WrongOutcome is the paid tasks whose first final outcome is not
	// skipped (PAID), and the unpaid tasks whose first final outcome is
	// skipped or failed.
	WrongOutcome int64 `json:"wrongOutcome"`
	// MaxLatenessMs is the largest lateness seen.
	MaxLatenessMs int64 `json:"maxLatenessMs"`
	// Error is the error that stopped the watcher, if one did.
	Error string `json:"error,omitempty"`
}

// OutcomeDelta is what the outcomes watcher judged since the previous
// take: the k6 metrics' samples.
type OutcomeDelta struct {
	// Lateness is, for each task given its first final outcome, closed_ms
	// minus the later of its due time and the time it was produced (the
	// verify command's lateness).
	Lateness []time.Duration
	// Final counts the first final outcomes by outcome.
	Final map[outcome.Outcome]int64
	// Early and WrongOutcome count tasks as OutcomeStats does.
	Early, WrongOutcome int64
}

// watched is a task the watcher waits for: added when it is handed to the
// Kafka client, produced when the broker acknowledged it, removed at its
// first final outcome or when its produce failed.
type watched struct {
	dueMs, producedMs int64
	paid, produced    bool
	// first is a final outcome that arrived before the acknowledgement.
	first *outcome.Event
}

// watcher reads the outcomes topic while the run goes on and judges the
// tasks of one producer as their final outcomes arrive.
type watcher struct {
	cl       *kgo.Client
	topic    string
	idPrefix string
	cancel   context.CancelFunc
	done     chan struct{}

	mu    sync.Mutex
	tasks map[string]*watched
	delta OutcomeDelta
	total OutcomeStats
	err   error
}

// newWatcher returns a watcher of topic for the task ids starting with
// idPrefix, reading from the records written outcomesLookBack before
// start; run starts it.
func newWatcher(opts []kgo.Opt, topic, idPrefix string, start time.Time) (*watcher, error) {
	cl, err := kgo.NewClient(append(append(opts, kafka.ReaderOpts(0)...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(start.Add(-outcomesLookBack).UnixMilli())),
		kgo.FetchMaxWait(100*time.Millisecond),
	)...)
	if err != nil {
		return nil, fmt.Errorf("outcomes %s: kafka client: %w", topic, err)
	}
	return &watcher{cl: cl, topic: topic, idPrefix: idPrefix, done: make(chan struct{}),
		tasks: map[string]*watched{}, delta: OutcomeDelta{Final: map[outcome.Outcome]int64{}}, total: OutcomeStats{Topic: topic}}, nil
}

// run polls until stop; a fetch error other than a missing topic (the
// canceller may not have created it yet) stops it and is kept.
func (w *watcher) run() {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			fs := w.cl.PollFetches(ctx)
			var ferr error
			fs.EachError(func(t string, p int32, err error) {
				if ferr == nil && !kafka.Deferred(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, kerr.UnknownTopicOrPartition) {
					ferr = fmt.Errorf("outcomes %s[%d]: fetch: %w", t, p, err)
				}
			})
			if ferr != nil {
				w.mu.Lock()
				w.err = ferr
				w.mu.Unlock()
				return
			}
			fs.EachRecord(w.record)
		}
	}()
}

// stop stops polling and closes the client.
func (w *watcher) stop() {
	if w.cancel != nil {
		w.cancel()
		<-w.done
	}
	w.cl.Close()
}

// record judges r when it is a final outcome of one of the watcher's
// tasks; other records are ignored.
func (w *watcher) record(r *kgo.Record) {
	if !strings.HasPrefix(string(r.Key), w.idPrefix) {
		return
	}
	ev, err := outcome.Unmarshal(r.Value)
	if err != nil || !ev.Outcome.Ends() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.tasks[ev.TaskID]
	switch {
	case !ok: // a duplicate, or a task of another producer of the run
	case !t.produced:
		if t.first == nil {
			t.first = &ev
		}
	default:
		w.judge(ev.TaskID, t, &ev)
	}
}

// add watches task id, due at due, as it is handed to the Kafka client.
func (w *watcher) add(id string, due time.Time, paid bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tasks[id] = &watched{dueMs: due.UnixMilli(), paid: paid}
}

// produced records the acknowledgement of task id at producedMs (the
// record's timestamp), or its failure when !ok.
func (w *watcher) produced(id string, producedMs int64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.tasks[id]
	switch {
	case t == nil:
	case !ok:
		delete(w.tasks, id)
	default:
		t.produced, t.producedMs = true, producedMs
		w.total.Pending++
		if t.first != nil {
			w.judge(id, t, t.first)
		}
	}
}

// judge records ev, the first final outcome of the produced task t, and
// stops watching it. The caller holds w.mu.
func (w *watcher) judge(id string, t *watched, ev *outcome.Event) {
	delete(w.tasks, id)
	w.total.Pending--
	w.total.Final++
	w.delta.Final[ev.Outcome]++
	late := verify.LatenessMs(ev, t.dueMs, t.producedMs)
	w.delta.Lateness = append(w.delta.Lateness, time.Duration(late)*time.Millisecond)
	w.total.MaxLatenessMs = max(w.total.MaxLatenessMs, late)
	if ev.ClosedMs < t.dueMs {
		w.delta.Early++
		w.total.Early++
	}
	if verify.WrongOutcome(t.paid, ev) {
		w.delta.WrongOutcome++
		w.total.WrongOutcome++
	}
}

// take returns what was judged since the previous take.
func (w *watcher) take() OutcomeDelta {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.delta
	w.delta = OutcomeDelta{Final: map[outcome.Outcome]int64{}}
	return d
}

// stats returns the totals.
func (w *watcher) stats() OutcomeStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.total
	if w.err != nil {
		s.Error = w.err.Error()
	}
	return s
}

// await waits until no produced task lacks a final outcome, until, ctx
// ends or the watcher stops, calling progress (when not nil) every
// reportEvery. It then counts the tasks still pending as lost and returns
// the totals.
func (w *watcher) await(ctx context.Context, until time.Time, progress func()) OutcomeStats {
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	for {
		s := w.stats()
		if s.Pending == 0 || s.Error != "" || !time.Now().Before(until) {
			break
		}
		select {
		case <-ctx.Done():
		case <-w.done:
		case <-t.C:
			if progress != nil {
				progress()
			}
			continue
		}
		break
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total.Lost += w.total.Pending
	w.total.Pending = 0
	clear(w.tasks)
	s := w.total
	if w.err != nil {
		s.Error = w.err.Error()
	}
	return s
}
