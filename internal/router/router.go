package router

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cancels"
	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Router moves delay records to their targets when they are due. Create one
// with New and start it with Run; it stops when Run's context is canceled.
type Router struct {
	cfg    Config
	clock  clock.Clock
	log    *slog.Logger
	cl     *kgo.Client
	member *consumer.Member

	store      *cancels.Store
	cancels    *cancels.Reader
	readerDone chan error // the reader's Run returned (capacity 1)

	tierOf  map[string]time.Duration // delay topic -> tier
	topicOf map[time.Duration]string // tier -> delay topic

	// Owned by the loop goroutine.
	others     map[string]time.Duration // delay topics of tiers not configured, read until drained
	parts      map[tp]*partition
	wake       wakeHeap
	targets    map[string]*target // topics with produces in flight or waiting
	waitingFor []*target          // targets with produces waiting for room
	bufferFull bool               // the client's produce buffer refused a record
	sent       int                // produces in the client, not yet completed
	timerBytes int
	checked    map[string]string // target topic -> why it is refused ("" allowed)
	gated      []*entry          // due, waiting for the cancellations reader (see mayLeave)
	fatal      error             // stops the router: another member took its instance id, a consumed topic was created again
	repurge    *kafka.Repurger   // purges topics created again from the producer

	// Channels into the loop.
	fetches  chan polled
	revokes  chan *revokeReq
	doneSig  chan struct{} // a completion is waiting in done
	loopDone chan struct{} // closed when the loop has returned

	mu   sync.Mutex   // guards done
	done []completion // produce results, handed from kgo's goroutines

	wakeAt  atomic.Int64 // unix ns the wake timer is armed for; 0 when not armed
	pollMax atomic.Int64 // records the next poll takes at most (pollLimit)
	ready   atomic.Bool
	stats   stats
	metrics *metrics
}

type polled struct {
	fetches kgo.Fetches
	ack     chan struct{}
}

// Options are the collaborators of a Router.
type Options struct {
	// Kafka are the connection options (brokers, TLS, SASL, client id).
	Kafka []kgo.Opt
	// Hooks observe the router's Kafka client (client metrics); default
	// none.
	Hooks []kgo.Hook
	// Clock is the time source; default the wall clock.
	Clock clock.Clock
	// Logger receives the router's logs; default slog.Default().
	Logger *slog.Logger
	// Registerer receives the router's Prometheus series; default none.
	Registerer prometheus.Registerer
}

// New returns a router for cfg; cfg is completed with WithDefaults and
// validated.
func New(cfg Config, o Options) (*Router, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	r := &Router{
		cfg:      cfg,
		clock:    o.Clock,
		log:      o.Logger,
		tierOf:   make(map[string]time.Duration),
		others:   make(map[string]time.Duration),
		topicOf:  make(map[time.Duration]string),
		parts:    make(map[tp]*partition),
		targets:  make(map[string]*target),
		checked:  make(map[string]string),
		fetches:  make(chan polled),
		revokes:  make(chan *revokeReq),
		doneSig:  make(chan struct{}, 1),
		loopDone: make(chan struct{}),
	}
	r.pollMax.Store(int64(r.pollLimit()))
	r.metrics = newMetrics(o.Registerer, cfg.Tiers, &r.stats, r.clock.Now)
	store, rd, err := openCancellations(cfg, o, r.metrics.invalidCancellations)
	if err != nil {
		return nil, err
	}
	r.store, r.cancels, r.readerDone = store, rd, make(chan error, 1)
	r.metrics.registerStore(o.Registerer, store, rd, r.clock.Now)
	for _, d := range cfg.Tiers.Durations() {
		r.tierOf[tiers.Topic(cfg.Prefix, d)] = d
		r.topicOf[d] = tiers.Topic(cfg.Prefix, d)
	}
	opts := clientOpts(cfg)
	if len(o.Hooks) > 0 {
		opts = append(opts, kgo.WithHooks(o.Hooks...))
	}
	member, err := consumer.New(consumer.Config{
		Group: consumer.Group{Name: cfg.Group, Topics: cfg.Tiers.Topics(cfg.Prefix), TopicsMatching: tiers.TopicPattern(cfg.Prefix), InstanceID: cfg.InstanceID, SessionTimeout: cfg.SessionTimeout},
		Kafka: o.Kafka, Opts: opts,
		CommitInterval: cfg.CommitInterval, RevokeTimeout: cfg.RevokeTimeout, Release: r.letGo,
		Clock: r.clock, Logger: r.log, Registerer: o.Registerer,
	})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("router: %w", err)
	}
	r.member, r.cl = member, member.Client()
	r.repurge = kafka.NewRepurger(r.cl, r.log)
	return r, nil
}

