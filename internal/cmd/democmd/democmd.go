package democmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

const demoUsage = `hourglass demo runs a complete Hourglass pipeline on this machine, with
nothing else installed: an embedded Kafka broker (kfake) on 127.0.0.1, the
topics, a router, a canceller with an in-memory order store, and a demo order
source that schedules orders with delays of a few seconds and pays some of
them before their deadline. It prints progress every second and a summary.

With --serve the pipeline keeps running after the demo, as a local broker
for your own producers, until Ctrl-C.

With --store-addr the in-memory order store is served over HTTP on loopback,
so that a load test can pay its orders before their deadline:

  PUT  /orders/{id}      body "unpaid" or "paid": sets the order's state (204)
  POST /orders/{id}/pay  pays an unpaid order (204); 409 with the state when
                         it is not unpaid (CLOSED: the close won), 404 when unknown
  GET  /orders/{id}      the order's state (200), 404 when unknown

Orders the store does not know are closed when due.

Usage: hourglass demo [flags]

` + cli.FlagsHeading + "\n"

type demoConfig struct {
	listen     string
	port       int
	tiers      tiers.Table
	orders     int
	rate       float64
	minDelay   time.Duration
	maxDelay   time.Duration
	paid       float64
	serve      bool
	partitions int
	logLevel   string
	storeAddr  string
}

func parseDemo(args []string, stderr io.Writer) (*demoConfig, error) {
	var (
		c        demoConfig
		rawTiers string
	)
	fs := cli.NewFlagSet("demo", demoUsage)
	fs.SetOutput(stderr)
	fs.StringVar(&c.listen, "listen", "", "127.0.0.1:9092", "`address` of the embedded broker (loopback only; port 0 picks a free one)")
	fs.StringVar(&rawTiers, "tiers", "", "1s,2s,5s,10s", "delay tiers")
	fs.IntVar(&c.orders, "orders", "", 300, "demo orders to schedule (0: none, with --serve)")
	var rate int
	fs.IntVar(&rate, "rate", "", 50, "demo orders scheduled per second")
	fs.DurationVar(&c.minDelay, "min-delay", "", 500*time.Millisecond, "shortest demo delay (below the smallest tier, it waits in the router's timer)")
	fs.DurationVar(&c.maxDelay, "max-delay", "", 25*time.Second, "longest demo delay (beyond the largest tier, it hops)")
	var paidPct int
	fs.IntVar(&paidPct, "paid-percent", "", 20, "percentage of demo orders paid before their deadline")
	fs.BoolVar(&c.serve, "serve", "", false, "keep the pipeline running after the demo, until Ctrl-C")
	fs.IntVar(&c.partitions, "partitions", "", 3, "partitions per topic")
	fs.StringVar(&c.logLevel, "log-level", "", "warn", "log `level` of the router and canceller")
	fs.StringVar(&c.storeAddr, "store-addr", "", "", "`address` of the order store's HTTP endpoint (loopback only; port 0 picks a free one); empty: none")
	if err := service.ParseArgs(fs, args); err != nil {
		return nil, err
	}
	var errs cli.Problems
	port, err := embedded.ListenPort(c.listen)
	if err != nil {
		errs.Add("listen", "%v", err)
	}
	c.port = port
	c.tiers, err = flags.ParseTiers(rawTiers)
	errs.Join(err)
	errs.IntRange("orders", c.orders, 0, 1_000_000)
	errs.IntRange("rate", rate, 1, 100_000)
	c.rate = float64(rate)
	if c.minDelay < 0 || c.maxDelay < c.minDelay || c.maxDelay > time.Hour {
		errs.Add("max-delay", "want 0 <= --min-delay <= --max-delay <= 1h")
	}
	errs.IntRange("paid-percent", paidPct, 0, 100)
	c.paid = float64(paidPct) / 100
	errs.IntRange("partitions", c.partitions, 1, 1000)
	if _, err := service.ParseLevel(c.logLevel); err != nil {
		errs.Add("log-level", "%v", err)
	}
	if c.storeAddr != "" {
		if err := checkLoopback(c.storeAddr); err != nil {
			errs.Add("store-addr", "%v", err)
		}
	}
	if c.orders == 0 && !c.serve {
		errs.Add("orders", "0 orders without --serve has nothing to do")
	}
	if err := fs.Explain(errs.Err()); err != nil {
		return nil, service.UsageError{Err: err}
	}
	return &c, nil
}

