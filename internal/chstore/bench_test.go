package chstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

// batch returns n events of cancel records from offset first on, closed a
// millisecond apart from t0.
func batch(first, n int) []outcome.Event {
	evs := make([]outcome.Event, n)
	for i := range evs {
		off := first + i
		closed := t0.UnixMilli() + int64(off)
		evs[i] = outcome.Event{V: outcome.Version, TaskID: fmt.Sprint("order-", off), Kind: "order-timeout", Outcome: "closed",
			Attempt: 1, Hops: 2, Path: "30m,5m", ScheduledMs: closed - 3_600_000, DueMs: closed - int64(off%997), DeadlineMs: closed - int64(off%997),
			ForwardedMs: closed - 5, ClosedMs: closed, LatenessMs: int64(off % 997), Instance: "canceller-0",
			Topic: "hourglass.cancel", Partition: int32(off % 6), Offset: int64(off)}
	}
	return evs
}

// BenchmarkInsert inserts batches of 5000 events (the recorder's default).
func BenchmarkInsert(b *testing.B) {
	s := chtest.Open(b)
	ctx := context.Background()
	const rows = 5000
	evs := batch(0, rows)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := s.Insert(ctx, evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkReportQueries runs the queries of a report over 200 000
// attempts (with 1% replayed).
func BenchmarkReportQueries(b *testing.B) {
	s := chtest.Open(b)
	ctx := context.Background()
	const n = 200_000
	for first := 0; first < n; first += 10_000 {
		if err := s.Insert(ctx, batch(first, 10_000)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Insert(ctx, batch(0, n/100)); err != nil {
		b.Fatal(err)
	}
	w := chstore.Window{From: t0, To: t0.Add(time.Hour)}
	b.ResetTimer()
	for b.Loop() {
		t, err := s.Totals(ctx, w, time.Second)
		if err != nil || t.Attempts != n {
			b.Fatalf("totals %+v, %v; want %d attempts", t, err, n)
		}
		if _, err := s.Lateness(ctx, w); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Timeline(ctx, w, time.Minute); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Late(ctx, w, time.Millisecond, 20); err != nil {
			b.Fatal(err)
		}
	}
}
