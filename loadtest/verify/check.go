package verify

import (
	"fmt"
	"time"

	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/loadtest/manifest"
)

// maxExamples bounds the task ids a Report lists per problem.
const maxExamples = 10

// Report is the verdict on one run: the manifest joined with the outcome
// events of its tasks.
type Report struct {
	RunID string `json:"run_id"`
	// Scheduled is the tasks in the manifest (acknowledged by the broker);
	// Paid of them were paid before they were produced.
	Scheduled int `json:"scheduled"`
	Paid      int `json:"paid"`
	// Final is the tasks with at least one final outcome (closed,
	// already_closed, skipped, not_found, failed); Outcomes counts each
	// task's first final outcome.
	Final    int                     `json:"final"`
	Outcomes map[outcome.Outcome]int `json:"outcomes"`
	// Closed is the tasks whose first final outcome is closed.
	Closed int `json:"closed"`
	// SkippedPaid is the tasks whose first final outcome is skipped with
	// detail PAID.
	SkippedPaid int `json:"skipped_paid"`
	// Lost is the tasks without a final outcome.
	Lost int `json:"lost"`
	// Duplicates is the tasks with more than one final outcome.
	Duplicates int `json:"duplicates"`
	// Early is the tasks with a final outcome whose closed_ms is before
	// the task's due time.
	Early int `json:"early"`
	// WrongOutcome is the paid tasks whose first final outcome is not
	// skipped (PAID), and the unpaid tasks whose first final outcome is
	// skipped or failed.
	WrongOutcome int `json:"wrong_outcome"`
	// Retries is the retry events of the run's tasks (not final).
	Retries int `json:"retries"`
	// Unexpected is the events of task ids with the run's prefix that the
	// manifest does not list (a produce that failed after the broker
	// wrote it, or a manifest cut short).
	Unexpected int `json:"unexpected"`
	// Invalid is the records of the outcomes topic that are not outcome
	// events.
	Invalid int `json:"invalid"`
	// LatenessMs is over each task's first final outcome: closed_ms minus
	// the later of due_ms and scheduled_ms (a task due in the past cannot
	// close before it was scheduled).
	LatenessMs Percentiles `json:"lateness_ms"`
	// ByShape splits the tasks by the delay shape they were drawn with.
	ByShape map[string]*ShapeReport `json:"by_shape,omitempty"`
	// Examples lists up to 10 task ids per problem: lost, early,
	// wrong_outcome, duplicates.
	Examples map[string][]string `json:"examples,omitempty"`
	// OK is true when nothing was lost, closed early or given the wrong
	// outcome.
	OK bool `json:"ok"`
	// OverBounds says which lateness bound (--max-p99, --max-lateness) the
	// run broke; a run that broke one is not OK.
	OverBounds []string `json:"over_bounds,omitempty"`
}

// ShapeReport is a Report's numbers for one delay shape.
type ShapeReport struct {
	Scheduled  int         `json:"scheduled"`
	Lost       int         `json:"lost"`
	Early      int         `json:"early"`
	LatenessMs Percentiles `json:"lateness_ms"`
}

// Percentiles are the nearest-rank percentiles of a lateness in
// milliseconds (embedded.PercentilesOf, as the bench reports them) and the
// count of samples; all zero without samples.
type Percentiles struct {
	N int `json:"n"`
	embedded.Percentiles
}

// percentilesOf returns the Percentiles of vs, which it sorts.
func percentilesOf(vs []int64) Percentiles {
	return Percentiles{N: len(vs), Percentiles: embedded.PercentilesOf(vs)}
}

// task is what Check learns about one manifest entry.
type task struct {
	e      manifest.Entry
	first  *outcome.Event // first final event
	finals int
	early  bool
}

// Check joins the manifest with the outcome events (in topic order; events
// of other runs are ignored) and returns the report. invalid is the count of
// undecodable records, passed through to the report.
func Check(m *manifest.Manifest, events []outcome.Event, invalid int) Report {
	r := Report{RunID: m.Header.RunID, Scheduled: len(m.Entries), Outcomes: map[outcome.Outcome]int{}, Invalid: invalid,
		ByShape: map[string]*ShapeReport{}, Examples: map[string][]string{}}
	tasks := make(map[string]*task, len(m.Entries))
	for _, e := range m.Entries {
		tasks[e.ID] = &task{e: e}
		if e.Paid {
			r.Paid++
		}
	}
	r.follow(tasks, events, m.Header.IDPrefix)
	r.judge(m.Entries, tasks)
	if len(r.ByShape) == 1 {
		if _, unnamed := r.ByShape[""]; unnamed {
			r.ByShape = nil
		}
	}
	if len(r.Examples) == 0 {
		r.Examples = nil
	}
	r.OK = r.Lost == 0 && r.Early == 0 && r.WrongOutcome == 0
	return r
}