// Run is the `hourglass demo` command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseDemo(args, stderr)
	if err != nil {
		return err
	}
	level, _ := service.ParseLevel(c.logLevel)
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	broker, addr, err := embedded.StartBroker(c.port)
	if err != nil {
		return err
	}
	defer broker.Close()
	seed := []kgo.Opt{kgo.SeedBrokers(addr)}
	if _, err := topics.Provision(ctx, seed, topics.Specs(topics.Default(tiers.DefaultPrefix, c.tiers), int32(c.partitions), -1), true); err != nil {
		return err
	}

	store := &closer.Memory{CloseUnknown: true}
	p, err := startPipeline(ctx, seed, c.tiers, store, log)
	if err != nil {
		return err
	}
	defer func() { _ = p.stop() }() // the demo reports what it saw, not how its pipeline stopped

	storeLine := ""
	if c.storeAddr != "" {
		stop, addr, err := serveStore(c.storeAddr, store, log)
		if err != nil {
			return err
		}
		defer stop()
		storeLine = fmt.Sprintf("  order store API on http://%s: PUT /orders/{id} (body paid or unpaid), POST /orders/{id}/pay, GET /orders/{id}\n", addr)
	}

	printBanner(stdout, c, addr, storeLine)

	t := embedded.NewTally()
	demoIDs := make(map[string]bool, c.orders)
	t.OnEvent = func(ev outcome.Event, first bool) {
		if c.serve && !demoIDs[ev.TaskID] {
			fmt.Fprintln(stdout, outcomeLine(ev))
		}
	}
	defer embedded.GoWatch(ctx, seed, tiers.OutcomesTopic(tiers.DefaultPrefix), t)()

	if c.orders > 0 {
		if err := scheduleOrders(ctx, c, seed, store, t, demoIDs, stdout); err != nil {
			return err
		}
	}
	if c.serve && ctx.Err() == nil {
		fmt.Fprintf(stdout, "\nThe pipeline keeps running on %s; press Ctrl-C to stop.\n", addr)
		<-ctx.Done()
	}
	return nil
}

// runDemo schedules the demo orders, pays some, prints progress every second
// and the summary when every order has an outcome.
func runDemo(ctx context.Context, c *demoConfig, s *tiers.Scheduler, store *closer.Memory, run string, t *embedded.Tally, stdout io.Writer) error {
	start := time.Now()
	scheduled := 0
	headed := false // progressHeader printed
	produceErr := make(chan error, 1)
	payments := make([]*time.Timer, 0, c.orders)
	defer func() {
		for _, p := range payments {
			p.Stop()
		}
	}()
	interval := time.Duration(float64(time.Second) / c.rate)
	next := time.NewTimer(0)
	defer next.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	deadline := time.NewTimer(time.Duration(float64(c.orders)/c.rate*float64(time.Second)) + c.maxDelay + 60*time.Second)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(stdout, "\ninterrupted")
			printSummary(stdout, c.orders, scheduled, t, time.Since(start))
			return nil
		case err := <-produceErr:
			return err
		case <-deadline.C:
			printSummary(stdout, c.orders, scheduled, t, time.Since(start))
			return errors.New("demo: orders still pending at the deadline")
		case <-next.C:
			if pay := placeOrder(ctx, c, s, store, fmt.Sprintf("demo-%s-%d", run, scheduled), produceErr); pay != nil {
				payments = append(payments, pay)
			}
			scheduled++
			if scheduled < c.orders {
				next.Reset(interval)
			}
		case <-tick.C:
			snap := t.Snapshot()
			if !headed {
				fmt.Fprintln(stdout, progressHeader)
				headed = true
			}
			fmt.Fprintln(stdout, progress{
				elapsed: time.Since(start), scheduled: scheduled, orders: c.orders,
				closed: snap.Outcomes[outcome.Closed], paid: snap.Outcomes[outcome.Skipped], pending: scheduled - snap.Tasks,
				p50: snap.Late.P50, p99: snap.Late.P99, max: snap.Late.Max,
			}.line())
			if scheduled == c.orders && snap.Tasks >= c.orders {
				printSummary(stdout, c.orders, scheduled, t, time.Since(start))
				return nil
			}
		}
	}
}

