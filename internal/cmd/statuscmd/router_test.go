package statuscmd_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/cmd/routercmd"
	"github.com/hourglass/hourglass/internal/cmd/schedulecmd"
	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/internal/testutil/poll"
)

// TestStatusWithRouter: with the router running, a task cancelled before
// it is due is shown cancelled (the router dropped it and said so), and
// one rescheduled shows its old deadline cancelled and its new one
// forwarded; another is forwarded (no canceller runs).
func TestStatusWithRouter(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- routercmd.Run(ctx, append(p.flags(), "--http-addr", "127.0.0.1:0", "--group", p.prefix+"router",
			"--partitions", "4", "--log-level", "error"), io.Discard, io.Discard)
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("router: %v", err)
		}
	}()
	run := func(cmd func(context.Context, []string, io.Writer, io.Writer) error, args ...string) {
		t.Helper()
		if _, stderr, err := cmdtest.Run(t, cmd, append(p.flags(), args...)...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
	}
	for _, id := range []string{"drop", "move", "keep"} {
		run(schedulecmd.Schedule, "--id", id, "--in", "2s")
	}
	run(schedulecmd.Cancel, "--id", "drop")
	run(schedulecmd.Reschedule, "--id", "move", "--in", "3s")

	states := func(id string) (got []string, out string) {
		stdout, _, err := cmdtest.Run(t, statuscmd.Run, append(p.flags(), id, "--format", "json")...)
		var st statuscmd.Status
		if err != nil || json.Unmarshal([]byte(stdout), &st) != nil {
			return nil, stdout
		}
		for _, d := range st.Deadlines {
			got = append(got, d.State)
		}
		return got, stdout
	}
	for id, want := range map[string][]string{
		"drop": {taskstatus.StateCancelled},
		"move": {taskstatus.StateCancelled, taskstatus.StateForwarded},
		"keep": {taskstatus.StateForwarded},
	} {
		var out string
		poll.Until(t, 30*time.Second, id+" to be "+join(want), func() bool {
			var got []string
			got, out = states(id)
			return join(got) == join(want)
		}, func() string { return out })
	}
}

func join(s []string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
