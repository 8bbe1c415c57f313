package statuscmd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
)

// TestStatusClickHouse: with --clickhouse --scan, status marks the outcome
// events ClickHouse holds too and adds the attempts only ClickHouse holds;
// an unreachable ClickHouse leaves the status incomplete.
func TestStatusClickHouse(t *testing.T) {
	p := newPipeline(t, nil)
	cfg := chtest.Config(t)
	store := chtest.OpenConfig(t, cfg)
	now := time.Now().Truncate(time.Millisecond)
	f := p.forward(p.schedule("c", now.Add(-time.Hour), now.Add(-10*time.Minute)), now.Add(-10*time.Minute))
	o := p.outcome(f, outcome.Retry, now.Add(-10*time.Minute+time.Second), "timeout")
	ev, err := outcome.Unmarshal(o.Value)
	if err != nil {
		t.Fatal(err)
	}
	closed := ev // the next attempt, whose event is no longer in Kafka
	closed.Outcome, closed.Error, closed.Attempt, closed.Offset, closed.ClosedMs = outcome.Closed, "", 2, f.Offset+100, now.Add(-5*time.Minute).UnixMilli()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := store.Insert(ctx, []outcome.Event{ev, closed}); err != nil {
		t.Fatal(err)
	}
	if err := store.InsertByTask(ctx, []outcome.Event{ev, closed}); err != nil {
		t.Fatal(err)
	}
	chFlags := []string{"--clickhouse", "--scan", "--clickhouse-addr", cfg.Addr, "--clickhouse-database", cfg.Database}
	st, out := p.status("c", chFlags...)
	if st.CH == nil || st.CH.Rows != 2 || st.CH.Only != 1 || st.CH.Error != "" || !st.Complete {
		t.Fatalf("clickhouse %+v complete %v:\n%s", st.CH, st.Complete, out)
	}
	var marked, added int
	for _, e := range st.Events {
		if e.InClickHouse && e.Source == taskstatus.SourceKafka && e.Outcome == "retry" {
			marked++
		}
		if e.Source == taskstatus.SourceClickHouse && e.Outcome == "closed" && e.Attempt == 2 && e.Partition == -1 {
			added++
		}
	}
	if d := only(t, st); marked != 1 || added != 1 || d.State != taskstatus.StateClosed || d.Record != "clickhouse" {
		t.Errorf("marked %d, added %d, deadline %+v:\n%s", marked, added, d, out)
	}

	args := append(p.flags(), "c", "--clickhouse", "--scan", "--clickhouse-addr", "127.0.0.1:1", "--clickhouse-dial-timeout", "1s")
	stdout, _, err := cmdtest.Run(t, statuscmd.Run, args...)
	if err == nil || !strings.Contains(err.Error(), "incomplete") || !strings.Contains(stdout, "clickhouse: ") || !strings.Contains(stdout, "attempt 1 failed") {
		t.Errorf("unreachable ClickHouse: %v\n%s", err, stdout)
	}
}
