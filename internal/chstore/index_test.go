package chstore_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

// deadline is a deadline of task id, due at due and scheduled at sched,
// at offset off of a delay topic.
func deadline(id, kind, target string, sched, due time.Time, off int64) chstore.Deadline {
	return chstore.Deadline{TaskID: id, Kind: kind, Target: target, DueMs: due.UnixMilli(), ScheduledMs: sched.UnixMilli(),
		RecordMs: sched.UnixMilli(), Topic: "hourglass.delay.30m", Partition: int32(off % 3), Offset: off}
}

// ended is the outcome event of task id's deadline due at due: attempt
// 1 when the close was on time, a later one for a retry.
func ended(id string, o outcome.Outcome, due time.Time, attempt int, off int64) outcome.Event {
	closed := due.Add(time.Duration(attempt) * time.Second)
	return outcome.Event{V: 1, TaskID: id, Kind: "order-timeout", Outcome: o, Attempt: attempt, DueMs: closed.UnixMilli() - 10,
		DeadlineMs: due.UnixMilli(), ClosedMs: closed.UnixMilli(), Topic: "hourglass.cancel", Offset: off}
}

// TestTask: a lookup finds a task's deadlines, cancellations, dead letters
// and attempts, each record once however often it was inserted, and
// nothing of other tasks.
func TestTask(t *testing.T) {
	ctx := ctxT(t)
	s := chtest.Open(t)
	due := t0.Add(30 * time.Minute)
	rows := &chstore.IndexRows{
		Deadlines: []chstore.Deadline{
			deadline("k1", "order-timeout", "", t0, due, 1),
			deadline("k1", "order-timeout", "", t0.Add(time.Minute), due.Add(time.Hour), 2), // rescheduled
			deadline("k10", "order-timeout", "", t0, due, 3),                                // a longer id with the same prefix
		},
		Cancels: []chstore.Cancel{
			{TaskID: "k1", AtMs: t0.Add(30 * time.Second).UnixMilli(), Topic: "hourglass.cancellations", Offset: 7},
			{TaskID: "k1", AtMs: t0.Add(40 * time.Second).UnixMilli(), Withdrawn: true, Topic: "hourglass.cancellations", Offset: 9},
		},
		DeadLetters: []chstore.DeadLetter{{TaskID: "k1", Reason: "due_implausible: 1700000000", Source: "hourglass.delay.1m[0]@4",
			DeadMs: t0.UnixMilli(), Topic: "hourglass.dlq", Offset: 1}},
	}
	for range 2 { // a replayed batch
		if err := s.InsertIndex(ctx, rows); err != nil {
			t.Fatal(err)
		}
	}
	record(t, s, []outcome.Event{ended("k1", outcome.Closed, due, 1, 5), ended("k10", outcome.Closed, due, 1, 6)})
	got, err := s.Task(ctx, "k1", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Deadlines) != 2 || got.Deadlines[0].Offset != 1 || got.Deadlines[1].DueMs != due.Add(time.Hour).UnixMilli() {
		t.Errorf("deadlines %+v, want offsets 1 and 2, by due time", got.Deadlines)
	}
	if len(got.Cancels) != 2 || got.Cancels[1].Offset != 9 || !got.Cancels[1].Withdrawn || got.Cancels[0].Withdrawn {
		t.Errorf("cancellations %+v, want offset 7 then the withdrawal at 9", got.Cancels)
	}
	if len(got.DeadLetters) != 1 || got.DeadLetters[0].Reason != rows.DeadLetters[0].Reason {
		t.Errorf("dead letters %+v, want one", got.DeadLetters)
	}
	if len(got.Attempts) != 1 || got.Attempts[0].Outcome != outcome.Closed || got.Attempts[0].Offset != 5 {
		t.Errorf("attempts %+v, want the close at offset 5", got.Attempts)
	}
	if got, err := s.Task(ctx, "k1", 1); err != nil || len(got.Deadlines) != 1 || len(got.Cancels) != 1 || got.Cancels[0].Offset != 9 {
		t.Errorf("limit 1: %+v, %v; want the first deadline and the newest cancellation", got, err)
	}
	if got, err := s.Task(ctx, "nobody", 10); err != nil || len(got.Deadlines)+len(got.Cancels)+len(got.DeadLetters)+len(got.Attempts) != 0 {
		t.Errorf("unknown task: %+v, %v; want nothing", got, err)
	}
}