// readiness lists what the router needs, besides consuming, to be ready:
// one named condition a line.
func (r *Router) readiness() []telemetry.Condition {
	return []telemetry.Condition{
		{Name: "fetch", Check: r.member.FetchFailing},
		{Name: "cancellations", Check: func() error { return r.cancels.Stalled(r.clock.Now()) }},
	}
}

// NotReady returns why the router is not ready, or nil: it is starting or
// stopping, or a condition of readiness fails (its fetches have failed
// for consumer.FetchFailingAfter, or its cancellations reader has owed a
// round for cancels.BehindAfter).
func (r *Router) NotReady() error { return telemetry.NotReady(r.ready.Load(), r.readiness()...) }

// Ready reports whether NotReady is nil.
func (r *Router) Ready() bool { return r.NotReady() == nil }

// Client returns the router's Kafka client (for admin requests and metrics).
func (r *Router) Client() *kgo.Client { return r.cl }

// Run consumes, holds and forwards until ctx is canceled, then stops
// gracefully within Config.ShutdownTimeout. It returns nil after a graceful
// stop, and an error (after a graceful stop) when another member took its
// instance id. Run closes the client before it returns; with an instance id it then
// leaves the group explicitly, so that the other routers take its partitions
// at once instead of after the session timeout.
func (r *Router) Run(ctx context.Context) error {
	pollCtx, stopPolling := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPolling()
	// The cancellations reader runs until the group member has closed: a
	// stop forwards what it holds, which the reader must clear.
	readCtx, stopReading := context.WithCancel(context.WithoutCancel(ctx))
	go func() { r.readerDone <- r.cancels.Run(readCtx) }()
	var wg sync.WaitGroup
	wg.Go(func() { r.poll(pollCtx) })
	r.member.Start()

	r.ready.Store(true)
	err := r.loop(ctx, stopPolling)
	r.ready.Store(false)

	// Shutdown order: the loop has stopped fetching (it canceled polling),
	// handed off what it held and waited for produces in flight, bounded;
	// wait for the poller; the member commits the final watermarks with a
	// fresh context, closes the client (which, for a dynamic member,
	// leaves the group) and leaves explicitly as a static member.
	wg.Wait()
	r.member.Close(ctx)
	stopReading()
	if rerr := <-r.readerDone; rerr != nil && err == nil {
		err = fmt.Errorf("router: cancellations: %w", rerr)
	}
	if cerr := r.store.Close(); cerr != nil {
		r.log.Error("closing the store of cancellations failed", "err", cerr)
	}
	return err
}

// poll fetches and hands each poll's records to the loop, allowing
// rebalances only after the loop has taken them. A poll takes at most
// pollLimit records: the loop keeps all of a poll's records and pauses a
// partition only after them, so a partition holds at most twice its limit
// of records, however small they are and however many of them a fetch
// brings.
func (r *Router) poll(ctx context.Context) {
	for {
		fs := r.cl.PollRecords(ctx, int(r.pollMax.Load()))
		if fs.IsClientClosed() || ctx.Err() != nil {
			r.cl.AllowRebalance()
			return
		}
		ack := make(chan struct{})
		select {
		case r.fetches <- polled{fs, ack}:
			<-ack
		case <-r.loopDone:
			r.cl.AllowRebalance()
			return
		}
		r.cl.AllowRebalance()
	}
}

// loop owns the router state: it takes polled records, wakes for due heads,
// timers and dead-letter retries, handles produce results and revokes. On
// ctx cancellation, or a fatal error, it stops (see shutdown).
func (r *Router) loop(ctx context.Context, stopPolling func()) error {
	defer close(r.loopDone)
	// The wake-ups of the batch windows are the router's heartbeat at low
	// rates: a precise timer wakes it once per window, at its time.
	timer := clock.NewPreciseTimer(r.clock, time.Hour)
	timer.Stop() // armTimer arms it
	defer timer.Close()
	var pending []*revokeReq
	for {
		r.armTimer(timer)
		select {
		case <-ctx.Done():
			r.shutdown(stopPolling, pending)
			return nil
		case p := <-r.fetches:
			r.take(p.fetches)
			close(p.ack)
		case <-timer.C():
			r.wakeAt.Store(0)
			r.fire(r.clock.Now())
		case <-r.doneSig:
			r.complete()
		case req := <-r.revokes:
			r.releaseParts(req.parts, req.lost)
			pending = append(pending, req)
		case <-r.cancels.Advanced():
			r.ungate()
		case err := <-r.readerDone:
			r.readerDone <- err // Run reads it again
			if r.fatal == nil {
				r.fatal = fmt.Errorf("router: cancellations stopped: %w", err)
			}
			// Nothing clears the gated entries any more: let go of them
			// now, uncommitted, instead of holding the stop for its whole
			// timeout.
			r.dropGated()
		}
		r.sendWaiting()
		pending = r.answerRevokes(pending, false)
		r.noteBusy()
		r.pollMax.Store(int64(r.pollLimit()))
		if r.fatal != nil {
			r.shutdown(stopPolling, pending)
			return r.fatal
		}
	}
}

