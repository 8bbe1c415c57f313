package canceller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
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
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
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

	mu      sync.Mutex // guards the fields below
	parts   map[tp]*partition
	keys    map[string][]job // task ids with a close running, and the records waiting behind it
	pending int              // records taken whose close has not finished: closing, or waiting for their turn or the rate limit
	unacked int              // records taken and not finished: pending, or closed with records onward not yet acknowledged
	fatal   error            // stops the canceller: another member took its instance id
	wake    chan struct{}    // a record finished; capacity 1

	work sync.WaitGroup // one per record taken and not finished

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
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if cfg.Instance == "" {
		cfg.Instance = cfg.InstanceID
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
	if o.Closer == nil && len(o.Routes) == 0 {
		o.Closer = closer.Log{Logger: o.Logger}
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	for kind, r := range o.Routes {
		if r.Closer == nil {
			return nil, fmt.Errorf("canceller: route %q has no closer", kind)
		}
	}
	kinds := []string{cfg.DefaultKind}
	for kind := range o.Routes {
		if kind != cfg.DefaultKind {
			kinds = append(kinds, kind)
		}
	}
	c := &Canceller{
		metrics: newMetrics(o.Registerer, kinds),
		cfg:     cfg,
		clock:   o.Clock,
		log:     o.Logger,
		routes:  o.Routes,
		parts:   make(map[tp]*partition),
		keys:    make(map[string][]job),
		wake:    make(chan struct{}, 1),
	}
	if o.Closer != nil {
		c.fallback = &Route{Closer: o.Closer}
	}
	if cfg.RateLimit > 0 {
		c.limit = rate.NewLimiter(rate.Limit(cfg.RateLimit), cfg.RateBurst)
	}
	var opts []kgo.Opt
	if len(o.Hooks) > 0 {
		opts = append(opts, kgo.WithHooks(o.Hooks...))
	}
	member, err := consumer.New(consumer.Config{
		Group: kafka.Group{Name: cfg.Group, Topics: cfg.Topics, InstanceID: cfg.InstanceID, SessionTimeout: cfg.SessionTimeout},
		Kafka: o.Kafka, Opts: opts, CommitInterval: cfg.CommitInterval,
		// A revoke waits for the closes running, each bounded by
		// CloseTimeout, which ShutdownTimeout covers.
		RevokeTimeout: cfg.ShutdownTimeout, Release: c.letGo,
		Clock: c.clock, Logger: c.log,
	})
	if err != nil {
		return nil, fmt.Errorf("canceller: %w", err)
	}
	c.member, c.cl = member, member.Client()
	return c, nil
}

// Ready reports whether the canceller is consuming.
func (c *Canceller) Ready() bool { return c.ready.Load() }

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
	return err
}

// waitTimeout waits for wg at most d and reports whether wg finished. On
// false, one goroutine stays blocked in wg.Wait until wg finishes.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

func (c *Canceller) consume(ctx, closeCtx context.Context) error {
	for {
		free, err := c.waitFree(ctx)
		if err != nil || ctx.Err() != nil {
			return err
		}
		fs := c.cl.PollRecords(ctx, min(free, c.cfg.MaxPollRecords))
		if fs.IsClientClosed() || ctx.Err() != nil {
			c.cl.AllowRebalance()
			return nil
		}
		fs.EachRecord(func(r *kgo.Record) { c.dispatch(closeCtx, r) })
		skip := func(b *kgo.ErrDecompressTooLarge) { c.skipBatch(closeCtx, b) }
		if err := c.member.FetchErrors(fs, skip); err != nil {
			c.setFatal(err)
		}
		c.cl.AllowRebalance()
	}
}

func (c *Canceller) setFatal(err error) {
	c.mu.Lock()
	if c.fatal == nil {
		c.fatal = err
	}
	c.mu.Unlock()
	c.signal()
}

// signal wakes waitFree.
func (c *Canceller) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// maxUnacked bounds the records whose close is done and whose records
// onward (outcome event, retry, dead letter) are not yet acknowledged: a
// topic that refuses them holds up the taking of more records instead of
// filling memory.
const maxUnacked = 10_000