func printSummary(w io.Writer, orders, scheduled int, t *embedded.Tally, took time.Duration) {
	s := t.Snapshot()
	fmt.Fprintf(w, "\nSummary after %.0fs: %s orders scheduled, %s closed, %s skipped as paid, %s already closed, %s pending\n",
		took.Seconds(), thousands(int64(scheduled)), thousands(int64(s.Outcomes[outcome.Closed])), thousands(int64(s.Outcomes[outcome.Skipped])),
		thousands(int64(s.Outcomes[outcome.AlreadyClosed])), thousands(int64(scheduled-s.Tasks)))
	fmt.Fprintf(w, "Lateness (close time - due time): p50 %d ms, p99 %d ms, max %d ms; closed early: %d; duplicate outcomes: %d\n",
		s.Late.P50, s.Late.P99, s.Late.Max, s.Early, s.Duplicates)
}

// printBanner prints where the demo runs and, with --serve, how to use it
// from another terminal: the environment the hourglass commands and the
// examples/ producers read, and kcat lines that partition as they do.
func printBanner(stdout io.Writer, c *demoConfig, addr, storeLine string) {
	fmt.Fprintf(stdout, `Hourglass demo: embedded Kafka broker on %s, tiers %s
  delay topics: %v
  router and canceller running; orders close in an in-memory store.
%s`, addr, c.tiers, c.tiers.Topics(tiers.DefaultPrefix), storeLine)
	if !c.serve {
		fmt.Fprint(stdout, "The pipeline stops after the demo; with --serve it keeps running for your own producers.\n\n")
		return
	}
	example := tiers.Topic(tiers.DefaultPrefix, c.tiers.For(5*time.Second))
	fmt.Fprintf(stdout, `
From another terminal, point the hourglass commands and the examples/ producers at it:
  export HOURGLASS_BROKERS=%s HOURGLASS_TIERS=%s HOURGLASS_TOPIC_PREFIX=%s
  hourglass schedule --id order-1 --in 5s
  hourglass status order-1
Schedule an order with kcat (due in 5 s; murmur2 partitions it as the Go and Java clients do):
  echo '{"order":"order-1"}' | kcat -P -b %s -X partitioner=murmur2_random -t %s -k order-1 -H "hourglass-due=$(( $(date +%%s) * 1000 + 5000 ))"
Watch the outcomes:
  kcat -C -b %s -t %s -o beginning -q -u

`, addr, c.tiers, tiers.DefaultPrefix, addr, example, addr, tiers.OutcomesTopic(tiers.DefaultPrefix))
}

// scheduleOrders schedules the demo orders, noting their ids in demoIDs,
// and runs the demo until every order has an outcome.
func scheduleOrders(ctx context.Context, c *demoConfig, seed []kgo.Opt, store *closer.Memory, t *embedded.Tally, demoIDs map[string]bool, stdout io.Writer) error {
	prod, err := kgo.NewClient(seed...)
	if err != nil {
		return err
	}
	defer prod.Close()
	s, err := tiers.NewScheduler(prod, c.tiers)
	if err != nil {
		return err
	}
	run := fmt.Sprintf("%x", time.Now().UnixMilli()&0xffffff)
	for i := 0; i < c.orders; i++ {
		demoIDs[fmt.Sprintf("demo-%s-%d", run, i)] = true
	}
	return runDemo(ctx, c, s, store, run, t, stdout)
}

// placeOrder schedules one demo order's deadline, a random delay between
// --min-delay and --max-delay away, and for a share --paid of the orders a
// payment before it; it returns the payment's timer, or nil. A produce that
// fails is sent to failed unless one is waiting there already.
func placeOrder(ctx context.Context, c *demoConfig, s *tiers.Scheduler, store *closer.Memory, id string, failed chan<- error) *time.Timer {
	delay := c.minDelay + time.Duration(rand.Int64N(int64(c.maxDelay-c.minDelay)+1))
	store.Put(id, closer.StateUnpaid)
	var pay *time.Timer
	if rand.Float64() < c.paid {
		// The customer pays somewhere before the deadline.
		pay = time.AfterFunc(time.Duration(rand.Float64()*0.8*float64(delay)), func() { store.Pay(id) })
	}
	task := tiers.Task{ID: id, Due: time.Now().Add(delay), Kind: "order-timeout", Payload: fmt.Appendf(nil, `{"order":%q}`, id)}
	s.ScheduleAsync(ctx, task, func(_ *kgo.Record, err error) {
		if err != nil && ctx.Err() == nil {
			select {
			case failed <- err:
			default:
			}
		}
	})
	return pay
}
