package benchcmd

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// memoryStep is one sample of the memory run.
type memoryStep struct {
	Pending   int     `json:"pending"`
	RouterRSS float64 `json:"router_rss_mb"`
}

// benchMemory schedules orders due far ahead and samples the router's RSS as
// the pending count passes each step. No deadline fires: the CPU figures
// are per deadline scheduled.
func (r *rig) benchMemory(ctx context.Context, stdout, stderr io.Writer) error {
	c, s, prod, rt := r.c, r.s, r.prod, r.rt.Load()
	var steps []memoryStep
	scheduled := 0
	due := time.Now().Add(c.pendingDelay)
	for _, step := range c.pendingSteps {
		n, err := pace(ctx, step-scheduled, c.rate, stderr, nil, nil, func(i int) {
			s.ScheduleAsync(ctx, tiers.Task{ID: "pending-" + strconv.Itoa(scheduled+i), Due: due}, nil)
		})
		scheduled += n
		if err != nil {
			return err
		}
		if err := prod.Flush(ctx); err != nil {
			return fmt.Errorf("bench: flush: %w", err)
		}
		// Let the router fetch and pause.
		rss, err := settledRSS(ctx, rt)
		if err != nil {
			return err
		}
		steps = append(steps, memoryStep{Pending: scheduled, RouterRSS: rss})
		fmt.Fprintf(stderr, "bench: %d pending, router RSS %.1f MB\n", scheduled, steps[len(steps)-1].RouterRSS)
	}
	growth := steps[len(steps)-1].RouterRSS - steps[0].RouterRSS
	rtCPU, cnCPU := r.cpuPer(scheduled)
	err := printLine(ctx, stdout, struct {
		Mode      string       `json:"mode"`
		Tiers     string       `json:"tiers"`
		Delay     string       `json:"pending_delay"`
		Steps     []memoryStep `json:"steps"`
		GrowthMB  float64      `json:"router_rss_growth_mb"`
		PeakRSSMB float64      `json:"router_peak_rss_mb"`
		RouterCPU float64      `json:"router_cpu_s"`
		CancelCPU float64      `json:"canceller_cpu_s"`
		// Per deadline scheduled: none fires.
		RouterPer float64 `json:"router_cpu_us_per_deadline"`
		CancelPer float64 `json:"canceller_cpu_us_per_deadline"`
	}{"memory", c.tiers.String(), c.pendingDelay.String(), steps, round(growth), rt.peakRSS(),
		round(rt.cpu()), round(r.cn.Load().cpu()), rtCPU, cnCPU})
	if err != nil {
		return err
	}
	if c.maxGrowthMB > 0 && growth > c.maxGrowthMB {
		return fmt.Errorf("bench: router RSS grew %.1f MB from %d to %d pending deadlines, more than --max-growth-mb %.0f",
			growth, steps[0].Pending, steps[len(steps)-1].Pending, c.maxGrowthMB)
	}
	return nil
}

// settledRSS waits 5 s, then returns the median of a few samples of rt's
// RSS in MB, so as not to report a GC cycle's peak or trough.
func settledRSS(ctx context.Context, rt *child) (float64, error) {
	settle := time.NewTimer(5 * time.Second)
	select {
	case <-ctx.Done():
		settle.Stop()
		return 0, ctx.Err()
	case <-settle.C:
	}
	var samples []int64
	for range 5 {
		samples = append(samples, int64(rt.rss()*1000))
		t := time.NewTimer(200 * time.Millisecond)
		<-t.C
	}
	return float64(embedded.PercentilesOf(samples).P50) / 1000, nil
}
