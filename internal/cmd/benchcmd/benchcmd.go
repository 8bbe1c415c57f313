package benchcmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/router"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

const benchUsage = `hourglass bench drives the real pipeline on an embedded broker and prints one
JSON line with what it measured.

It starts an embedded Kafka broker (kfake) on 127.0.0.1 in this process, runs
the router and the canceller as child processes (this binary's "router" and
"canceller" commands, log closer), schedules --orders at --rate, and reads
every outcome event back. Lateness is the canceller's close time minus the
due time. Progress goes to stderr, the JSON line to stdout.

Workloads (--delays): a duration ("5s": every order due that long after it is
scheduled), or "mix": 50% exactly 5s, 30% uniform 2s-20s, 20% exactly 30s.

The JSON line: orders, fired (orders with an outcome), lost (without one),
duplicates (outcomes beyond the first), early (forwarded or closed before
due: must be 0), lateness_ms (p50, p90, p99, p999, max), schedule_rate
(orders/s produced), fire_rate (closes/s from the first close to the last)
and fire_rate_peak (the highest closes/s over one progress second), peak RSS
and CPU seconds of the router and canceller. It exits 1 when an order is lost
or early, or when a --max-* bound is exceeded.

With --kill router (or canceller) the bench kills that process with SIGKILL
at --kill-at and starts it again --restart-after later (with the same
--instance-id when --instance-ids is set), and adds "kill": recovery_ms
(from the kill to the first forward, or close, by the new instance),
lateness_ms of the deadlines due in the 10 s after the kill, and the
duplicates, also as milliseconds of traffic at --rate.

With --hostile-rate and --bombs the bench also sends what a hostile
producer would, next to the orders: records with a value just under the
router's limit (899,000 bytes) due --pending-delay ahead, at --hostile-rate
per second, and zstd batches of 256 MiB that fit in 35 kB on the wire
(--bombs of them, one every second): the router must keep them bounded in
memory (router_peak_rss_mb; --max-router-rss-mb fails the run above a
bound) and dead-letter the batches.

With --pending-steps the bench measures memory instead: it schedules orders
due far ahead (--pending-delay) and samples the router's RSS as the pending
deadlines reach each step.

Usage: hourglass bench [flags]

Flags:
`

type benchConfig struct {
	orders       int
	rate         int
	delays       string
	tiers        tiers.Table
	partitions   int
	timeout      time.Duration
	pendingSteps []int
	pendingDelay time.Duration
	routerArgs   []string

	kill         string // "", "router" or "canceller"
	killAt       time.Duration
	restartAfter time.Duration
	instanceIDs  bool

	hostileRate int
	bombs       int

	maxP99      time.Duration
	maxLate     time.Duration
	maxRSS      float64
	maxGrowthMB float64
}