// armTimer sets the clock timer to the earliest wake-up: the ready time of
// the first entry, rounded up to the batch window's grid.
func (r *Router) armTimer(t clock.Timer) {
	e := r.wake.peek()
	if e == nil {
		if r.wakeAt.Load() != 0 {
			t.Stop()
			r.wakeAt.Store(0)
		}
		return
	}
	at := e.ready
	if w := r.cfg.BatchWindow; w > 0 {
		if g := at.Truncate(w); g.Before(at) {
			at = g.Add(w)
		}
	}
	if r.wakeAt.Load() == at.UnixNano() {
		return // armed for it already, and not fired: Reset is a system call
	}
	t.Reset(at.Sub(r.clock.Now()))
	r.wakeAt.Store(at.UnixNano())
}

// shutdown stops polling, hands off everything held and waits (bounded) for
// produces in flight, answering revokes meanwhile. What is finished by then
// is what the final commit covers.
func (r *Router) shutdown(stopPolling func(), revokes []*revokeReq) {
	stopPolling()
	now := r.clock.Now()
	for _, p := range r.parts {
		if !p.gone {
			r.handOff(p, now)
		}
	}
	r.sendWaiting()
	deadline := time.NewTimer(r.cfg.ShutdownTimeout)
	defer deadline.Stop()
wait:
	for r.producing() > 0 {
		select {
		case <-r.doneSig:
			r.complete()
			r.sendWaiting()
		case p := <-r.fetches: // a poll that raced with the stop: not taken
			close(p.ack)
		case <-r.cancels.Advanced():
			r.ungate()
		case req := <-r.revokes:
			// A rebalance during the stop: what the partitions held is
			// being handed off already; answer once it is.
			r.releaseParts(req.parts, req.lost)
			revokes = append(revokes, req)
		case <-deadline.C:
			r.log.Warn("shutdown deadline passed with produces in flight; their records will be read again", "producing", r.producing())
			break wait
		}
		revokes = r.answerRevokes(revokes, false)
	}
	r.answerRevokes(revokes, true)
}

// noteBusy notes, once per turn of the loop, the gated records and when
// the router goes from holding no due record to holding some, for the
// gauges (stats.gated, stats.stalled).
func (r *Router) noteBusy() {
	r.stats.gated.Store(int64(len(r.gated)))
	held := 0
	for _, e := range r.gated {
		if e.held {
			held++
		}
	}
	r.stats.heldByTxn.Store(int64(held))
	// Records held by a transaction wait for another writer, not for the
	// router: HourglassCancellationTransactionOpen says so, not a stall.
	switch busy := r.sent > 0 || len(r.gated) > held || len(r.waitingFor) > 0; {
	case !busy:
		r.stats.busySince.Store(0)
	case r.stats.busySince.Load() == 0:
		r.stats.busySince.Store(r.clock.Now().UnixNano())
	}
}

// producing counts the entries being produced onward.
func (r *Router) producing() int {
	n := 0
	for _, p := range r.parts {
		n += p.producing
	}
	return n
}

// clientOpts returns the router's fetch and producer settings.
func clientOpts(cfg Config) []kgo.Opt {
	return []kgo.Opt{
		kgo.FetchMaxPartitionBytes(cfg.FetchPartitionBytes),
		// A due record leaves at once: lingering would add to every
		// deadline's lateness. Records still batch while a produce request
		// is in flight.
		kgo.ProducerLinger(0),
		// A resumed partition is fetched only when the fetch in flight
		// returns; with every other partition paused or idle that takes
		// FetchMaxWait (kgo's default is 5s), so keep it short.
		kgo.FetchMaxWait(25 * time.Millisecond),
		// Produces are acknowledged by all in-sync replicas, idempotent and
		// retried without limit while the error is retriable (kgo's
		// defaults): a broker outage stalls the router, it does not turn
		// deadlines into dead letters. A record whose produce fails for good
		// (unknown target topic, too large) goes to the dead-letter topic.
		// The router bounds what is in flight per topic itself
		// (MaxInFlightPerTarget) and produces with TryProduce, so the
		// client's buffer limit is only a backstop that never blocks the
		// loop; its memory is bounded by the held-bytes limits, since every
		// record in it is counted there with the entry it leaves from.
		kgo.MaxBufferedRecords(1 << 20),
	}
}
