package recorder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Recorder consumes outcome events into ClickHouse. Create one with New and
// start it with Run.
type Recorder struct {
	cfg     Config
	store   *chstore.Store
	clock   clock.Clock
	log     *slog.Logger
	cl      *kgo.Client
	member  *consumer.Member
	metrics *metrics
	ready   atomic.Bool
	stats   stats

	// The batch; only Run's goroutine touches it.
	events  []outcome.Event
	index   chstore.IndexRows // with Config.Index
	steps   int               // steps of insert done for the batch: a retry goes on from there
	records int               // records in the batch, malformed ones included
	marks   []consumer.Mark   // the batch's records and skipped batches, finished once inserted
	timer   clock.Timer       // fires FlushInterval after the batch's first record
}

// Options are the collaborators of a Recorder.
type Options struct {
	// Kafka are the connection options (brokers, TLS, SASL, client id).
	Kafka []kgo.Opt
	// Hooks observe the recorder's Kafka client (client metrics); default
	// none.
	Hooks []kgo.Hook
	// Store receives the events; required.
	Store *chstore.Store
	// Clock is the time source of flushes and retries; default the wall
	// clock.
	Clock clock.Clock
	// Logger receives the recorder's logs; default slog.Default().
	Logger *slog.Logger
	// Registerer receives the recorder's Prometheus series; default none.
	Registerer prometheus.Registerer
}

// New returns a recorder for cfg; cfg is completed with WithDefaults and
// validated.
func New(cfg Config, o Options) (*Recorder, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.Store == nil {
		return nil, errors.New("recorder: no store")
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
	r := &Recorder{
		cfg:     cfg,
		store:   o.Store,
		clock:   o.Clock,
		log:     o.Logger,
		metrics: newMetrics(o.Registerer),
	}
	// A batch is committed only after its insert. Rebalances wait until
	// the batch is inserted and committed (the group blocks them while a
	// poll's records are taken, and the recorder allows them only between
	// batches), so a revoke finds nothing to let go of.
	opts := []kgo.Opt{
		kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) {
			r.log.Debug("a rebalance waits for the current batch")
		}),
	}
	if len(o.Hooks) > 0 {
		opts = append(opts, kgo.WithHooks(o.Hooks...))
	}
	group := consumer.Group{Name: cfg.Group, Topics: []string{cfg.Topic}, SessionTimeout: cfg.SessionTimeout}
	if x := cfg.Index; x != nil {
		group.Topics = append(group.Topics, x.Cancellations, x.DeadLetters)
		group.TopicsMatching = tiers.TopicPattern(x.Prefix)
	}
	member, err := consumer.New(consumer.Config{
		Group: group,
		Kafka: o.Kafka, Opts: opts, CommitTimeout: cfg.InsertTimeout, Clock: r.clock, Logger: r.log, Registerer: o.Registerer,
	})
	if err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	r.member, r.cl = member, member.Client()
	return r, nil
}

// Ready reports whether the recorder is consuming.
func (r *Recorder) Ready() bool { return r.ready.Load() }

// Client returns the recorder's Kafka client, for the consumer lag.
func (r *Recorder) Client() *kgo.Client { return r.cl }

// Run consumes, inserts and commits until ctx is canceled, then stops
// gracefully within Config.ShutdownTimeout. It closes the client before it
// returns.
func (r *Recorder) Run(ctx context.Context) error {
	r.ready.Store(true)
	r.consume(ctx)
	r.ready.Store(false)

	// Shutdown order: polling has stopped; insert the last batch (retrying
	// while ClickHouse is down, bounded by ShutdownTimeout) and commit it;
	// let a waiting rebalance go on; close the client, which leaves the
	// group. A batch not inserted in time is not committed: it is read
	// again.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.ShutdownTimeout)
	defer cancel()
	if err := r.flush(sctx); err != nil {
		r.log.Warn("stopping with a batch not inserted; it is read again at the next start", "rows", len(r.events), "err", err)
	}
	r.cl.AllowRebalance()
	r.member.Close(ctx)
	return nil
}

