package chstore_test

import (
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

// TestTaskAttempts: the attempts of one task, each once with its first
// row, oldest first, from the given time on.
func TestTaskAttempts(t *testing.T) {
	ctx := ctxT(t)
	s := chtest.Open(t)
	record(t, s, seed())
	tests := []struct {
		id    string
		from  time.Time
		limit int
		want  []string // outcome of each attempt
		dups  []int64
	}{
		{"a1", t0.Add(-time.Hour), 10, []string{"closed"}, []int64{2}},             // the replay is the same attempt
		{"a2", t0.Add(-time.Hour), 10, []string{"closed"}, []int64{2}},             // inserted twice
		{"b2", t0.Add(-time.Hour), 10, []string{"retry", "failed"}, []int64{1, 1}}, // two attempts, oldest first
		{"b2", t0.Add(-time.Hour), 1, []string{"retry"}, []int64{1}},
		{"b2", t0.Add(45 * time.Second), 10, []string{"failed"}, []int64{1}},
		{"nobody", t0.Add(-time.Hour), 10, nil, nil},
		{"a1", t0.Add(-time.Hour), 0, nil, nil},
	}
	for _, tt := range tests {
		got, err := s.TaskAttempts(ctx, tt.id, tt.from, tt.limit)
		if err != nil {
			t.Fatalf("%s: %v", tt.id, err)
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s from %v limit %d: %d attempts %+v, want %v", tt.id, tt.from, tt.limit, len(got), got, tt.want)
			continue
		}
		for i, a := range got {
			if string(a.Outcome) != tt.want[i] || a.Copies != tt.dups[i] || a.TaskID != tt.id {
				t.Errorf("%s attempt %d: %s %s with %d rows, want %s with %d", tt.id, i, a.TaskID, a.Outcome, a.Copies, tt.want[i], tt.dups[i])
			}
		}
	}
}

// record inserts events into both outcome tables, as the recorder does.
func record(t *testing.T, s *chstore.Store, events []outcome.Event) {
	t.Helper()
	ctx := ctxT(t)
	if err := s.Insert(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertByTask(ctx, events); err != nil {
		t.Fatal(err)
	}
}