func parseBench(args []string, stderr io.Writer) (*benchConfig, error) {
	var (
		c        benchConfig
		rawTiers string
		steps    []string
	)
	fs := cli.NewFlagSet("bench", benchUsage)
	fs.SetOutput(stderr)
	fs.IntVar(&c.orders, "orders", "", 200_000, "orders to schedule")
	fs.IntVar(&c.rate, "rate", "", 10_000, "orders scheduled per second")
	fs.StringVar(&c.delays, "delays", "", "mix", "workload: mix, or a duration such as 5s")
	fs.StringVar(&rawTiers, "tiers", "", "", "delay tiers (default 1s,2s,5s,10s,30s; 1m,5m,30m with --pending-steps)")
	fs.IntVar(&c.partitions, "partitions", "", 6, "partitions per topic")
	fs.DurationVar(&c.timeout, "timeout", "", 10*time.Minute, "give up (and report what is lost) after this long")
	fs.StringsVar(&steps, "pending-steps", "", nil, "memory mode: pending deadline counts at which to sample the router's RSS, e.g. 10000,100000,1000000")
	fs.DurationVar(&c.pendingDelay, "pending-delay", "", 45*time.Minute, "memory mode: how far ahead the pending orders are due")
	fs.StringsVar(&c.routerArgs, "router-args", "", nil, "extra router flags, comma-separated (e.g. --max-held-per-partition=200)")
	fs.StringVar(&c.kill, "kill", "", "", "SIGKILL this `process` (router or canceller) at --kill-at and start it again")
	fs.DurationVar(&c.killAt, "kill-at", "", 0, "when to kill, from the start (default: halfway through scheduling)")
	fs.DurationVar(&c.restartAfter, "restart-after", "", 300*time.Millisecond, "how long the killed process stays down")
	fs.BoolVar(&c.instanceIDs, "instance-ids", "", false, "give the router and the canceller an --instance-id (static membership)")
	fs.IntVar(&c.hostileRate, "hostile-rate", "", 0, "records with a value just under the size limit per second, next to the orders")
	fs.IntVar(&c.bombs, "bombs", "", 0, "zstd batches that decompress to 256 MiB, one per second")
	fs.DurationVar(&c.maxP99, "max-p99", "", 0, "fail when lateness p99 exceeds this (0: no bound)")
	fs.DurationVar(&c.maxLate, "max-lateness", "", 0, "fail when the largest lateness exceeds this (0: no bound)")
	fs.Float64Var(&c.maxRSS, "max-router-rss-mb", "", 0, "fail when the router's peak RSS exceeds this many MB (0: no bound)")
	fs.Float64Var(&c.maxGrowthMB, "max-growth-mb", "", 0, "memory mode: fail when the router's RSS grows by more than this many MB (0: no bound)")
	if err := service.ParseArgs(fs, args); err != nil {
		return nil, err
	}
	var errs service.Checks
	if rawTiers == "" {
		rawTiers = "1s,2s,5s,10s,30s"
		if len(steps) > 0 {
			rawTiers = tiers.DefaultTiers
		}
	}
	c.tiers = errs.Tiers(rawTiers)
	errs.IntRange("orders", c.orders, 1, 10_000_000)
	errs.IntRange("rate", c.rate, 1, 1_000_000)
	if _, err := newWorkload(c.delays); err != nil {
		errs.Add("delays", "%v", err)
	}
	errs.IntRange("partitions", c.partitions, 1, 1000)
	for _, s := range steps {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10_000_000 || (len(c.pendingSteps) > 0 && n <= c.pendingSteps[len(c.pendingSteps)-1]) {
			errs.Add("pending-steps", "%q: want increasing counts from 1 to 10000000", s)
			break
		}
		c.pendingSteps = append(c.pendingSteps, n)
	}
	if c.timeout <= 0 {
		errs.Add("timeout", "must be positive")
	}
	switch c.kill {
	case "", "router", "canceller":
	default:
		errs.Add("kill", "%q: want router or canceller", c.kill)
	}
	if c.killAt < 0 || c.restartAfter < 0 {
		errs.Add("kill-at", "must not be negative (nor --restart-after)")
	}
	errs.IntRange("hostile-rate", c.hostileRate, 0, 1000)
	errs.IntRange("bombs", c.bombs, 0, 100)
	if len(c.pendingSteps) > 0 && (c.kill != "" || c.hostileRate > 0 || c.bombs > 0) {
		errs.Add("pending-steps", "the memory mode takes neither --kill nor hostile records")
	}
	if err := fs.Explain(errs); err != nil {
		return nil, service.UsageError{Err: err}
	}
	return &c, nil
}

// workload draws order delays.
type workload func(r *rand.Rand) time.Duration

