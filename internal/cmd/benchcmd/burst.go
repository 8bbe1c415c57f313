package benchcmd

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// burstProgress is how many scheduled deadlines apart the burst's
// scheduling progress lines are.
const burstProgress = 100_000

// burstResult is the JSON line of a burst run. Times are from the due
// instant that every deadline shares.
type burstResult struct {
	Mode            string  `json:"mode"` // "burst"
	Burst           int     `json:"burst"`
	Closer          string  `json:"closer"`
	Tiers           string  `json:"tiers"`
	Partitions      int     `json:"partitions"`
	LeadMs          int64   `json:"lead_ms"`    // from the start of scheduling to the due instant
	ScheduleSeconds float64 `json:"schedule_s"` // scheduling, to the last record acknowledged
	Fired           int     `json:"fired"`
	Lost            int     `json:"lost"`
	Duplicates      int     `json:"duplicates"`
	Early           int     `json:"early"`
	// LastForwardMs and LastCloseMs run from the due instant to the last
	// forward by the router and to the last close by the canceller.
	LastForwardMs     int64                   `json:"last_forward_ms"`
	LastCloseMs       int64                   `json:"last_close_ms"`
	ForwardLatenessMs embedded.Percentiles    `json:"forward_lateness_ms"`
	CloseLatenessMs   embedded.Percentiles    `json:"close_lateness_ms"`
	CloseRate         float64                 `json:"close_rate"` // closes per second, from the due instant to the last close
	Outcomes          map[outcome.Outcome]int `json:"outcomes"`   // of the first event of each deadline
	procFigures
	*delayFigures
	DurationSeconds float64   `json:"duration_s"`
	DB              *dbResult `json:"db,omitempty"`
}

// burst schedules --burst deadlines all due at one instant, --burst-lead
// after the start, waits for their outcomes and prints the JSON line.
func (r *rig) burst(ctx context.Context, stdout, stderr io.Writer) error {
	c := r.c
	t := embedded.NewTally()
	var fires peak
	t.OnEvent = func(_ outcome.Event, first bool) { fires.see(first) }
	defer embedded.GoWatch(ctx, r.seed, tiers.OutcomesTopic(tiers.DefaultPrefix), t)()

	lead := c.burstLead
	if lead == 0 {
		lead = burstLeadFor(c.burst)
	}
	start := time.Now()
	due := start.Add(lead).Truncate(time.Millisecond)
	if err := r.scheduleBurst(ctx, due, stderr); err != nil {
		return err
	}
	scheduleTook := time.Since(start)
	margin := time.Until(due)
	if margin <= 0 {
		return fmt.Errorf("bench: scheduling %d deadlines took %.1fs, %v past their due instant: raise --burst-lead above %v",
			c.burst, scheduleTook.Seconds(), -margin.Round(time.Millisecond), lead)
	}
	fmt.Fprintf(stderr, "bench: %d deadlines scheduled in %.1fs, all due in %.1fs\n", c.burst, scheduleTook.Seconds(), margin.Seconds())
	drainOutcomes(ctx, t, &fires, start, c.burst, lead, stderr)

	snap := t.Snapshot()
	res := burstResult{
		Mode: "burst", Burst: c.burst, Closer: c.closer, Tiers: c.tiers.String(), Partitions: c.partitions,
		LeadMs: lead.Milliseconds(), ScheduleSeconds: round(scheduleTook.Seconds()),
		Fired: snap.Tasks, Lost: c.burst - snap.Tasks, Duplicates: snap.Duplicates, Early: snap.Early,
		ForwardLatenessMs: snap.ForwardLate, CloseLatenessMs: snap.Late, Outcomes: snap.Outcomes,
		procFigures:     r.procs(snap.Tasks),
		DurationSeconds: round(time.Since(start).Seconds()),
	}
	if snap.LastForwardMs > 0 {
		res.LastForwardMs = snap.LastForwardMs - due.UnixMilli()
	}
	if snap.LastCloseMs > 0 {
		res.LastCloseMs = snap.LastCloseMs - due.UnixMilli()
		if res.LastCloseMs > 0 {
			res.CloseRate = round(float64(snap.Tasks) * 1000 / float64(res.LastCloseMs))
		}
	}
	res.delayFigures = r.delayFigures(ctx, c.burst)
	var dbErr error
	if r.orders != nil {
		res.DB, dbErr = r.orders.checked(ctx, c.burst)
	}
	if err := printLine(ctx, stdout, res); err != nil {
		return err
	}
	if res.Lost > 0 || res.Early > 0 {
		return fmt.Errorf("bench: %d deadlines lost, %d fired early", res.Lost, res.Early)
	}
	if dbErr != nil {
		return dbErr
	}
	if err := c.producesBound(res.delayFigures); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// scheduleBurst produces the --burst deadlines, all due at due, as fast as
// the producer takes them, and flushes them; it fails if one was not
// produced.
func (r *rig) scheduleBurst(ctx context.Context, due time.Time, stderr io.Writer) error {
	var failed atomic.Int64
	var firstErr atomic.Pointer[error]
	done := func(_ *kgo.Record, err error) {
		if err != nil && failed.Add(1) == 1 {
			firstErr.Store(&err)
		}
	}
	start := time.Now()
	for i := range r.c.burst {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bench: %w after scheduling %d of %d deadlines", err, i, r.c.burst)
		}
		r.s.ScheduleAsync(ctx, tiers.Task{ID: r.taskID(i), Due: due}, done)
		if n := i + 1; n%burstProgress == 0 {
			fmt.Fprintf(stderr, "bench: %5.1fs scheduled %d/%d\n", time.Since(start).Seconds(), n, r.c.burst)
		}
	}
	if err := r.prod.Flush(ctx); err != nil {
		return fmt.Errorf("bench: flush: %w", err)
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("bench: %d of %d deadlines not scheduled, the first: %w", n, r.c.burst, *firstErr.Load())
	}
	return nil
}
