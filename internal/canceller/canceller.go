package canceller

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/time/rate"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/telemetry"
)

// Canceller consumes due tasks and closes them. Create one with New and
// start it with Run.
type Canceller struct {
	cfg      Config
	clock    clock.Clock
	log      *slog.Logger
	routes   map[string]Route
	fallback *Route // closes kinds without a route; nil dead-letters them
	limit    *rate.Limiter
	cl       *kgo.Client
	member   *consumer.Member
	repurge  *kafka.Repurger // purges topics created again from the producer

	mu           sync.Mutex // guards the fields below
	parts        map[tp]*partition
	keys         map[string][]job // task ids with a close running, and the records waiting behind it
	pending      int              // records taken whose close has not finished: closing, or waiting for their turn or the rate limit
	queued       int              // the pending records waiting for their turn behind a close of the same task id
	pendingBytes int              // the bytes of the pending records (record.Size)
	unacked      int              // records taken and not finished: pending, or closed with records onward not yet acknowledged
	fatal        error            // stops the canceller: another member took its instance id
	wake         chan struct{}    // a record finished; capacity 1

	work sync.WaitGroup // one per record taken and not finished

	// idle hands a task id and its first record to a close goroutine
	// waiting for more work (see serve); waiting counts those goroutines,
	// and stopped, closed when Run returns, tells them to exit.
	idle    chan closeWork
	waiting atomic.Int64
	stopped chan struct{}

	ready   atomic.Bool
	stats   stats
	metrics *metrics
}

type tp struct {
	topic     string
	partition int32
}

// partition is the state of one assigned partition.
type partition struct {
	// ctx is canceled when the partition is revoked or lost, or at the
	// stop: its records not yet closing are dropped, uncommitted, for the
	// next owner, and produces waiting to be tried again are given up.
	ctx    context.Context
	cancel context.CancelFunc
	work   sync.WaitGroup // its records taken and not finished
}

// job is a record taken from a partition.
type job struct {
	r    *kgo.Record
	p    *partition
	mark consumer.Mark // finishes the record's offset
	size int           // record.Size of r, counted in pendingBytes
}

// Route is how the tasks of one kind are closed.
type Route struct {
	// Closer applies the closes.
	Closer closer.Closer
	// Limit bounds this kind's closes per second, on top of
	// Config.RateLimit; nil means no limit of its own.
	Limit *rate.Limiter
}

// Options are the collaborators of a Canceller.
type Options struct {
	// Kafka are the connection options (brokers, TLS, SASL, client id).
	Kafka []kgo.Opt
	// Hooks observe the canceller's Kafka client (client metrics); default
	// none.
	Hooks []kgo.Hook
	// Routes close the tasks of each kind (the hourglass-kind header, or
	// Config.DefaultKind).
	Routes map[string]Route
	// Closer closes the tasks of kinds without a route. Default: the log
	// closer when Routes is empty; otherwise none, and such a task goes to
	// the dead-letter topic (reason unknown_kind).
	Closer closer.Closer
	// Clock is the time source; default the wall clock.
	Clock clock.Clock
	// Logger receives the canceller's logs; default slog.Default().
	Logger *slog.Logger
	// Registerer receives the canceller's Prometheus series; default none.
	Registerer prometheus.Registerer
}

// Dead-letter reasons of the canceller, besides the record contract's
// (tiers.Reason).
const (
	reasonCloseFailed      = "close_failed"      // a permanent close error
	reasonRetriesExhausted = "retries_exhausted" // the last attempt failed
	reasonUnknownKind      = "unknown_kind"      // no closer for the task's kind
	reasonProduceFailed    = "produce_failed"    // the retry record was refused for good
)

// New returns a canceller for cfg; cfg is completed with WithDefaults and
// validated.
func New(cfg Config, o Options) (*Canceller, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Instance == "" {
		cfg.Instance = cfg.InstanceID
	}
	if cfg.Instance == "" {
		cfg.Instance, _ = os.Hostname()
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = o.maxInFlight()
	}
	c := &Canceller{
		metrics: newMetrics(o.Registerer, kinds(cfg.DefaultKind, o.Routes)),
		cfg:     cfg,
		clock:   o.Clock,
		log:     o.Logger,
		routes:  o.Routes,
		parts:   make(map[tp]*partition),
		keys:    make(map[string][]job),
		wake:    make(chan struct{}, 1),
		idle:    make(chan closeWork),
		stopped: make(chan struct{}),
	}
	if o.Closer != nil {
		c.fallback = &Route{Closer: o.Closer}
	}
	if cfg.RateLimit > 0 {
		c.limit = rate.NewLimiter(rate.Limit(cfg.RateLimit), cfg.RateBurst)
	}
	opts := clientOpts()
	if len(o.Hooks) > 0 {
		opts = append(opts, kgo.WithHooks(o.Hooks...))
	}
	member, err := consumer.New(consumer.Config{
		Group: consumer.Group{Name: cfg.Group, Topics: cfg.Topics, InstanceID: cfg.InstanceID, SessionTimeout: cfg.SessionTimeout},
		Kafka: o.Kafka, Opts: opts, CommitInterval: cfg.CommitInterval,
		// A revoke waits for the closes running, each bounded by
		// CloseTimeout, which ShutdownTimeout covers.
		RevokeTimeout: cfg.ShutdownTimeout, Release: c.letGo,
		Clock: c.clock, Logger: c.log, Registerer: o.Registerer,
	})
	if err != nil {
		return nil, fmt.Errorf("canceller: %w", err)
	}
	c.member, c.cl = member, member.Client()
	c.repurge = kafka.NewRepurger(c.cl, c.log)
	return c, nil
}