func newWorkload(s string) (workload, error) {
	if s == "mix" {
		return func(r *rand.Rand) time.Duration {
			switch x := r.Float64(); {
			case x < 0.5:
				return 5 * time.Second
			case x < 0.8:
				return 2*time.Second + time.Duration(r.Int64N(int64(18*time.Second)+1))
			default:
				return 30 * time.Second
			}
		}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > 24*time.Hour {
		return nil, fmt.Errorf("%q: want mix or a duration from 0 to 24h", s)
	}
	return func(*rand.Rand) time.Duration { return d }, nil
}

// benchResult is the JSON line of a throughput run.
type benchResult struct {
	Orders          int                  `json:"orders"`
	Rate            int                  `json:"rate_target"`
	Delays          string               `json:"delays"`
	Tiers           string               `json:"tiers"`
	Partitions      int                  `json:"partitions"`
	Fired           int                  `json:"fired"`
	Lost            int                  `json:"lost"`
	Duplicates      int                  `json:"duplicates"`
	Early           int                  `json:"early"`
	LatenessMs      embedded.Percentiles `json:"lateness_ms"`
	ScheduleRate    float64              `json:"schedule_rate"`
	FireRate        float64              `json:"fire_rate"`      // closes per second from the first to the last
	FireRatePeak    int                  `json:"fire_rate_peak"` // highest closes per second over a progress interval
	RouterPeakRSS   float64              `json:"router_peak_rss_mb"`
	CancellerPeak   float64              `json:"canceller_peak_rss_mb"`
	RouterCPU       float64              `json:"router_cpu_s"`
	CancellerCPU    float64              `json:"canceller_cpu_s"`
	DurationSeconds float64              `json:"duration_s"`
	InstanceIDs     bool                 `json:"instance_ids"`
	// The router's and canceller's figures are those of the last
	// instance, the restarted one after a kill.
	Kill    *killResult    `json:"kill,omitempty"`
	Hostile *hostileResult `json:"hostile,omitempty"`
}

// Run is the `hourglass bench` command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	broker, addr, err := embedded.StartBroker(0)
	if err != nil {
		return err
	}
	defer broker.Close()
	seed := []kgo.Opt{kgo.SeedBrokers(addr)}
	if _, err := topics.Provision(ctx, seed, topics.Specs(topics.Default(tiers.DefaultPrefix, c.tiers), int32(c.partitions), -1), true); err != nil {
		return err
	}
	common := []string{"--brokers", addr, "--http-addr", "", "--log-level", "warn", "--create-topics=false"}
	routerArgs := append(append([]string{"router", "--tiers", c.tiers.String()}, common...), c.routerArgs...)
	cancellerArgs := append([]string{"canceller", "--tiers", c.tiers.String()}, common...)
	if c.instanceIDs {
		routerArgs = append(routerArgs, "--instance-id", "bench-router-0")
		cancellerArgs = append(cancellerArgs, "--instance-id", "bench-canceller-0")
	}
	var rt, cn atomic.Pointer[child]
	for _, s := range []struct {
		p    *atomic.Pointer[child]
		args []string
	}{{&rt, routerArgs}, {&cn, cancellerArgs}} {
		ch, err := spawn(ctx, stderr, s.args...)
		if err != nil {
			return err
		}
		s.p.Store(ch)
		defer func() { s.p.Load().stop() }()
	}
	if err := waitGroups(ctx, broker); err != nil {
		return err
	}
	prod, err := kgo.NewClient(append(seed, kgo.MaxBufferedRecords(100_000))...)
	if err != nil {
		return err
	}
	defer prod.Close()
	s, err := tiers.NewScheduler(prod, c.tiers)
	if err != nil {
		return err
	}
	if len(c.pendingSteps) > 0 {
		return benchMemory(ctx, c, s, prod, rt.Load(), stdout, stderr)
	}

	t := embedded.NewTally()
	var (
		firstFire, lastFire time.Time
		kill                killWatch
	)
	t.OnEvent = func(ev outcome.Event, first bool) {
		if first {
			now := time.Now()
			if firstFire.IsZero() {
				firstFire = now
			}
			lastFire = now
		}
		kill.see(ev, first, c.kill)
	}
	defer embedded.GoWatch(ctx, seed, tiers.OutcomesTopic(tiers.DefaultPrefix), t)()

	start := time.Now()
	kill.begun = start
	// The kill runs to its restart, whenever scheduling ends (and is called
	// off if the bench returns first); the hostile load stops with the
	// scheduling.
	var side sync.WaitGroup
	defer side.Wait()
	killCtx, stopKill := context.WithCancel(ctx)
	defer stopKill()
	hostileCtx, stopHostile := context.WithCancel(ctx)
	defer stopHostile()
	if c.kill != "" {
		victim, args := &rt, routerArgs
		if c.kill == "canceller" {
			victim, args = &cn, cancellerArgs
		}
		at := c.killAt
		if at == 0 {
			at = time.Duration(float64(c.orders) / float64(c.rate) / 2 * float64(time.Second))
		}
		side.Go(func() {
			if err := kill.run(killCtx, victim, args, start.Add(at), c.restartAfter, stderr); err != nil {
				fmt.Fprintln(stderr, "bench:", err)
			}
		})
	}
	if c.hostileRate > 0 || c.bombs > 0 {
		side.Go(func() { hostileLoad(hostileCtx, prod, c, stderr) })
	}
	wl, _ := newWorkload(c.delays)
	rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), 1))
	var maxDelay time.Duration
	var fires peak
	produced, err := pace(ctx, c.orders, c.rate, stderr, t, &fires, func(i int) {
		d := wl(rng)
		maxDelay = max(maxDelay, d)
		s.ScheduleAsync(ctx, tiers.Task{ID: "bench-" + strconv.Itoa(i), Due: time.Now().Add(d)}, nil)
	})
	if err != nil {
		return err
	}
	if err := prod.Flush(ctx); err != nil {
		return fmt.Errorf("bench: flush: %w", err)
	}
	scheduleTook := time.Since(start)
	stopHostile()

	// Wait for every outcome, bounded by the last due time plus a drain.
	drain := time.NewTimer(maxDelay + time.Minute)
	defer drain.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-drain.C:
			done = true
		case <-tick.C:
			snap, w := t.Snapshot(), fires.take(t)
			fmt.Fprintf(stderr, "bench: %5.0fs fired %d/%d, lateness p99 %d ms (last second: p99 %d, max %d)\n",
				time.Since(start).Seconds(), snap.Tasks, produced, snap.Late.P99, w.P99, w.Max)
			done = snap.Tasks >= produced
		}
	}
	snap := t.Snapshot()
	for _, ev := range t.LateSample() {
		fmt.Fprintf(stderr, "bench: late: %s due %d scheduled %d forwarded %+d closed %+d ms, path %s\n",
			ev.TaskID, ev.DueMs, ev.ScheduledMs, ev.ForwardedMs-ev.DueMs, ev.ClosedMs-ev.DueMs, ev.Path)
	}
	res := benchResult{
		Orders: c.orders, Rate: c.rate, Delays: c.delays, Tiers: c.tiers.String(), Partitions: c.partitions,
		Fired: snap.Tasks, Lost: produced - snap.Tasks, Duplicates: snap.Duplicates, Early: snap.Early,
		LatenessMs:    snap.Late,
		ScheduleRate:  round(float64(produced) / scheduleTook.Seconds()),
		RouterPeakRSS: rt.Load().peakRSS(), CancellerPeak: cn.Load().peakRSS(),
		RouterCPU: rt.Load().cpu(), CancellerCPU: cn.Load().cpu(),
		DurationSeconds: round(time.Since(start).Seconds()),
		InstanceIDs:     c.instanceIDs,
	}
	if c.kill != "" {
		res.Kill = kill.result(c, snap.Duplicates)
	}
	if c.hostileRate > 0 || c.bombs > 0 {
		res.Hostile = &hostileResult{Rate: c.hostileRate, Bombs: c.bombs}
	}
	if span := lastFire.Sub(firstFire).Seconds(); span > 0 {
		res.FireRate = round(float64(snap.Tasks) / span)
	}
	res.FireRatePeak = fires.max
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return err
	}
	if res.Lost > 0 || res.Early > 0 {
		return fmt.Errorf("bench: %d orders lost, %d fired early", res.Lost, res.Early)
	}
	return c.bounds(res)
}

