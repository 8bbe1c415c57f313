package console

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// taskPage is the data of a task's page.
type taskPage struct {
	ID       string
	Searched bool
	Problem  string // why the id was not looked up
	Errors   []string
	Events   []event
	// Deadlines says where each deadline of the task is, as hourglass
	// status --clickhouse does.
	Deadlines []taskstatus.Deadline
	Truncated bool // a list stopped at Config.MaxRows
	// DefaultAt is the reschedule form's suggested due time.
	DefaultAt string
	// Result is what an action just did to the task.
	Result *actionResult
}

// event is one line of a task's timeline.
type event struct {
	AtMs   int64
	What   string // scheduled, cancelled, attempt, ...
	Class  string // the CSS class of What
	DueMs  int64
	Detail string
	Where  string // topic[partition]@offset
}

// task is the lookup form and, with an id, the task's timeline.
func (s *Server) task(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	p := s.lookup(r.Context(), id)
	s.render(w, r, "task", "Task", p)
}

// lookup returns the page of task id.
func (s *Server) lookup(ctx context.Context, id string) *taskPage {
	now := s.clock.Now()
	p := &taskPage{ID: id, DefaultAt: now.Add(30 * time.Minute).UTC().Format(time.RFC3339)}
	switch {
	case id == "":
		return p
	case len(id) > tiers.DefaultMaxKeyBytes:
		p.Problem = "A task id is at most 1,024 bytes."
		return p
	}
	p.Searched = true
	t, err := s.store.Task(ctx, id, s.cfg.MaxRows)
	if err != nil {
		p.Errors = append(p.Errors, err.Error())
		return p
	}
	for _, n := range []int{len(t.Deadlines), len(t.Cancels), len(t.DeadLetters), len(t.Attempts)} {
		p.Truncated = p.Truncated || n >= s.cfg.MaxRows
	}
	events := taskstatus.FromIndex(t, s.cfg.Prefix)
	p.Deadlines = taskstatus.Deadlines(events, now)
	for i := range events {
		p.Events = append(p.Events, timelineEvent(&events[i]))
	}
	slices.SortStableFunc(p.Events, func(a, b event) int { return cmp.Compare(a.AtMs, b.AtMs) })
	return p
}

// timelineEvent is the line of the timeline of e, an event of the index.
func timelineEvent(e *taskstatus.Event) event {
	where := e.Where()
	switch e.Type {
	case taskstatus.TypeDelay:
		return event{AtMs: cmp.Or(e.ScheduledMs, e.TimeMs), What: "scheduled", Class: "scheduled", DueMs: e.DueMs,
			Detail: "kind " + cmp.Or(e.Kind, "(default)") + ", target " + cmp.Or(e.Target, "(default)"), Where: where}
	case taskstatus.TypeCancellation:
		ev := event{AtMs: e.TimeMs, What: "cancelled", Class: "cancel warn", DueMs: e.DueMs, Where: where,
			Detail: "every deadline scheduled until then"}
		switch {
		case e.Withdrawn:
			ev.What, ev.Detail, ev.Class = "cancellation withdrawn", "deadlines not dropped yet fire again", "cancel"
		case e.DueMs != 0:
			ev.Detail = "the deadline due then"
		}
		return ev
	case taskstatus.TypeDeadLetter:
		reason := e.Reason
		if e.Detail != "" {
			reason += ": " + e.Detail
		}
		return event{AtMs: e.TimeMs, What: "dead-lettered", Class: "bad", Detail: reason + " from " + e.Of, Where: where}
	default: // an outcome: a close attempt
		detail := e.Outcome
		if e.Detail != "" {
			detail += ": " + e.Detail
		}
		if e.Error != "" {
			detail += " (" + e.Error + ")"
		}
		return event{AtMs: e.TimeMs, What: "close attempt " + strconv.Itoa(e.Attempt), Class: "attempt " + outcomeClass(e.Outcome),
			DueMs: e.DeadlineMs, Detail: detail, Where: e.Of}
	}
}

// outcomeClass is the CSS class of an outcome: ok, warn or bad.
func outcomeClass(o string) string {
	switch {
	case o == "closed" || o == "already_closed" || o == "skipped":
		return "ok"
	case o == "failed" || strings.HasPrefix(o, "not_found"):
		return "bad"
	}
	return "warn"
}