// consume polls records into the batch and flushes it when it is full or
// FlushInterval old, until ctx is canceled.
func (r *Recorder) consume(ctx context.Context) {
	for {
		fs, due := r.poll(ctx)
		if fs.IsClientClosed() {
			return
		}
		// The recorder has no instance id, so no fetch error is fatal.
		_ = r.member.FetchErrors(fs, r.skip)
		fs.EachRecord(r.add)
		if ctx.Err() != nil {
			return
		}
		if r.records >= r.cfg.BatchRows || due {
			if err := r.flush(ctx); err != nil {
				return // canceled while ClickHouse was down: Run tries once more
			}
		}
	}
}

// poll polls up to the room left in the batch. While the batch has records
// it wakes when the batch is FlushInterval old, and reports due.
func (r *Recorder) poll(ctx context.Context) (kgo.Fetches, bool) {
	room := r.cfg.BatchRows - r.records
	if r.timer == nil {
		return r.cl.PollRecords(ctx, room), false
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fired atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-r.timer.C():
			fired.Store(true)
			cancel()
		case <-stop:
		}
	})
	fs := r.cl.PollRecords(pctx, room)
	close(stop)
	wg.Wait()
	return fs, fired.Load()
}

// add puts a record into the batch. A record that is not an outcome event
// is logged and counted; its offset is committed with the batch.
func (r *Recorder) add(rec *kgo.Record) {
	mark := r.member.Take(rec)
	if mark.Handled() {
		return // inserted before the last assignment
	}
	if r.records == 0 {
		r.timer = r.clock.NewTimer(r.cfg.FlushInterval)
	}
	r.records++
	r.marks = append(r.marks, mark)
	if rec.Topic != r.cfg.Topic {
		if why := r.addIndexed(rec); why != "" {
			r.metrics.indexSkipped[why].Inc()
		}
		r.metrics.buffered.Set(float64(len(r.events) + r.index.Len()))
		return
	}
	if len(r.cfg.OutcomesKey) > 0 {
		sig, _ := tiers.Header(rec.Headers, outcome.HeaderSignature)
		if !outcome.Verify(r.cfg.OutcomesKey, rec.Value, sig) {
			r.metrics.rejected.Inc()
			r.stats.rejected.Add(1)
			r.log.Warn("skipping an outcome event without a valid signature: it was not written by a canceller with the key",
				"topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset)
			return
		}
	}
	ev, err := outcome.Unmarshal(rec.Value)
	if err != nil {
		r.metrics.malformed.Inc()
		r.stats.malformed.Add(1)
		r.log.Warn("skipping a malformed outcome event", "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "err", err)
		return
	}
	r.events = append(r.events, ev)
	r.metrics.buffered.Set(float64(len(r.events) + r.index.Len()))
}

// skip counts a batch the client refused to decompress, or malformed: not
// events a canceller wrote. Its offsets are committed with the batch.
func (r *Recorder) skip(b *kgo.ErrDecompressTooLarge) {
	r.metrics.malformed.Inc()
	r.stats.malformed.Add(1)
	r.log.Warn("skipping a record batch", "topic", b.Topic, "partition", b.Partition, "err", kafka.SkippedBatch(b))
	r.marks = append(r.marks, r.member.TakeSkipped(b))
}

// flush inserts the batch, retrying until it succeeds or ctx is done, then
// commits its offsets and lets a waiting rebalance go on. The batch is kept
// when the insert does not succeed.
func (r *Recorder) flush(ctx context.Context) error {
	if r.records == 0 {
		return nil
	}
	// The batch is due now; its timer has done its work.
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	if err := r.insert(ctx); err != nil {
		return err
	}
	// The commit goes on if ctx ends now: the batch is inserted. A failed
	// commit is logged and loses nothing: the batch is read and inserted
	// again, and the copies count once.
	r.member.Done(r.marks...)
	if err := r.member.Commit(); err != nil {
		r.log.Warn("commit failed; the batch is read again after a restart or rebalance, and counts once", "err", err)
	}
	r.stats.flushed.Add(int64(r.records))
	r.events, r.records, r.marks = r.events[:0], 0, r.marks[:0]
	r.index.Reset()
	r.steps = 0
	r.metrics.buffered.Set(0)
	r.cl.AllowRebalance()
	return nil
}

// insert inserts the batch's events into both outcome tables, then its
// index rows, retrying with capped exponential backoff until every step
// succeeded or ctx is done. A step that succeeded is not repeated, even by
// the flush of a stop, so a failure leaves no copies. Fetching waits
// meanwhile: nothing more is read while ClickHouse is down.
func (r *Recorder) insert(ctx context.Context) error {
	if len(r.events) == 0 && r.index.Len() == 0 {
		return nil
	}
	steps := []func(context.Context) error{
		func(ctx context.Context) error { return r.store.Insert(ctx, r.events) },
		func(ctx context.Context) error { return r.store.InsertByTask(ctx, r.events) },
		func(ctx context.Context) error { return r.store.InsertIndex(ctx, &r.index) },
	}
	rows := len(r.events) + r.index.Len()
	backoff := r.cfg.RetryMin
	for attempt := 1; ; attempt++ {
		ictx, cancel := context.WithTimeout(ctx, r.cfg.InsertTimeout)
		start := r.clock.Now()
		var err error
		for r.steps < len(steps) && err == nil {
			if err = steps[r.steps](ictx); err == nil {
				r.steps++
			}
		}
		cancel()
		if err == nil {
			now := r.clock.Now()
			r.metrics.duration.Observe(now.Sub(start).Seconds())
			r.metrics.rows.Add(float64(len(r.events)))
			r.metrics.batches.Inc()
			r.metrics.batchRows.Observe(float64(rows))
			r.metrics.lastInsert.Set(float64(now.UnixMilli()) / 1000)
			r.countIndexed()
			r.stats.inserted.Add(int64(len(r.events)))
			r.stats.batches.Add(1)
			if attempt > 1 {
				r.log.Info("insert succeeded after failures", "rows", rows, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.metrics.errors.Inc()
		r.stats.insertErrors.Add(1)
		r.log.Warn("insert failed; retrying", "rows", rows, "attempt", attempt, "retry_in", backoff, "err", err)
		t := r.clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
		backoff = min(2*backoff, r.cfg.RetryMax)
	}
}

// countIndexed counts the batch's index rows, inserted.
func (r *Recorder) countIndexed() {
	for i, n := range []int{len(r.index.Deadlines), len(r.index.Cancels), len(r.index.DeadLetters)} {
		r.metrics.indexed.WithLabelValues(indexTables[i]).Add(float64(n))
		r.stats.indexed.Add(int64(n))
	}
}

type stats struct {
	inserted, indexed, batches, flushed, malformed, rejected, insertErrors atomic.Int64
}

// Stats are the recorder's counters since it started.
type Stats struct {
	// Inserted counts events inserted; Indexed the index rows inserted;
	// Batches the batches inserted.
	Inserted, Indexed, Batches int64
	// Flushed counts the records of inserted batches, malformed ones
	// included, whose offsets were committed (or, if the commit failed,
	// are read again).
	Flushed int64
	// Malformed counts records that are not an outcome event.
	Malformed int64
	// Rejected counts events skipped for a missing or wrong signature.
	Rejected int64
	// InsertErrors counts failed insert attempts.
	InsertErrors int64
}

// Stats returns the counters.
func (r *Recorder) Stats() Stats {
	return Stats{
		Inserted: r.stats.inserted.Load(), Indexed: r.stats.indexed.Load(), Batches: r.stats.batches.Load(), Flushed: r.stats.flushed.Load(),
		Malformed: r.stats.malformed.Load(), Rejected: r.stats.rejected.Load(), InsertErrors: r.stats.insertErrors.Load(),
	}
}