// bounds checks the --max-* bounds.
func (c *benchConfig) bounds(res benchResult) error {
	var errs []error
	if c.maxP99 > 0 && time.Duration(res.LatenessMs.P99)*time.Millisecond > c.maxP99 {
		errs = append(errs, fmt.Errorf("lateness p99 %d ms, more than --max-p99 %v", res.LatenessMs.P99, c.maxP99))
	}
	if c.maxLate > 0 && time.Duration(res.LatenessMs.Max)*time.Millisecond > c.maxLate {
		errs = append(errs, fmt.Errorf("lateness max %d ms, more than --max-lateness %v", res.LatenessMs.Max, c.maxLate))
	}
	if c.maxRSS > 0 && res.RouterPeakRSS > c.maxRSS {
		errs = append(errs, fmt.Errorf("router peak RSS %.1f MB, more than --max-router-rss-mb %.0f", res.RouterPeakRSS, c.maxRSS))
	}
	if len(errs) > 0 {
		return fmt.Errorf("bench: %w", errors.Join(errs...))
	}
	return nil
}

// pace calls schedule(i) for i in [0, n) at rate per second, printing
// progress every second, and returns how many it scheduled.
func pace(ctx context.Context, n, rate int, stderr io.Writer, t *embedded.Tally, fires *peak, schedule func(i int)) (int, error) {
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	lastReport := start
	i := 0
	for i < n {
		select {
		case <-ctx.Done():
			return i, fmt.Errorf("bench: %w after scheduling %d orders", ctx.Err(), i)
		case now := <-tick.C:
			want := min(n, int(now.Sub(start).Seconds()*float64(rate))+1)
			for ; i < want; i++ {
				schedule(i)
			}
			if now.Sub(lastReport) >= time.Second {
				lastReport = now
				if t != nil {
					snap, w := t.Snapshot(), fires.take(t)
					fmt.Fprintf(stderr, "bench: %5.0fs scheduled %d/%d, fired %d, lateness p99 %d ms (last second: p99 %d, max %d)\n",
						now.Sub(start).Seconds(), i, n, snap.Tasks, snap.Late.P99, w.P99, w.Max)
				} else {
					fmt.Fprintf(stderr, "bench: %5.0fs scheduled %d/%d\n", now.Sub(start).Seconds(), i, n)
				}
			}
		}
	}
	return i, nil
}