// follow records events, in topic order, on the tasks they are about:
// retries are counted, the first final event kept, the final events
// counted and the early ones flagged. An event about no task of the run
// counts as Unexpected when its task id has the run's idPrefix.
func (r *Report) follow(tasks map[string]*task, events []outcome.Event, idPrefix string) {
	for i := range events {
		ev := &events[i]
		t, ok := tasks[ev.TaskID]
		if !ok {
			if idPrefix != "" && len(ev.TaskID) >= len(idPrefix) && ev.TaskID[:len(idPrefix)] == idPrefix {
				r.Unexpected++
			}
			continue
		}
		if ev.Outcome == outcome.Retry {
			r.Retries++
			continue
		}
		if !ev.Outcome.Ends() {
			continue
		}
		t.finals++
		if t.first == nil {
			t.first = ev
		}
		if ev.ClosedMs < t.e.DueMs {
			t.early = true
		}
	}
}

// judge counts, for each entry in manifest order (so examples are
// stable), what became of its task: lost, closed, duplicated, early, with
// the wrong outcome; and the lateness percentiles, overall and by shape.
func (r *Report) judge(entries []manifest.Entry, tasks map[string]*task) {
	var late []int64
	lateByShape := map[string][]int64{}
	for _, e := range entries {
		t := tasks[e.ID]
		sr := r.ByShape[e.Shape]
		if sr == nil {
			sr = &ShapeReport{}
			r.ByShape[e.Shape] = sr
		}
		sr.Scheduled++
		if t.first == nil {
			r.Lost++
			sr.Lost++
			r.example("lost", e.ID)
			continue
		}
		r.judgeFinal(e, t, sr)
		l := LatenessMs(t.first, e.DueMs, e.ScheduledMs)
		late = append(late, l)
		lateByShape[e.Shape] = append(lateByShape[e.Shape], l)
	}
	r.LatenessMs = percentilesOf(late)
	for s, vs := range lateByShape {
		r.ByShape[s].LatenessMs = percentilesOf(vs)
	}
}

// judgeFinal counts the first final outcome of the task t of entry e, in
// r and in its shape's sr.
func (r *Report) judgeFinal(e manifest.Entry, t *task, sr *ShapeReport) {
	r.Final++
	ev := t.first
	r.Outcomes[ev.Outcome]++
	skippedPaid := ev.Outcome == outcome.Skipped && ev.Detail == "PAID"
	switch {
	case ev.Outcome == outcome.Closed:
		r.Closed++
	case skippedPaid:
		r.SkippedPaid++
	}
	if t.finals > 1 {
		r.Duplicates++
		r.example("duplicates", e.ID)
	}
	if t.early {
		r.Early++
		sr.Early++
		r.example("early", e.ID)
	}
	if WrongOutcome(e.Paid, ev) {
		r.WrongOutcome++
		r.example("wrong_outcome", e.ID)
	}
}

// example lists id under the problem kind, up to maxExamples.
func (r *Report) example(kind, id string) {
	if len(r.Examples[kind]) < maxExamples {
		r.Examples[kind] = append(r.Examples[kind], id)
	}
}

// bound fails r when its lateness p99 or maximum is above maxP99 or
// maxLate (zero: no bound), saying so in r.OverBounds.
func (r *Report) bound(maxP99, maxLate time.Duration) {
	if maxP99 > 0 && r.LatenessMs.P99 > maxP99.Milliseconds() {
		r.OverBounds = append(r.OverBounds, fmt.Sprintf("lateness p99 %d ms above %v", r.LatenessMs.P99, maxP99))
	}
	if maxLate > 0 && r.LatenessMs.Max > maxLate.Milliseconds() {
		r.OverBounds = append(r.OverBounds, fmt.Sprintf("lateness max %d ms above %v", r.LatenessMs.Max, maxLate))
	}
	r.OK = r.OK && len(r.OverBounds) == 0
}
