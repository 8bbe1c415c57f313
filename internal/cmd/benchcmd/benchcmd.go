package benchcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// benchResult is the JSON line of a throughput run.
type benchResult struct {
	Orders     int    `json:"orders"`
	Rate       int    `json:"rate_target"`
	Delays     string `json:"delays"`
	Tiers      string `json:"tiers"`
	Partitions int    `json:"partitions"`
	Fired      int    `json:"fired"`
	Lost       int    `json:"lost"`
	Duplicates int    `json:"duplicates"`
	Early      int    `json:"early"`
	// Cancelled counts the orders cancelled (--cancel-ratio) and dropped by
	// the router; lateness_ms is that of the others.
	Cancelled    int                  `json:"cancelled"`
	LatenessMs   embedded.Percentiles `json:"lateness_ms"`
	ScheduleRate float64              `json:"schedule_rate"`
	FireRate     float64              `json:"fire_rate"`      // closes per second from the first to the last
	FireRatePeak int                  `json:"fire_rate_peak"` // highest closes per second over a progress interval
	procFigures
	// Steady has the figures of the seconds in which deadlines fired at
	// --rate (see steady); absent when there were fewer than minSteady.
	Steady *steadyResult `json:"steady,omitempty"`
	// The delay topics' records and bytes; absent when the broker could
	// not be read at the end.
	*delayFigures
	DurationSeconds float64 `json:"duration_s"`
	InstanceIDs     bool    `json:"instance_ids"`
	// The router's and canceller's figures are those of the last
	// instance, the restarted one after a kill.
	Kill    *killResult    `json:"kill,omitempty"`
	Hostile *hostileResult `json:"hostile,omitempty"`
	Writers *writersResult `json:"writers,omitempty"`
	DB      *dbResult      `json:"db,omitempty"`
}

// Run is the `hourglass bench` command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	// A router or canceller that exits on its own ends the bench with its
	// error, not with the orders it then loses.
	ctx, died := context.WithCancelCause(ctx)
	defer died(nil)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	r, err := startRig(ctx, c, died, stderr)
	if err != nil {
		return exitCause(ctx, err)
	}
	defer r.close()
	// Built before the orders start, not to take the cores from them.
	if r.bigBatches, err = buildBigBatches(c); err != nil {
		return exitCause(ctx, err)
	}
	switch {
	case len(c.pendingSteps) > 0:
		err = r.benchMemory(ctx, stdout, stderr)
	case len(c.cancelSteps) > 0:
		err = r.benchCancellations(ctx, stdout, stderr)
	case c.burst > 0:
		err = r.burst(ctx, stdout, stderr)
	default:
		err = r.throughput(ctx, stdout, stderr)
	}
	return exitCause(ctx, err)
}

// printLine writes the bench's JSON line of v, unless a service exited on
// its own: the figures of a run cut short are not a result, and that
// service's error is returned instead.
func printLine(ctx context.Context, w io.Writer, v any) error {
	if err := exitCause(ctx, nil); err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(v)
}

// exitCause returns the error of a service that exited on its own when one
// ended ctx, and err otherwise.
func exitCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errExited) {
		return cause
	}
	return err
}

// throughput schedules the orders, with a kill and hostile records when
// asked, waits for their outcomes and prints the JSON line.
func (r *rig) throughput(ctx context.Context, stdout, stderr io.Writer) error {
	c := r.c
	t := embedded.NewTally()
	var (
		fires peak
		kill  killWatch
	)
	w, err := r.startWriters(ctx)
	if err != nil {
		return err
	}
	t.OnEvent = func(ev outcome.Event, first bool) {
		fires.see(first)
		kill.see(ev, first, c.kill)
		w.see(ev, first)
	}
	defer embedded.GoWatch(ctx, r.seed, tiers.OutcomesTopic(tiers.DefaultPrefix), t)()

	start := time.Now()
	kill.begun = start
	st := steady{rate: c.rate, start: start}
	fires.onSecond = func(now time.Time, fired int) { st.sample(now, fired, r.rt.Load(), r.cn.Load()) }
	var side sync.WaitGroup
	defer side.Wait()
	killCtx, stopKill := context.WithCancel(ctx)
	defer stopKill()
	hostileCtx, stopHostile := context.WithCancel(ctx)
	defer stopHostile()
	r.startSide(killCtx, hostileCtx, &side, &kill, w, start, stderr)
	produced, maxDelay, err := r.schedule(ctx, t, &fires, w, start, stderr)
	if err != nil {
		return err
	}
	scheduleTook := time.Since(start)
	stopHostile()

	drainOutcomes(ctx, t, &fires, start, produced, maxDelay, stderr)
	res := r.result(t.Snapshot(), produced, start, scheduleTook)
	if c.kill != "" {
		res.Kill = kill.result(c, res.Duplicates)
	}
	res.FireRate, res.FireRatePeak = fires.rate(res.Fired), fires.max
	res.Steady = st.result()
	res.Writers = w.result(c)
	res.delayFigures = r.delayFigures(ctx, produced)
	logLate(stderr, t.LateSample())
	var dbErr error
	if r.orders != nil {
		res.DB, dbErr = r.orders.checked(ctx, produced)
	}
	if err := printLine(ctx, stdout, res); err != nil {
		return err
	}
	if res.Lost > 0 || res.Early > 0 {
		return fmt.Errorf("bench: %d orders lost, %d fired early", res.Lost, res.Early)
	}
	if dbErr != nil {
		return dbErr
	}
	return c.bounds(res)
}

