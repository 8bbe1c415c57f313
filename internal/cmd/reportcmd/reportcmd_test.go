package reportcmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/cmd/reportcmd"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/report"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
)

func TestMain(m *testing.M) { chtest.Main(m, "reportcmd", nil) }

// TestForecastFlag runs `hourglass report` on a known schedule: a burst of
// deadlines due at one instant after --to is the forecast's peak minute in
// the JSON report, with its count; closes lower it; --forecast bounds the
// window, and --forecast 0 leaves the forecast out.
func TestForecastFlag(t *testing.T) {
	cfg := chtest.Config(t)
	s := chtest.OpenConfig(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	to := time.Date(2024, 5, 14, 12, 0, 0, 0, time.UTC)
	at := to.Add(90*time.Minute + 15*time.Second) // the burst's instant, inside the minute of 13:30
	const burst = 250
	var rows chstore.IndexRows
	for i := range burst {
		rows.Deadlines = append(rows.Deadlines, chstore.Deadline{TaskID: fmt.Sprint("order-", i), Kind: "order-timeout",
			DueMs: at.UnixMilli(), ScheduledMs: to.UnixMilli(), RecordMs: to.UnixMilli(), Topic: "hourglass.delay.1h", Offset: int64(i)})
	}
	if err := s.InsertIndex(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) *report.Report {
		t.Helper()
		args = append([]string{"--clickhouse-addr", cfg.Addr, "--clickhouse-database", cfg.Database,
			"--from", to.Add(-time.Hour).Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--format", "json"}, args...)
		stdout, stderr, err := cmdtest.Run(t, reportcmd.Run, args...)
		if err != nil {
			t.Fatalf("report %v: %v\n%s", args, err, stderr)
		}
		var r report.Report
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("report JSON: %v\n%s", err, stdout)
		}
		return &r
	}
	minute := at.Truncate(time.Minute)
	f := run().Forecast
	if f == nil || f.Peak != (report.Minute{Start: minute, Count: burst}) || f.Total != burst || !f.To.Equal(to.Add(6*time.Hour)) {
		t.Fatalf("forecast %+v, want the burst of %d at %v, up to 6h after --to", f, burst, minute)
	}

	var evs []outcome.Event
	for i := range 100 {
		evs = append(evs, outcome.Event{V: outcome.Version, TaskID: fmt.Sprint("order-", i), Kind: "order-timeout", Outcome: outcome.Closed,
			Attempt: 1, DueMs: at.UnixMilli(), DeadlineMs: at.UnixMilli(), ClosedMs: at.UnixMilli() + 20, Topic: "hourglass.cancel", Offset: int64(i)})
	}
	if err := s.Insert(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if f := run().Forecast; f == nil || len(f.Minutes) != 1 || f.Minutes[0] != (report.Minute{Start: minute, Count: burst - 100}) {
		t.Errorf("after 100 closes: forecast %+v, want %d due at %v", f, burst-100, minute)
	}
	if f := run("--forecast", "1h").Forecast; f == nil || f.Total != 0 || !f.To.Equal(to.Add(time.Hour)) {
		t.Errorf("--forecast 1h: %+v, want nothing due up to an hour after --to", f)
	}
	if f := run("--forecast", "0").Forecast; f != nil {
		t.Errorf("--forecast 0: %+v, want no forecast", f)
	}
	stdout, _, err := cmdtest.Run(t, reportcmd.Run, "--clickhouse-addr", cfg.Addr, "--clickhouse-database", cfg.Database,
		"--from", to.Add(-time.Hour).Format(time.RFC3339), "--to", to.Format(time.RFC3339))
	if err != nil || !strings.Contains(stdout, "total 150, overdue 0; peak 150 due in the minute of 2024-05-14 13:30") {
		t.Errorf("text report (%v) has no forecast line:\n%s", err, stdout)
	}
}