// waitFree waits until fewer than MaxInFlight records are pending (and
// fewer than maxUnacked unacknowledged) and returns how many more may be
// taken, or the error that stops the canceller.
func (c *Canceller) waitFree(ctx context.Context) (int, error) {
	for {
		c.mu.Lock()
		free, err := min(c.cfg.MaxInFlight-c.pending, maxUnacked-c.unacked), c.fatal
		c.mu.Unlock()
		if err != nil || free > 0 {
			return free, err
		}
		select {
		case <-ctx.Done():
			return 0, nil
		case <-c.wake:
		}
	}
}

// take counts r, of mark, as taken from its partition and returns its job.
func (c *Canceller) take(closeCtx context.Context, r *kgo.Record, mark consumer.Mark) job {
	k := tp{r.Topic, r.Partition}
	p, ok := c.parts[k]
	if !ok {
		p = &partition{}
		p.ctx, p.cancel = context.WithCancel(closeCtx)
		c.parts[k] = p
	}
	p.work.Add(1)
	c.work.Add(1)
	c.pending++
	c.unacked++
	c.metrics.pending.Set(float64(c.pending))
	return job{r: r, p: p, mark: mark}
}

// dispatch takes r: it starts closing it, or queues it behind the running
// close of the same task id.
func (c *Canceller) dispatch(closeCtx context.Context, r *kgo.Record) {
	mark := c.member.Take(r)
	c.mu.Lock()
	j := c.take(closeCtx, r, mark)
	key := string(r.Key)
	if waiting, busy := c.keys[key]; busy {
		c.keys[key] = append(waiting, j)
		c.mu.Unlock()
		return
	}
	c.keys[key] = nil
	c.mu.Unlock()
	go c.run(closeCtx, key, j)
}

// skipBatch dead-letters a batch the client refused to decompress (the
// client has moved past it), naming its offsets.
func (c *Canceller) skipBatch(closeCtx context.Context, b *kgo.ErrDecompressTooLarge) {
	r := &kgo.Record{Topic: b.Topic, Partition: b.Partition, Offset: b.Offset, Timestamp: c.clock.Now()}
	mark := c.member.TakeSkipped(b)
	c.mu.Lock()
	j := c.take(closeCtx, r, mark)
	c.pending-- // nothing to close
	c.mu.Unlock()
	c.deadLetter(j, string(tiers.ReasonBatchTooLarge), kafka.SkippedBatch(b))
}

// run handles j, then each record that queued behind it for the same task
// id, in offset order.
func (c *Canceller) run(closeCtx context.Context, key string, j job) {
	for {
		c.handle(closeCtx, j)
		c.mu.Lock()
		c.pending--
		c.metrics.pending.Set(float64(c.pending))
		waiting := c.keys[key]
		if len(waiting) == 0 {
			delete(c.keys, key)
		} else {
			c.keys[key] = waiting[1:]
		}
		c.mu.Unlock()
		c.signal()
		if len(waiting) == 0 {
			return
		}
		j = waiting[0]
	}
}

// finish ends j: its offset is done when its records onward are
// acknowledged (done), or left for the next owner (a revoke or a stop came
// first).
func (c *Canceller) finish(j job, done bool) {
	if done {
		c.member.Done(j.mark)
	}
	c.mu.Lock()
	c.unacked--
	c.mu.Unlock()
	j.p.work.Done()
	c.work.Done()
	c.signal()
}