// startSide starts the kill of --kill, the hostile load of --hostile-rate,
// --bombs and --big-batches, and the other writers of the cancellations topic, each in a
// goroutine of side. The kill and the open transaction's abort run to
// their end, whenever the scheduling ends (called off if the bench returns
// first); the hostile load and the flood stop with the scheduling.
func (r *rig) startSide(killCtx, hostileCtx context.Context, side *sync.WaitGroup, kill *killWatch, w *writers, start time.Time, stderr io.Writer) {
	c := r.c
	if w.txn != nil {
		side.Go(func() { w.abort(killCtx, stderr) })
	}
	if c.cancelFlood > 0 {
		side.Go(func() { w.flood(hostileCtx, r, stderr) })
	}
	if c.kill != "" {
		victim, args := &r.rt, r.routerArgs
		if c.kill == "canceller" {
			victim, args = &r.cn, r.cancellerArgs
		}
		at := c.killAt
		if at == 0 {
			at = time.Duration(float64(c.orders) / float64(c.rate) / 2 * float64(time.Second))
		}
		side.Go(func() {
			if err := kill.run(killCtx, victim, args, start.Add(at), c.restartAfter, r.died, stderr); err != nil {
				fmt.Fprintln(stderr, "bench:", err)
			}
		})
	}
	if c.hostileRate > 0 || c.bombs > 0 {
		side.Go(func() { hostileLoad(hostileCtx, r.prod, c, stderr) })
	}
	if len(r.bigBatches) > 0 {
		side.Go(func() { sendBigBatches(hostileCtx, r.prod, c, r.bigBatches, start, stderr) })
	}
}

// schedule schedules the orders of the workload at --rate and flushes them;
// it returns how many it scheduled and the longest delay among them.
func (r *rig) schedule(ctx context.Context, t *embedded.Tally, fires *peak, w *writers, start time.Time, stderr io.Writer) (int, time.Duration, error) {
	wl, _ := newWorkload(r.c.delays)
	rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), 1))
	var maxDelay time.Duration
	produced, err := pace(ctx, r.c.orders, r.c.rate, stderr, t, fires, func(i int) {
		d := wl(rng)
		maxDelay = max(maxDelay, d)
		id := r.taskID(i)
		r.s.ScheduleAsync(ctx, tiers.Task{ID: id, Due: time.Now().Add(d)}, nil)
		w.cancel(ctx, r, i, id, r.c.cancelRatio > 0 && rng.Float64() < r.c.cancelRatio)
	})
	if err != nil {
		return produced, maxDelay, err
	}
	if err := r.prod.Flush(ctx); err != nil {
		return produced, maxDelay, fmt.Errorf("bench: flush: %w", err)
	}
	return produced, maxDelay, nil
}

// drainOutcomes waits for the outcome of every produced order, printing
// progress every second. Once maxDelay and a minute have passed it gives up
// when no outcome came in the last minute; ctx (--timeout) bounds it in
// any case.
func drainOutcomes(ctx context.Context, t *embedded.Tally, fires *peak, start time.Time, produced int, maxDelay time.Duration, stderr io.Writer) {
	patience := time.Now().Add(maxDelay + time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastCount, lastChange := -1, time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			snap, w := t.Snapshot(), fires.take(t)
			fmt.Fprintf(stderr, "bench: %5.0fs fired %d/%d, lateness p99 %d ms (last second: p99 %d, max %d)\n",
				now.Sub(start).Seconds(), snap.Tasks, produced, snap.Late.P99, w.P99, w.Max)
			if snap.Tasks != lastCount {
				lastCount, lastChange = snap.Tasks, now
			}
			if snap.Tasks >= produced || now.After(patience) && now.Sub(lastChange) > time.Minute {
				return
			}
		}
	}
}

// result is the JSON line of a throughput run, without the kill and the
// fire rates.
func (r *rig) result(snap embedded.Snapshot, produced int, start time.Time, scheduleTook time.Duration) benchResult {
	c := r.c
	res := benchResult{
		Orders: c.orders, Rate: c.rate, Delays: c.delays, Tiers: c.tiers.String(), Partitions: c.partitions,
		Fired: snap.Tasks, Lost: produced - snap.Tasks, Duplicates: snap.Duplicates, Early: snap.Early,
		Cancelled:       snap.Outcomes[outcome.Cancelled],
		LatenessMs:      snap.Late,
		ScheduleRate:    round(float64(produced) / scheduleTook.Seconds()),
		procFigures:     r.procs(snap.Tasks),
		DurationSeconds: round(time.Since(start).Seconds()),
		InstanceIDs:     c.instanceIDs,
	}
	if c.hostile() {
		res.Hostile = &hostileResult{Rate: c.hostileRate, Bombs: c.bombs, BigBatches: c.bigBatches}
	}
	return res
}

// logLate prints the latest deadlines that were late, to find them in the
// services' logs.
func logLate(w io.Writer, sample []outcome.Event) {
	for _, ev := range sample {
		fmt.Fprintf(w, "bench: late: %s due %d scheduled %d forwarded %+d closed %+d ms, path %s\n",
			ev.TaskID, ev.DueMs, ev.ScheduledMs, ev.ForwardedMs-ev.DueMs, ev.ClosedMs-ev.DueMs, ev.Path)
	}
}