// TestForecast checks the forecast against a known schedule: a burst of
// deadlines due at one instant is counted in its minute, by kind and
// target, once however often it was inserted, without the deadlines a
// cancellation covers, and drops as outcomes end them.
func TestForecast(t *testing.T) {
	ctx := ctxT(t)
	s := chtest.Open(t)
	const burst = 500
	at := t0.Add(10 * time.Minute) // the burst's instant, a minute's start
	var rows chstore.IndexRows
	for i := range burst {
		rows.Deadlines = append(rows.Deadlines, deadline(fmt.Sprintf("b%d", i), "order-timeout", "", t0, at, int64(i)))
	}
	sms := at.Add(2*time.Minute + 30*time.Second)
	for i := range 3 {
		rows.Deadlines = append(rows.Deadlines, deadline(fmt.Sprintf("r%d", i), "reminder", "hourglass.sms", t0, sms, int64(burst+i)))
	}
	// Cancellations: c1 covers its deadline; c2's deadline was scheduled
	// after it (a reschedule); c3's names another due time; c4's was
	// withdrawn; c5's names this due time.
	for i, c := range []struct {
		id         string
		sched, cAt time.Time
		cDue       time.Time // zero: every deadline of the task
		withdrawn  bool
	}{
		{"c1", t0.Add(-time.Minute), t0, time.Time{}, false},
		{"c2", t0.Add(time.Second), t0, time.Time{}, false},
		{"c3", t0, t0, at.Add(time.Hour), false},
		{"c4", t0, t0, time.Time{}, true},
		{"c5", t0, t0, at, false},
	} {
		rows.Deadlines = append(rows.Deadlines, deadline(c.id, "order-timeout", "", c.sched, at, int64(1000+i)))
		cancel := chstore.Cancel{TaskID: c.id, AtMs: c.cAt.UnixMilli(), Withdrawn: c.withdrawn, Topic: "hourglass.cancellations", Offset: int64(i)}
		if !c.cDue.IsZero() {
			cancel.DueMs = c.cDue.UnixMilli()
		}
		rows.Cancels = append(rows.Cancels, cancel)
	}
	// The burst's first deadline scheduled twice (a producer's retry); one
	// outside the window.
	rows.Deadlines = append(rows.Deadlines, deadline("b0", "order-timeout", "", t0, at, 1999),
		deadline("late", "order-timeout", "", t0, t0.Add(2*time.Hour), 2000))
	for range 2 {
		if err := s.InsertIndex(ctx, &rows); err != nil {
			t.Fatal(err)
		}
	}
	forecast := func() []chstore.Due {
		t.Helper()
		got, err := s.Forecast(ctx, t0, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := []chstore.Due{
		{Minute: at, Kind: "order-timeout", Count: burst + 3}, // c2, c3, c4
		{Minute: at.Add(2 * time.Minute), Kind: "reminder", Target: "hourglass.sms", Count: 3},
	}
	if got := forecast(); !slices.Equal(got, want) {
		t.Fatalf("forecast %+v, want %+v", got, want)
	}

	// Outcomes end 200 of the burst: closes, a failure, a retry that
	// closed on its second attempt; a retry alone ends nothing. A dead
	// letter ends one more.
	var evs []outcome.Event
	for i := range 197 {
		evs = append(evs, ended(fmt.Sprintf("b%d", i), outcome.Closed, at, 1, int64(i)))
	}
	evs = append(evs,
		ended("b197", outcome.Failed, at, 1, 197),
		ended("b198", outcome.Retry, at, 1, 198), ended("b198", outcome.AlreadyClosed, at, 2, 1198),
		ended("b199", outcome.Cancelled, at, 1, 199),
		ended("b200", outcome.Retry, at, 1, 200),
		ended("r0", outcome.Closed, sms.Add(time.Hour), 1, 300), // another deadline of r0
	)
	if err := s.Insert(ctx, evs); err != nil {
		t.Fatal(err)
	}
	// A dead letter ends b201's deadline (no closer for it); one of b202
	// names another.
	dead := &chstore.IndexRows{DeadLetters: []chstore.DeadLetter{
		{TaskID: "b201", Reason: "close_failed: no closer", DeadlineMs: at.UnixMilli(), Topic: "hourglass.dlq"},
		{TaskID: "b202", Reason: "close_failed: no closer", DeadlineMs: at.Add(time.Hour).UnixMilli(), Topic: "hourglass.dlq", Offset: 1},
	}}
	if err := s.InsertIndex(ctx, dead); err != nil {
		t.Fatal(err)
	}
	want[0].Count -= 201
	if got := forecast(); !slices.Equal(got, want) {
		t.Errorf("after closes: forecast %+v, want %+v", got, want)
	}
	if _, err := s.Forecast(ctx, t0, t0.Add(32*24*time.Hour)); err == nil {
		t.Error("a forecast of 32 days: no error")
	}
}

// TestIndexMissing: against a schema without the index (version 1), a
// lookup and a forecast say that the migrations were not applied.
func TestIndexMissing(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, chtest.Config(t))
	if _, err := s.MigrateWith(ctx, chstore.Migrations()[:1]); err != nil {
		t.Fatal(err)
	}
	_, terr := s.Task(ctx, "k1", 10)
	_, ferr := s.Forecast(ctx, t0, t0.Add(time.Hour))
	for _, err := range []error{terr, ferr} {
		if err == nil || !strings.Contains(err.Error(), "hourglass recorder --migrate-only") {
			t.Errorf("error %v does not say to apply the migrations", err)
		}
	}
}