// handle closes one task and produces its outcome event, and its retry or
// dead letter when the close failed or the record is malformed. The record
// is finished when every produce is acknowledged. A record whose partition
// was revoked before its close began is left undone for the next owner.
func (c *Canceller) handle(closeCtx context.Context, j job) {
	r := j.r
	if j.p.ctx.Err() != nil {
		c.finish(j, false)
		return
	}
	err := tiers.Limits{}.Check(r)
	var m tiers.Meta
	if err == nil {
		m, err = tiers.DecodeRecord(r)
	}
	if err != nil {
		c.deadLetter(j, string(record.ReasonOf(err, "invalid")), err)
		return
	}
	task := closer.Task{ID: string(r.Key), Kind: m.Kind, Payload: r.Value, Meta: m, Attempt: max(1, m.Attempt)}
	if task.Kind == "" {
		task.Kind = c.cfg.DefaultKind
	}
	route, ok := c.routes[task.Kind]
	if !ok {
		if c.fallback == nil {
			c.deadLetter(j, reasonUnknownKind, fmt.Errorf("no closer for kind %q", task.Kind))
			return
		}
		route = *c.fallback
	}
	label := c.metrics.kind(task.Kind)
	// Wait for the rate limits. Neither wait holds a close slot of the
	// closer; both end when the partition is revoked.
	for _, l := range []*rate.Limiter{c.limit, route.Limit} {
		if l == nil {
			continue
		}
		if err := c.wait(j.p.ctx, l); err != nil {
			c.finish(j, false)
			return
		}
	}

	cctx, cancel := context.WithTimeout(closeCtx, c.cfg.CloseTimeout)
	c.metrics.inFlight.Inc()
	started := c.clock.Now()
	res, err := route.Closer.Close(cctx, task)
	c.metrics.inFlight.Dec()
	cancel()
	if err == nil && !res.Outcome.Final() {
		err = closer.Permanent(fmt.Errorf("closer returned outcome %q without an error", res.Outcome))
	}
	now := c.clock.Now()
	deadline := m.Due
	if !m.Deadline.IsZero() {
		deadline = m.Deadline
	}
	ev := outcome.Event{
		V: outcome.Version, TaskID: task.ID, Kind: task.Kind, Outcome: res.Outcome, Detail: res.Detail,
		Attempt: task.Attempt, Hops: m.Hops, Path: m.Path,
		ScheduledMs: millis(m.Scheduled), DueMs: m.Due.UnixMilli(), DeadlineMs: deadline.UnixMilli(),
		ForwardedMs: millis(m.Forwarded), ClosedMs: now.UnixMilli(), LatenessMs: now.UnixMilli() - m.Due.UnixMilli(),
		Instance: c.cfg.Instance, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	}
	out := make([]onward, 0, 2)
	switch {
	case err == nil:
	case !closer.IsPermanent(err) && task.Attempt < c.cfg.MaxAttempts:
		wait := c.backoff(task.Attempt, err)
		ev.Outcome, ev.Error = outcome.Retry, err.Error()
		c.log.Debug("close failed; retrying", "task", task.ID, "kind", task.Kind, "attempt", task.Attempt, "in", wait, "err", err)
		out = append(out, onward{c.retry(r, deadline, task.Attempt+1, now, wait), kindRetry})
		c.stats.retried.Add(1)
		c.metrics.retries.WithLabelValues(label).Inc()
	default:
		reason := reasonCloseFailed
		if !closer.IsPermanent(err) {
			reason = reasonRetriesExhausted
			err = fmt.Errorf("attempt %d of %d: %w", task.Attempt, c.cfg.MaxAttempts, err)
		}
		ev.Outcome, ev.Error = outcome.Failed, err.Error()
		c.log.Warn("close failed; dead letter", "task", task.ID, "kind", task.Kind, "attempt", task.Attempt, "reason", reason, "err", err)
		dl := record.DeadLetter(r, c.cfg.DeadLetter, fmt.Errorf("%s: %w", reason, err), now)
		dl.Headers = record.SetHeader(dl.Headers, tiers.HeaderAttempt, []byte(strconv.Itoa(task.Attempt)))
		out = append(out, onward{dl, kindDeadLetter})
		c.stats.deadLettered.Add(1)
		c.metrics.deadLetters.WithLabelValues(reason).Inc()
	}
	c.stats.count(ev.Outcome)
	c.metrics.closes.WithLabelValues(label, string(ev.Outcome)).Inc()
	c.metrics.duration.WithLabelValues(label).Observe(now.Sub(started).Seconds())
	if late := now.Sub(m.Due); late < 0 {
		c.metrics.early.Inc()
	} else {
		c.metrics.lateness.WithLabelValues(label).Observe(late.Seconds())
	}
	out = append(out, onward{c.event(r.Key, &ev, now), kindOutcome})
	c.send(j, out)
}