// peak keeps the highest rate of first closes over the progress intervals
// (about a second each).
type peak struct {
	max  int
	last time.Time
}

func (p *peak) take(t *embedded.Tally) embedded.Percentiles {
	w, n := t.TakeWindow()
	now := time.Now()
	if !p.last.IsZero() {
		if d := now.Sub(p.last).Seconds(); d >= 0.5 {
			p.max = max(p.max, int(float64(n)/d))
		}
	}
	p.last = now
	return w
}

// memoryStep is one sample of the memory run.
type memoryStep struct {
	Pending   int     `json:"pending"`
	RouterRSS float64 `json:"router_rss_mb"`
}

// benchMemory schedules orders due far ahead and samples the router's RSS as
// the pending count passes each step.
func benchMemory(ctx context.Context, c *benchConfig, s *tiers.Scheduler, prod *kgo.Client, rt *child, stdout, stderr io.Writer) error {
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
		// Let the router fetch and pause; then take the median of a few
		// samples, to not report a GC cycle's peak or trough.
		settle := time.NewTimer(5 * time.Second)
		select {
		case <-ctx.Done():
			settle.Stop()
			return ctx.Err()
		case <-settle.C:
		}
		var samples []int64
		for range 5 {
			samples = append(samples, int64(rt.rss()*1000))
			t := time.NewTimer(200 * time.Millisecond)
			<-t.C
		}
		steps = append(steps, memoryStep{Pending: scheduled, RouterRSS: float64(embedded.PercentilesOf(samples).P50) / 1000})
		fmt.Fprintf(stderr, "bench: %d pending, router RSS %.1f MB\n", scheduled, steps[len(steps)-1].RouterRSS)
	}
	growth := steps[len(steps)-1].RouterRSS - steps[0].RouterRSS
	err := json.NewEncoder(stdout).Encode(struct {
		Mode      string       `json:"mode"`
		Tiers     string       `json:"tiers"`
		Delay     string       `json:"pending_delay"`
		Steps     []memoryStep `json:"steps"`
		GrowthMB  float64      `json:"router_rss_growth_mb"`
		PeakRSSMB float64      `json:"router_peak_rss_mb"`
	}{"memory", c.tiers.String(), c.pendingDelay.String(), steps, round(growth), rt.peakRSS()})
	if err != nil {
		return err
	}
	if c.maxGrowthMB > 0 && growth > c.maxGrowthMB {
		return fmt.Errorf("bench: router RSS grew %.1f MB from %d to %d pending deadlines, more than --max-growth-mb %.0f",
			growth, steps[0].Pending, steps[len(steps)-1].Pending, c.maxGrowthMB)
	}
	return nil
}

func waitGroups(ctx context.Context, broker *kfake.Cluster) error {
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, g := range []string{router.DefaultGroup, canceller.DefaultGroup} {
		if _, err := broker.WaitGroupStable(wctx, g, 1); err != nil {
			return fmt.Errorf("bench: group %s did not form: %w", g, err)
		}
	}
	return nil
}

func round(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// child is a service run as a process of this binary.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
	hwm  float64 // last VmHWM read, MB
}

func spawn(ctx context.Context, stderr io.Writer, args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s: %w", args[0], err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(c.done) }()
	return c, nil
}

// stop sends SIGTERM and waits, then kills after a grace period.
func (c *child) stop() {
	c.peakRSS()
	c.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.cmd.Process.Kill()
		<-c.done
	}
}

// status reads a "Vm...:" line of /proc/<pid>/status in MB.
func (c *child) status(key string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return round(kb / 1024)
		}
	}
	return 0
}

func (c *child) rss() float64 { return c.status("VmRSS") }

func (c *child) peakRSS() float64 {
	if v := c.status("VmHWM"); v > 0 {
		c.hwm = v
	}
	return c.hwm
}

// cpu returns the user+system CPU seconds of the process so far.
func (c *child) cpu() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are fields 14 and 15 of the line, 12 and 13 after ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return round((ut + st) / 100) // clock ticks; 100 per second on Linux
}