// Fetch bounds of the canceller's client. A fetch is decoded into records
// as soon as it arrives and waits in the client until the canceller has
// taken every record of it, so in a burst these bounds, not kgo's defaults
// (50 MiB a fetch, 1 MiB a partition), set the canceller's memory. A
// megabyte of compressed small records is still tens of thousands of
// closes, seconds of work for any closer but the log closer, so the round
// trip between two fetches costs little. A larger batch is still fetched,
// one at a time. docs/benchmarks.md has the figures.
const (
	fetchMaxBytes          = 1 << 20
	fetchMaxPartitionBytes = 256 << 10 // several partitions share a fetch
)

// produceLinger is how long the canceller's client gathers records before
// it produces them. What this client produces (outcome events, retries,
// dead letters) is on no deadline's path: the close has happened. So it
// lingers longer than kgo's 10 ms, for fewer and larger produce requests
// (docs/benchmarks.md); a record's offset is committed at most this much
// later.
const produceLinger = 50 * time.Millisecond

// clientOpts returns the canceller's fetch and producer settings. One fetch
// is in flight or waiting per broker (kgo's default).
func clientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.FetchMaxBytes(fetchMaxBytes),
		kgo.FetchMaxPartitionBytes(fetchMaxPartitionBytes),
		kgo.ProducerLinger(produceLinger),
	}
}

// maxInFlight is the default of Config.MaxInFlight for the closers of o:
// DefaultMaxInFlightBatched when every one batches, else
// DefaultMaxInFlight.
func (o Options) maxInFlight() int {
	if o.Closer != nil && !closer.Batches(o.Closer) {
		return DefaultMaxInFlight
	}
	for _, r := range o.Routes {
		if !closer.Batches(r.Closer) {
			return DefaultMaxInFlight
		}
	}
	return DefaultMaxInFlightBatched
}

// withDefaults returns o with its defaults set, or an error for a route
// without a closer.
func (o Options) withDefaults() (Options, error) {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Closer == nil && len(o.Routes) == 0 {
		o.Closer = closer.Log{Logger: o.Logger}
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	for kind, r := range o.Routes {
		if r.Closer == nil {
			return o, fmt.Errorf("canceller: route %q has no closer", kind)
		}
	}
	return o, nil
}

// kinds returns the kinds with series of their own: the default kind and
// each routed one.
func kinds(defaultKind string, routes map[string]Route) []string {
	out := []string{defaultKind}
	for kind := range routes {
		if kind != defaultKind {
			out = append(out, kind)
		}
	}
	return out
}

// readiness lists what the canceller needs, besides consuming, to be
// ready: one named condition a line.
func (c *Canceller) readiness() []telemetry.Condition {
	return []telemetry.Condition{
		{Name: "fetch", Check: c.member.FetchFailing},
	}
}

// NotReady returns why the canceller is not ready, or nil: it is starting
// or stopping, or a condition of readiness fails (its fetches have failed
// for consumer.FetchFailingAfter).
func (c *Canceller) NotReady() error { return telemetry.NotReady(c.ready.Load(), c.readiness()...) }

// Ready reports whether NotReady is nil.
func (c *Canceller) Ready() bool { return c.NotReady() == nil }

// MaxInFlight is how many records close or wait at once: Config's, or the
// default New chose for the closers.
func (c *Canceller) MaxInFlight() int { return c.cfg.MaxInFlight }

// Client returns the canceller's Kafka client.
func (c *Canceller) Client() *kgo.Client { return c.cl }

// Run consumes and closes until ctx is canceled, then stops gracefully
// within Config.ShutdownTimeout. It returns nil after a graceful stop, and
// an error when another member took its instance id. It closes the client
// before it returns; with an instance id it then leaves the group
// explicitly, so that the other cancellers take its partitions at once.
func (c *Canceller) Run(ctx context.Context) error {
	// Closes run on a context the stop never cancels: a close in progress
	// when the stop begins finishes (each is bounded by CloseTimeout, and
	// the stop waits at least that long), so it is not cut off half
	// applied.
	closeCtx := context.WithoutCancel(ctx)
	c.member.Start()

	c.ready.Store(true)
	err := c.consume(ctx, closeCtx)
	c.ready.Store(false)

	// Shutdown order: polling has stopped (no record is taken after ctx is
	// canceled); records waiting for their turn or for the rate limit are
	// dropped uncommitted; running closes finish, and their outcome, retry
	// and dead-letter records are acknowledged, bounded by
	// ShutdownTimeout; the member commits what is done with a fresh
	// context, closes the client and leaves the group as a static member.
	c.mu.Lock()
	for _, p := range c.parts {
		p.cancel()
	}
	c.mu.Unlock()
	if !waitTimeout(&c.work, c.cfg.ShutdownTimeout) {
		c.log.Warn("shutdown deadline passed with closes or their events unfinished; their tasks will be closed again")
	}
	c.member.Close(ctx)
	close(c.stopped)
	return err
}
