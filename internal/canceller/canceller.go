package canceller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/offsets"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Canceller consumes due tasks and closes them. Create one with New and
// start it with Run.
type Canceller struct {
	cfg    Config
	clock  clock.Clock
	log    *slog.Logger
	closer closer.Closer
	cl     *kgo.Client

	mu    sync.Mutex // guards parts and fatal
	parts map[tp]*offsets.Tracker
	fatal error

	// commitMu serializes computing and committing offsets between the
	// periodic committer and the revoke callback.
	commitMu sync.Mutex

	ready   atomic.Bool
	stats   stats
	metrics *metrics
}

type tp struct {
	topic     string
	partition int32
}

// Options are the collaborators of a Canceller.
type Options struct {
	// Kafka are the connection options (brokers, TLS, SASL, client id).
	Kafka []kgo.Opt
	// Closer applies closes; default closer.Log.
	Closer closer.Closer
	// Clock is the time source; default the wall clock.
	Clock clock.Clock
	// Logger receives the canceller's logs; default slog.Default().
	Logger *slog.Logger
	// Registerer receives the canceller's Prometheus series; default none.
	Registerer prometheus.Registerer
}

// New returns a canceller for cfg; cfg is completed with WithDefaults and
// validated.
func New(cfg Config, o Options) (*Canceller, error) {
	cfg = cfg.WithDefaults()
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if cfg.Instance == "" {
		cfg.Instance, _ = os.Hostname()
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Closer == nil {
		o.Closer = closer.Log{Logger: o.Logger}
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	c := &Canceller{
		metrics: newMetrics(o.Registerer, cfg.DefaultKind),
		cfg:     cfg,
		clock:   o.Clock,
		log:     o.Logger,
		closer:  o.Closer,
		parts:   make(map[tp]*offsets.Tracker),
	}
	opts := append([]kgo.Opt{
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Commit only what is closed and whose outcome is durable.
		kgo.DisableAutoCommit(),
		// Rebalance callbacks run between polls, so a revoke sees every
		// close of the partition finished.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(c.onRevoked),
		kgo.OnPartitionsLost(c.onLost),
	}, o.Kafka...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("canceller: kafka client: %w", err)
	}
	c.cl = cl
	return c, nil
}

// Ready reports whether the canceller is consuming.
func (c *Canceller) Ready() bool { return c.ready.Load() }

// Client returns the canceller's Kafka client.
func (c *Canceller) Client() *kgo.Client { return c.cl }

// Run consumes and closes until ctx is canceled, then stops gracefully within
// Config.ShutdownTimeout. It closes the client before it returns.
func (c *Canceller) Run(ctx context.Context) error {
	defer c.cl.Close()
	// A close in progress when the stop begins finishes (each close is
	// bounded by CloseTimeout), so it is not cut off half applied.
	closeCtx, cancelCloses := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelCloses()
	stopCommits := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.commitLoop(stopCommits) }()

	c.ready.Store(true)
	err := c.consume(ctx, closeCtx)
	c.ready.Store(false)

	// Shutdown order: polling has stopped (no record is taken after ctx is
	// canceled); wait for outcome and dead-letter produces, bounded; commit
	// what is done; leave the group (Close, deferred).
	close(stopCommits)
	wg.Wait()
	sctx, cancel := context.WithTimeout(closeCtx, c.cfg.ShutdownTimeout)
	defer cancel()
	if ferr := c.cl.Flush(sctx); ferr != nil {
		c.log.Warn("shutdown deadline passed with produces in flight; their tasks will be closed again", "err", ferr)
	}
	c.commitMu.Lock()
	offsets.Commit(sctx, c.cl, c.offsets(), c.log)
	c.commitMu.Unlock()
	return err
}

func (c *Canceller) consume(ctx, closeCtx context.Context) error {
	for {
		fs := c.cl.PollRecords(ctx, c.cfg.MaxPollRecords)
		if fs.IsClientClosed() || ctx.Err() != nil {
			c.cl.AllowRebalance()
			return nil
		}
		fs.EachError(func(topic string, partition int32, err error) {
			c.log.Warn("fetch failed", "topic", topic, "partition", partition, "err", err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if ctx.Err() != nil {
				return // not taken: read again after the restart
			}
			c.handle(closeCtx, r)
		})
		c.cl.AllowRebalance()
		c.mu.Lock()
		err := c.fatal
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// handle closes one task and produces its outcome event (and its dead
// letter, when the close failed or the record is malformed). The offset is
// done when every produce is acknowledged.
func (c *Canceller) handle(ctx context.Context, r *kgo.Record) {
	c.mu.Lock()
	k := tp{r.Topic, r.Partition}
	tr, ok := c.parts[k]
	if !ok {
		t := offsets.NewTracker()
		tr = &t
		c.parts[k] = tr
	}
	tr.Add(r.Offset)
	c.mu.Unlock()

	m, err := tiers.DecodeRecord(r)
	if err != nil {
		c.metrics.deadLetters.WithLabelValues(string(tiers.ReasonOf(err, "invalid"))).Inc()
		c.stats.deadLettered.Add(1)
		c.log.Warn("dead letter", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
		c.produce(r, []*kgo.Record{c.deadLetter(r, err)})
		return
	}
	task := closer.Task{ID: string(r.Key), Kind: m.Kind, Payload: r.Value, Meta: m, Attempt: max(1, m.Attempt)}
	if task.Kind == "" {
		task.Kind = c.cfg.DefaultKind
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CloseTimeout)
	c.metrics.inFlight.Inc()
	started := c.clock.Now()
	res, err := c.closer.Close(cctx, task)
	c.metrics.inFlight.Dec()
	cancel()
	if err == nil && !res.Outcome.Final() {
		err = closer.Permanent(fmt.Errorf("closer returned outcome %q without an error", res.Outcome))
	}
	now := c.clock.Now()
	ev := outcome.Event{
		V: outcome.Version, TaskID: task.ID, Kind: task.Kind, Outcome: string(res.Outcome), Detail: res.Detail,
		Attempt: task.Attempt, Hops: m.Hops, Path: m.Path,
		ScheduledMs: millis(m.Scheduled), DueMs: m.Due.UnixMilli(), ForwardedMs: millis(m.Forwarded),
		ClosedMs: now.UnixMilli(), LatenessMs: now.UnixMilli() - m.Due.UnixMilli(),
		Instance: c.cfg.Instance, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	}
	out := make([]*kgo.Record, 0, 2)
	if err != nil {
		ev.Outcome, ev.Error = string(closer.Failed), err.Error()
		c.log.Warn("close failed", "task", task.ID, "kind", task.Kind, "err", err)
		out = append(out, c.deadLetter(r, fmt.Errorf("%s: %w", reasonCloseFailed, err)))
		c.stats.deadLettered.Add(1)
		c.metrics.deadLetters.WithLabelValues(reasonCloseFailed).Inc()
	}
	c.stats.count(closer.Outcome(ev.Outcome))
	c.metrics.closes.WithLabelValues(task.Kind, ev.Outcome).Inc()
	c.metrics.duration.WithLabelValues(task.Kind).Observe(now.Sub(started).Seconds())
	if late := now.Sub(m.Due); late < 0 {
		c.metrics.early.Inc()
	} else {
		c.metrics.lateness.WithLabelValues(task.Kind).Observe(late.Seconds())
	}
	val, merr := ev.Marshal()
	if merr != nil {
		panic(merr) // an Event of strings and integers always marshals
	}
	out = append(out, &kgo.Record{Topic: c.cfg.Outcomes, Key: r.Key, Value: val, Timestamp: now})
	c.produce(r, out)
}

func (c *Canceller) deadLetter(r *kgo.Record, cause error) *kgo.Record {
	return tiers.DeadLetter(r, c.cfg.DeadLetter, cause, c.clock.Now())
}

// produce sends outs and marks src done when all are acknowledged. A produce
// that fails for good stops the canceller: src stays uncommitted.
func (c *Canceller) produce(src *kgo.Record, outs []*kgo.Record) {
	left := new(atomic.Int32)
	left.Store(int32(len(outs)))
	for _, o := range outs {
		c.cl.Produce(context.Background(), o, func(o *kgo.Record, err error) {
			if err != nil {
				c.mu.Lock()
				if c.fatal == nil {
					c.fatal = fmt.Errorf("produce %s[%d]@%d to %s: %w", src.Topic, src.Partition, src.Offset, o.Topic, err)
				}
				c.mu.Unlock()
				return
			}
			if left.Add(-1) == 0 {
				c.mu.Lock()
				if tr, ok := c.parts[tp{src.Topic, src.Partition}]; ok {
					tr.Done(src.Offset)
				}
				c.mu.Unlock()
			}
		})
	}
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// offsets returns the watermark of every partition with records.
func (c *Canceller) offsets() offsets.Commits {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(offsets.Commits)
	for k, tr := range c.parts {
		out.Add(k.topic, k.partition, tr)
	}
	return out
}

func (c *Canceller) commitLoop(stop <-chan struct{}) {
	t := c.clock.NewTimer(c.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
		}
		c.commitMu.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ShutdownTimeout)
		offsets.Commit(ctx, c.cl, c.offsets(), c.log)
		cancel()
		c.commitMu.Unlock()
		t.Reset(c.cfg.CommitInterval)
	}
}

// onRevoked runs between polls: every close of the revoked partitions is
// finished. It waits for their produces, commits and forgets them.
func (c *Canceller) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	if len(revoked) == 0 {
		return
	}
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	fctx, cancel := context.WithTimeout(ctx, c.cfg.ShutdownTimeout)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		c.log.Warn("revoke: produces still in flight; their tasks will be closed again", "err", err)
	}
	offs := make(offsets.Commits)
	c.mu.Lock()
	for topic, ps := range revoked {
		for _, p := range ps {
			if tr, ok := c.parts[tp{topic, p}]; ok {
				offs.Add(topic, p, tr)
				delete(c.parts, tp{topic, p})
			}
		}
	}
	c.mu.Unlock()
	offsets.Commit(fctx, c.cl, offs, c.log)
}

func (c *Canceller) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for topic, ps := range lost {
		for _, p := range ps {
			delete(c.parts, tp{topic, p})
		}
	}
}
