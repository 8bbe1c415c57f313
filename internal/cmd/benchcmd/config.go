package benchcmd

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// benchConfig is the configuration of a bench run, from its flags.
type benchConfig struct {
	orders       int
	rate         int
	delays       string
	tiers        tiers.Table
	partitions   int
	timeout      time.Duration
	latency      time.Duration // added to each of the embedded broker's answers
	pendingSteps []int
	cancelSteps  []int // cancellations memory mode
	pendingDelay time.Duration
	routerArgs   []string

	burst     int           // deadlines due at one instant; 0: a throughput run
	burstLead time.Duration // from the start of scheduling to the burst's due instant; 0: burstLeadFor
	closer    string        // log, postgres or mysql
	dsn       string        // the database of a postgres or mysql closer; loopback only
	keepTable bool

	cancellerArgs []string

	kill         string // "", "router" or "canceller"
	killAt       time.Duration
	restartAfter time.Duration
	instanceIDs  bool

	cancelRatio float64       // the share of orders cancelled after they are scheduled
	openTxn     time.Duration // how long a transaction on the cancellations topic stays open; 0: none
	cancelFlood int           // bytes a second of cancellations with keys no task id has; 0: none

	hostileRate int
	bombs       int
	bigBatches  int

	maxP99      time.Duration
	maxLate     time.Duration
	maxRSS      float64
	maxGrowthMB float64
	maxProduces float64
}

// parseBench parses and validates the flags of a bench run.
func parseBench(args []string, stderr io.Writer) (*benchConfig, error) {
	var (
		c        benchConfig
		rawTiers string
		steps    []string
	)
	fs := cli.NewFlagSet("bench", benchUsage)
	fs.SetOutput(stderr)
	var cancelSteps []string
	c.register(fs, &rawTiers, &steps)
	fs.StringsVar(&cancelSteps, "cancellation-steps", "", nil,
		"memory mode: cancellation counts at which to sample the router's RSS once its store holds them, e.g. 10000,1000000")
	if err := service.ParseArgs(fs, args); err != nil {
		return nil, err
	}
	errs := c.validate(rawTiers, steps)
	c.cancelSteps = parseSteps(&errs, "cancellation-steps", cancelSteps)
	if len(c.cancelSteps) > 0 && (len(c.pendingSteps) > 0 || c.burst > 0 || c.kill != "" || c.hostile() || c.closer != closerLog) {
		errs.Add("cancellation-steps", "the cancellations memory mode takes no other mode, --kill, hostile records nor a database --closer")
	}
	if c.cancelRatio > 0 && (c.burst > 0 || c.closer != closerLog || len(c.pendingSteps) > 0) {
		errs.Add("cancel-ratio", "goes with a throughput run of the log closer only")
	}
	if (c.openTxn > 0 || c.cancelFlood > 0) && (c.burst > 0 || len(c.pendingSteps) > 0 || len(c.cancelSteps) > 0) {
		errs.Add("open-txn", "--open-txn and --cancel-flood go with a throughput run only")
	}
	if err := fs.Explain(errs.Err()); err != nil {
		return nil, service.UsageError{Err: err}
	}
	return &c, nil
}

// workload draws order delays.
type workload func(r *rand.Rand) time.Duration

// newWorkload returns the workload of --delays: mix or a duration.
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

