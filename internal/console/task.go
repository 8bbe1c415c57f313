package console

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
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
	Attempts  []chstore.Attempt
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
	p.Attempts = t.Attempts
	p.Deadlines = taskstatus.Deadlines(taskstatus.FromIndex(t, s.cfg.Prefix), now)
	for _, n := range []int{len(t.Deadlines), len(t.Cancels), len(t.DeadLetters), len(t.Attempts)} {
		p.Truncated = p.Truncated || n >= s.cfg.MaxRows
	}
	for _, d := range t.Deadlines {
		detail := "kind " + cmp.Or(d.Kind, "(default)") + ", target " + cmp.Or(d.Target, "(default)")
		p.Events = append(p.Events, event{AtMs: cmp.Or(d.ScheduledMs, d.RecordMs), What: "scheduled", Class: "scheduled", DueMs: d.DueMs,
			Detail: detail, Where: where(d.Topic, d.Partition, d.Offset)})
	}
	for _, c := range t.Cancels {
		e := event{AtMs: c.AtMs, What: "cancelled", Class: "cancel warn", DueMs: c.DueMs, Where: where(c.Topic, c.Partition, c.Offset),
			Detail: "every deadline scheduled until then"}
		switch {
		case c.Withdrawn:
			e.What, e.Detail, e.Class = "cancellation withdrawn", "deadlines not dropped yet fire again", "cancel"
		case c.DueMs != 0:
			e.Detail = "the deadline due then"
		}
		p.Events = append(p.Events, e)
	}
	for _, d := range t.DeadLetters {
		p.Events = append(p.Events, event{AtMs: d.DeadMs, What: "dead-lettered", Class: "bad", Detail: d.Reason + " from " + d.Source,
			Where: where(d.Topic, d.Partition, d.Offset)})
	}
	for _, a := range t.Attempts {
		detail := string(a.Outcome)
		if a.Detail != "" {
			detail += ": " + a.Detail
		}
		if a.Error != "" {
			detail += " (" + a.Error + ")"
		}
		p.Events = append(p.Events, event{AtMs: a.ClosedMs, What: "close attempt " + itoa(a.Attempt), Class: "attempt " + outcomeClass(string(a.Outcome)),
			DueMs: cmp.Or(a.DeadlineMs, a.DueMs), Detail: detail, Where: where(a.Topic, a.Partition, a.Offset)})
	}
	slices.SortStableFunc(p.Events, func(a, b event) int { return cmp.Compare(a.AtMs, b.AtMs) })
	return p
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