// event returns the outcome record of ev, keyed by the task id (cut like
// the event's), signed when a key is configured.
func (c *Canceller) event(key []byte, ev *outcome.Event, now time.Time) *kgo.Record {
	val, err := ev.Marshal()
	if err != nil {
		panic(err) // an Event of strings and integers always marshals
	}
	rec := &kgo.Record{Topic: c.cfg.Outcomes, Key: key[:min(len(key), outcome.MaxTaskIDBytes)], Value: val, Timestamp: now}
	if len(c.cfg.OutcomesKey) > 0 {
		rec.Headers = []kgo.RecordHeader{{Key: outcome.HeaderSignature, Value: outcome.Sign(c.cfg.OutcomesKey, val)}}
	}
	return rec
}

// wait takes a token of l, and reports ctx's error if ctx ends first.
func (c *Canceller) wait(ctx context.Context, l *rate.Limiter) error {
	if l.Allow() {
		return nil
	}
	start := time.Now()
	err := l.Wait(ctx)
	c.metrics.rateWait.Add(time.Since(start).Seconds())
	return err
}

// backoff returns the wait before the attempt after attempt: RetryBackoff
// doubled per attempt, capped at RetryBackoffMax, its upper half random
// ("equal jitter"), and at least what the closer asked for with
// closer.RetryAfter.
func (c *Canceller) backoff(attempt int, err error) time.Duration {
	d := c.cfg.RetryBackoff
	for i := 1; i < attempt && d < c.cfg.RetryBackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.cfg.RetryBackoffMax)
	d = d/2 + rand.N(d/2+1)
	if after, ok := closer.RetryAfterOf(err); ok && after > d {
		d = after
	}
	return d
}

// retry returns the record that schedules attempt of r's task wait after
// now: r with its due time, target (the topic it came from), attempt and
// deadline set, in the delay topic of the wait.
func (c *Canceller) retry(r *kgo.Record, deadline time.Time, attempt int, now time.Time, wait time.Duration) *kgo.Record {
	return &kgo.Record{
		Topic: tiers.Topic(c.cfg.Prefix, c.cfg.Tiers.Pick(wait)), Key: r.Key, Value: r.Value, Timestamp: now,
		Headers: record.Onward(r.Headers,
			kgo.RecordHeader{Key: tiers.HeaderDue, Value: tiers.FormatMillis(now.Add(wait))},
			kgo.RecordHeader{Key: tiers.HeaderTarget, Value: []byte(r.Topic)},
			kgo.RecordHeader{Key: tiers.HeaderAttempt, Value: []byte(strconv.Itoa(attempt))},
			kgo.RecordHeader{Key: tiers.HeaderDeadline, Value: tiers.FormatMillis(deadline)},
		),
	}
}

// deadLetter sends a record that cannot be closed to the dead-letter topic.
func (c *Canceller) deadLetter(j job, reason string, cause error) {
	r := j.r
	c.metrics.deadLetters.WithLabelValues(reason).Inc()
	c.stats.deadLettered.Add(1)
	c.log.Warn("dead letter", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "reason", reason, "err", cause)
	if record.ReasonOf(cause, "") == "" {
		cause = fmt.Errorf("%s: %w", reason, cause)
	}
	c.send(j, []onward{{record.DeadLetter(r, c.cfg.DeadLetter, cause, c.clock.Now()), kindDeadLetter}})
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// letGo is the group member's Release. Records of the revoked or lost
// partitions that have not begun closing are dropped (the next owner reads
// them again); for a revoke it waits for the closes running and their
// records onward, until deadline. It forgets the partitions.
func (c *Canceller) letGo(parts map[string][]int32, lost bool, deadline time.Time) {
	var gone []*partition
	c.mu.Lock()
	for topic, ps := range parts {
		for _, n := range ps {
			if p, ok := c.parts[tp{topic, n}]; ok {
				p.cancel()
				gone = append(gone, p)
				delete(c.parts, tp{topic, n})
			}
		}
	}
	c.mu.Unlock()
	if lost {
		return
	}
	for _, p := range gone {
		if !waitTimeout(&p.work, time.Until(deadline)) {
			c.log.Warn("revoke: closes or their events unfinished; their tasks will be closed again by the next owner")
			return
		}
	}
}