// register registers the flags of c on fs; --tiers and --pending-steps go
// to rawTiers and steps, for validate.
func (c *benchConfig) register(fs *cli.FlagSet, rawTiers *string, steps *[]string) {
	fs.IntVar(&c.orders, "orders", "", 200_000, "orders to schedule")
	fs.IntVar(&c.rate, "rate", "", 10_000, "orders scheduled per second")
	fs.StringVar(&c.delays, "delays", "", "mix", "workload: mix, or a duration such as 5s")
	fs.StringVar(rawTiers, "tiers", "", "", "delay tiers (default 1s,2s,5s,10s,30s; 1m,5m,30m with --pending-steps)")
	fs.IntVar(&c.partitions, "partitions", "", 6, "partitions per topic")
	fs.DurationVar(&c.timeout, "timeout", "", 10*time.Minute, "give up (and report what is lost) after this long")
	fs.DurationVar(&c.latency, "broker-latency", "", 0, "the embedded broker's answers reach every client this much later, as over a network (0: loopback's)")
	fs.StringsVar(steps, "pending-steps", "", nil, "memory mode: pending deadline counts at which to sample the router's RSS, e.g. 10000,100000,1000000")
	fs.DurationVar(&c.pendingDelay, "pending-delay", "", 45*time.Minute, "memory mode: how far ahead the pending orders are due")
	fs.StringsVar(&c.routerArgs, "router-args", "", nil, "extra router flags, comma-separated (e.g. --max-held-per-partition=200)")
	fs.IntVar(&c.burst, "burst", "", 0, "burst mode: schedule this many deadlines due at one instant (0: a throughput run of --orders)")
	fs.DurationVar(&c.burstLead, "burst-lead", "", 0, "burst mode: the due instant, from the start of scheduling (default 5s + 20µs per deadline)")
	fs.StringVar(&c.closer, "closer", "", "log", "the canceller's closer: log, or postgres or mysql to close real orders in a table the bench creates")
	fs.StringVar(&c.dsn, "dsn", cli.Env("bench-dsn"), "", "database of --closer postgres or mysql, loopback only (default "+defaultDSN[closerPostgres]+", or "+defaultDSN[closerMySQL]+")")
	fs.BoolVar(&c.keepTable, "keep-table", "", false, "keep the orders table of --closer postgres or mysql after the run")
	fs.StringsVar(&c.cancellerArgs, "canceller-args", "", nil, "extra canceller flags, comma-separated (e.g. --max-in-flight=50)")
	fs.StringVar(&c.kill, "kill", "", "", "SIGKILL this `process` (router or canceller) at --kill-at and start it again")
	fs.DurationVar(&c.killAt, "kill-at", "", 0, "when to kill, from the start (default: halfway through scheduling)")
	fs.DurationVar(&c.restartAfter, "restart-after", "", 300*time.Millisecond, "how long the killed process stays down")
	fs.BoolVar(&c.instanceIDs, "instance-ids", "", false, "give the router and the canceller an --instance-id (static membership)")
	fs.Float64Var(&c.cancelRatio, "cancel-ratio", "", 0, "share of the orders (0 to 1) cancelled right after they are scheduled; lateness is that of the others")
	fs.DurationVar(&c.openTxn, "open-txn", "", 0, "a transaction on the cancellations topic writes the cancellation of every 100th order for this long, then aborts (0: none)")
	fs.IntVar(&c.cancelFlood, "cancel-flood", "", 0, "bytes a second of cancellations whose keys (900 KiB) no task id has, while the orders are scheduled (0: none)")
	fs.IntVar(&c.hostileRate, "hostile-rate", "", 0, "records with a value just under the size limit per second, next to the orders")
	fs.IntVar(&c.bombs, "bombs", "", 0, "zstd batches that decompress to 256 MiB, one per second")
	fs.IntVar(&c.bigBatches, "big-batches", "", 0, "zstd batches that decompress to just under the 16 MiB cap, sent at once into one partition")
	fs.DurationVar(&c.maxP99, "max-p99", "", 0, "fail when lateness p99 exceeds this (0: no bound)")
	fs.DurationVar(&c.maxLate, "max-lateness", "", 0, "fail when the largest lateness exceeds this (0: no bound)")
	fs.Float64Var(&c.maxRSS, "max-router-rss-mb", "", 0, "fail when the router's peak RSS exceeds this many MB (0: no bound)")
	fs.Float64Var(&c.maxGrowthMB, "max-growth-mb", "", 0, "memory mode: fail when the router's RSS grows by more than this many MB (0: no bound)")
	fs.Float64Var(&c.maxProduces, "max-produces-per-deadline", "", 0, "fail when the records produced into the delay topics per deadline scheduled exceed this (0: no bound)")
}

