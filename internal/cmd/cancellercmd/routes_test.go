package cancellercmd

import (
	"context"
	"log/slog"
	"testing"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/closerfile"
	"github.com/hourglass/hourglass/internal/outcome"
)

// TestRoutes: each kind of the closers file routes to its closer, with a
// limiter of its own only when the file gives it a rate_limit.
func TestRoutes(t *testing.T) {
	f, err := closerfile.Parse([]byte("closers:\n  limited:\n    log: {}\n    rate_limit: 50\n    rate_burst: 3\n  free:\n    log: {}\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := f.Open(context.Background(), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Stop() })
	rs := routes(cs)
	if len(rs) != 2 {
		t.Fatalf("%d routes, want 2: %v", len(rs), rs)
	}
	if l := rs["limited"].Limit; l == nil || l.Limit() != 50 || l.Burst() != 3 {
		t.Errorf("limited: limiter %v, want 50/s with a burst of 3", l)
	}
	if l := rs["free"].Limit; l != nil {
		t.Errorf("free: a limiter of %v/s, want none", l.Limit())
	}
	for kind, r := range rs {
		res, err := r.Closer.Close(context.Background(), closer.Task{ID: "1", Kind: kind, Attempt: 1})
		if err != nil || res.Outcome != outcome.Closed {
			t.Errorf("%s: close = %v, %v; want closed by the log closer", kind, res, err)
		}
	}
}