// validate parses rawTiers and steps into c and reports every problem.
func (c *benchConfig) validate(rawTiers string, steps []string) cli.Problems {
	var errs cli.Problems
	if rawTiers == "" {
		rawTiers = "1s,2s,5s,10s,30s"
		if len(steps) > 0 {
			rawTiers = tiers.DefaultTiers
		}
	}
	t, err := flags.ParseTiers(rawTiers)
	errs.Join(err)
	c.tiers = t
	errs.IntRange("orders", c.orders, 1, 10_000_000)
	errs.IntRange("rate", c.rate, 1, 1_000_000)
	if _, err := newWorkload(c.delays); err != nil {
		errs.Add("delays", "%v", err)
	}
	errs.IntRange("partitions", c.partitions, 1, 1000)
	c.pendingSteps = parseSteps(&errs, "pending-steps", steps)
	if c.timeout <= 0 {
		errs.Add("timeout", "must be positive")
	}
	if c.latency < 0 || c.latency > time.Second {
		errs.Add("broker-latency", "%v: want 0 up to 1s", c.latency)
	}
	switch c.kill {
	case "", "router", "canceller":
	default:
		errs.Add("kill", "%q: want router or canceller", c.kill)
	}
	if c.killAt < 0 || c.restartAfter < 0 {
		errs.Add("kill-at", "must not be negative (nor --restart-after)")
	}
	if c.cancelRatio < 0 || c.cancelRatio > 1 {
		errs.Add("cancel-ratio", "%v: want 0 to 1", c.cancelRatio)
	}
	errs.IntRange("hostile-rate", c.hostileRate, 0, 1000)
	errs.IntRange("cancel-flood", c.cancelFlood, 0, 1<<30)
	if c.openTxn < 0 || c.openTxn > 10*time.Minute {
		errs.Add("open-txn", "%v: want 0 (none) up to 10m", c.openTxn)
	}
	errs.IntRange("bombs", c.bombs, 0, 100)
	errs.IntRange("big-batches", c.bigBatches, 0, 1000)
	if c.maxProduces < 0 {
		errs.Add("max-produces-per-deadline", "%v: want 0 (no bound) or more", c.maxProduces)
	}
	if c.maxProduces > 0 && (len(c.pendingSteps) > 0 || len(c.cancelSteps) > 0) {
		errs.Add("max-produces-per-deadline", "goes with a throughput or burst run: in the memory modes no deadline is due")
	}
	if len(c.pendingSteps) > 0 && (c.kill != "" || c.hostile() || c.closer != closerLog) {
		errs.Add("pending-steps", "the memory mode takes neither --kill, hostile records nor a database --closer")
	}
	c.validateBurst(&errs)
	return errs
}

// validateBurst checks --burst, --burst-lead, --closer and --dsn.
func (c *benchConfig) validateBurst(errs *cli.Problems) {
	errs.IntRange("burst", c.burst, 0, 10_000_000)
	if c.burstLead < 0 || c.burstLead > time.Hour {
		errs.Add("burst-lead", "%v: want 0 (the default) up to 1h", c.burstLead)
	}
	if c.burst > 0 && (len(c.pendingSteps) > 0 || c.kill != "" || c.hostile()) {
		errs.Add("burst", "the burst mode takes neither --pending-steps, --kill nor hostile records")
	}
	switch c.closer {
	case closerLog:
		// --dsn, which may come from the environment, is not used.
		if c.keepTable {
			errs.Add("keep-table", "goes with --closer postgres or mysql")
		}
	case closerPostgres, closerMySQL:
		if c.dsn == "" {
			c.dsn = defaultDSN[c.closer]
		}
		if err := checkLoopback(c.closer, c.dsn); err != nil {
			errs.Add("dsn", "%v", err)
		}
	default:
		errs.Add("closer", "%q: want log, postgres or mysql", c.closer)
	}
}

// hostile reports whether the run sends hostile records next to the orders.
func (c *benchConfig) hostile() bool {
	return c.hostileRate > 0 || c.bombs > 0 || c.bigBatches > 0
}

// burstLeadFor is the default --burst-lead for n deadlines: 5 s, and 20 µs
// per deadline for scheduling them (1,000,000: 25 s).
func burstLeadFor(n int) time.Duration {
	return 5*time.Second + time.Duration(n)*20*time.Microsecond
}

// parseSteps parses the increasing counts of a steps flag.
func parseSteps(errs *cli.Problems, flag string, raw []string) []int {
	var steps []int
	for _, s := range raw {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10_000_000 || (len(steps) > 0 && n <= steps[len(steps)-1]) {
			errs.Add(flag, "%q: want increasing counts from 1 to 10000000", s)
			return nil
		}
		steps = append(steps, n)
	}
	return steps
}

// bounds checks the --max-* bounds, and that no cancelled order was closed.
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
	if err := c.producesBound(res.delayFigures); err != nil {
		errs = append(errs, err)
	}
	if res.Writers != nil && res.Writers.Leaked > 0 {
		errs = append(errs, fmt.Errorf("%d orders cancelled before they were due were closed", res.Writers.Leaked))
	}
	if len(errs) > 0 {
		return fmt.Errorf("bench: %w", errors.Join(errs...))
	}
	return nil
}

// producesBound checks --max-produces-per-deadline against f, nil when the
// delay topics could not be read.
func (c *benchConfig) producesBound(f *delayFigures) error {
	switch {
	case c.maxProduces <= 0:
		return nil
	case f == nil:
		return errors.New("produces per deadline not measured, --max-produces-per-deadline not checked")
	case f.ProducesPerDeadline > c.maxProduces:
		return fmt.Errorf("%.2f produces per deadline into the delay topics, more than --max-produces-per-deadline %v", f.ProducesPerDeadline, c.maxProduces)
	}
	return nil
}
