package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/offsets"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Router moves delay records to their targets when they are due. Create one
// with New and start it with Run; it stops when Run's context is canceled.
type Router struct {
	cfg   Config
	clock clock.Clock
	log   *slog.Logger
	cl    *kgo.Client

	tierOf  map[string]time.Duration // delay topic -> tier
	topicOf map[time.Duration]string // tier -> delay topic

	// Owned by the loop goroutine.
	parts map[tp]*partition
	wake  wakeHeap
	fatal error

	// Channels into the loop.
	fetches  chan polled
	revokes  chan *revokeReq
	offsetsQ chan chan offsets.Commits
	doneSig  chan struct{} // a completion is waiting in done
	loopDone chan struct{} // closed when the loop has returned

	mu   sync.Mutex   // guards done
	done []completion // produce results, handed from kgo's goroutines

	// commitMu serializes computing and committing offsets between the
	// periodic committer and the revoke callback, so that a commit computed
	// before a revoke never lands after the revoke's own commit.
	commitMu sync.Mutex

	ready   atomic.Bool
	stats   stats
	metrics *metrics
}

type polled struct {
	fetches kgo.Fetches
	ack     chan struct{}
}

type revokeReq struct {
	parts    map[string][]int32
	lost     bool
	deadline time.Time
	reply    chan offsets.Commits
}

type produceKind uint8

const (
	kindForward produceKind = iota
	kindHop
	kindDeadLetter
)

type completion struct {
	e    *entry
	kind produceKind
	to   time.Duration // the tier of a hop
	err  error
}

// Options are the collaborators of a Router.
type Options struct {
	// Kafka are the connection options (brokers, TLS, SASL, client id).
	Kafka []kgo.Opt
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
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
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
		topicOf:  make(map[time.Duration]string),
		parts:    make(map[tp]*partition),
		fetches:  make(chan polled),
		revokes:  make(chan *revokeReq),
		offsetsQ: make(chan chan offsets.Commits),
		doneSig:  make(chan struct{}, 1),
		loopDone: make(chan struct{}),
	}
	r.metrics = newMetrics(o.Registerer, cfg.Tiers, &r.stats)
	for _, d := range cfg.Tiers.Durations() {
		r.tierOf[tiers.Topic(cfg.Prefix, d)] = d
		r.topicOf[d] = tiers.Topic(cfg.Prefix, d)
	}
	opts := append([]kgo.Opt{
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Tiers.Topics(cfg.Prefix)...),
		// A new group starts at the oldest deadline, not the newest: records
		// scheduled before the first router started must fire too.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Offsets are committed only up to the contiguous watermark of
		// records produced onward (DESIGN.md invariant 2).
		kgo.DisableAutoCommit(),
		// Rebalance callbacks run between polls, never while a poll's
		// records are being taken into the router's state.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(r.onRevoked),
		kgo.OnPartitionsLost(r.onLost),
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
	}, o.Kafka...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("router: kafka client: %w", err)
	}
	r.cl = cl
	return r, nil
}

// Ready reports whether the router is consuming; it turns false when a stop
// begins.
func (r *Router) Ready() bool { return r.ready.Load() }

// Client returns the router's Kafka client (for admin requests and metrics).
func (r *Router) Client() *kgo.Client { return r.cl }

// Run consumes, holds and forwards until ctx is canceled, then stops
// gracefully within Config.ShutdownTimeout. It returns nil after a graceful
// stop and an error when the router cannot go on (the dead-letter topic
// refuses a record, say). Run closes the client before it returns.
func (r *Router) Run(ctx context.Context) error {
	defer r.cl.Close()

	pollCtx, stopPolling := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPolling()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.poll(pollCtx) }()
	go func() { defer wg.Done(); r.commitLoop(pollCtx) }()

	r.ready.Store(true)
	final, err := r.loop(ctx, stopPolling)
	r.ready.Store(false)

	// Shutdown order: the loop has stopped fetching (it canceled polling),
	// handed off what it held and waited for produces in flight; now
	// commit the final watermarks, then leave the group (Close, deferred
	// above).
	wg.Wait()
	if len(final) > 0 {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.ShutdownTimeout)
		r.commit(cctx, final)
		cancel()
	}
	return err
}

// poll fetches and hands each poll's records to the loop, allowing
// rebalances only after the loop has taken them.
func (r *Router) poll(ctx context.Context) {
	for {
		fs := r.cl.PollRecords(ctx, 10_000)
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

// loop owns the router state: it takes polled records, wakes for due heads
// and timers, handles produce results, revokes and commit requests. On
// ctx cancellation it stops and returns the watermarks to commit.
func (r *Router) loop(ctx context.Context, stopPolling func()) (offsets.Commits, error) {
	defer close(r.loopDone)
	timer := r.clock.NewTimer(time.Hour)
	defer timer.Stop()
	var pendingRevokes []*revokeReq
	for {
		r.armTimer(timer)
		select {
		case <-ctx.Done():
			return r.shutdown(stopPolling, pendingRevokes), nil
		case p := <-r.fetches:
			r.take(p.fetches)
			close(p.ack)
		case <-timer.C():
			r.fire(r.clock.Now())
		case <-r.doneSig:
			r.complete()
		case req := <-r.revokes:
			r.releaseParts(req.parts, req.lost)
			pendingRevokes = append(pendingRevokes, req)
		case reply := <-r.offsetsQ:
			reply <- r.offsets(nil)
		}
		if r.fatal != nil {
			final := r.shutdown(stopPolling, pendingRevokes)
			return final, r.fatal
		}
		pendingRevokes = r.answerRevokes(pendingRevokes, false)
	}
}

// armTimer sets the clock timer to the earliest wake-up.
func (r *Router) armTimer(t clock.Timer) {
	e := r.wake.peek()
	if e == nil {
		t.Stop()
		return
	}
	t.Reset(e.ready.Sub(r.clock.Now()))
}

// take adds one poll's records to the partitions' state.
func (r *Router) take(fs kgo.Fetches) {
	fs.EachError(func(topic string, partition int32, err error) {
		r.log.Warn("fetch failed", "topic", topic, "partition", partition, "err", err)
	})
	now := r.clock.Now()
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		if len(fp.Records) == 0 {
			return
		}
		p := r.part(fp.Topic, fp.Partition)
		if p == nil {
			return
		}
		for _, rec := range fp.Records {
			p.track.Add(rec.Offset)
			r.arrive(p, rec, now)
		}
		if !p.paused && p.waiting >= r.cfg.MaxHeldPerPartition {
			r.setPaused(p, true)
			r.cl.PauseFetchPartitions(map[string][]int32{p.topic: {p.partition}})
		}
	})
}

func (r *Router) part(topic string, id int32) *partition {
	k := tp{topic, id}
	if p, ok := r.parts[k]; ok {
		return p
	}
	tier, ok := r.tierOf[topic]
	if !ok {
		r.log.Error("records from a topic that is not a delay topic", "topic", topic)
		return nil
	}
	name := tiers.Name(tier)
	p := &partition{tp: k, tier: tier, track: offsets.NewTracker(),
		heldGauge: r.metrics.held.WithLabelValues(name),
		forwarded: r.metrics.forwarded.WithLabelValues(name),
		overrun:   r.metrics.overrun.WithLabelValues(name),
	}
	r.parts[k] = p
	return p
}

// arrive decides what to do with a record just fetched.
func (r *Router) arrive(p *partition, rec *kgo.Record, now time.Time) {
	m, err := tiers.DecodeRecord(rec)
	if err == nil {
		err = tiers.CheckDue(m.Due, now, r.cfg.MaxDelay)
	}
	e := &entry{rec: rec, meta: m, part: p, idx: -1}
	if err != nil {
		r.deadLetter(e, err)
		return
	}
	if !m.Due.After(now) {
		r.forward(e, now)
		return
	}
	// A record is ready when it has waited out its tier, measured from its
	// timestamp, or when it is due, whichever comes first: a producer clock
	// running ahead can delay a hop, never a fire.
	e.ready = rec.Timestamp.Add(p.tier)
	if m.Due.Before(e.ready) {
		// Due before its tier wait ends (a delay shorter than the smallest
		// tier): into the timer if it is near and there is room.
		e.ready = m.Due
		if m.Due.Sub(now) < r.cfg.Tiers.Smallest() && r.hold(e) {
			return
		}
	}
	p.waiting++
	p.heldGauge.Inc()
	r.wake.push(e)
}

// timerFull reports whether the in-memory timer is at its capacity.
func (r *Router) timerFull() bool { return r.stats.timer.Load() >= int64(r.cfg.TimerCapacity) }

// setPaused records whether p is paused; the caller pauses or resumes it in
// the client.
func (r *Router) setPaused(p *partition, paused bool) {
	if p.paused == paused {
		return
	}
	p.paused = paused
	if paused {
		r.stats.paused.Add(1)
	} else {
		r.stats.paused.Add(-1)
	}
}

// hold puts e into the in-memory timer, if it has room.
func (r *Router) hold(e *entry) bool {
	if r.timerFull() {
		return false
	}
	e.timer, e.ready = true, e.meta.Due
	r.stats.timer.Add(1)
	e.part.timed++
	r.wake.push(e)
	return true
}

// fire acts on every entry that is ready at now.
func (r *Router) fire(now time.Time) {
	for e := r.wake.peek(); e != nil && !e.ready.After(now); e = r.wake.peek() {
		r.wake.pop()
		p := e.part
		if e.timer {
			r.stats.timer.Add(-1)
			p.timed--
			r.forward(e, now)
			continue
		}
		// e has waited out its tier (or is due).
		p.overrun.Observe(now.Sub(e.ready).Seconds())
		remaining := e.meta.Due.Sub(now)
		if remaining > 0 && remaining < r.cfg.Tiers.Smallest() && r.timerFull() {
			// The timer is full: e waits where it is until due, and keeps
			// counting towards pausing its partition.
			e.ready = e.meta.Due
			r.wake.push(e)
			continue
		}
		p.waiting--
		p.heldGauge.Dec()
		switch {
		case remaining <= 0:
			r.forward(e, now)
		case remaining < r.cfg.Tiers.Smallest():
			r.hold(e)
		default:
			r.hop(e, r.cfg.Tiers.Pick(remaining), now)
		}
		if p.paused && p.waiting <= r.cfg.MaxHeldPerPartition/2 {
			r.setPaused(p, false)
			r.cl.ResumeFetchPartitions(map[string][]int32{p.topic: {p.partition}})
		}
	}
}

// forward produces e to its target topic.
func (r *Router) forward(e *entry, now time.Time) {
	target := e.meta.Target
	if target == "" {
		target = r.cfg.Target
	}
	if late := now.Sub(e.meta.Due); late < 0 {
		// Never reached: every path to here checks the due time. Counted
		// so that an alert would show a regression.
		r.metrics.early.Inc()
		r.log.Error("forwarding before the due time", "topic", e.rec.Topic, "partition", e.rec.Partition, "offset", e.rec.Offset, "early", -late)
	} else {
		r.metrics.lateness.Observe(late.Seconds())
	}
	out := r.onward(e, target, now)
	out.Headers = tiers.SetHeaders(e.rec.Headers,
		kgo.RecordHeader{Key: tiers.HeaderPath, Value: []byte(tiers.AppendPath(e.meta.Path, e.part.tier))},
		kgo.RecordHeader{Key: tiers.HeaderForwarded, Value: tiers.FormatMillis(now)},
	)
	r.produce(e, out, kindForward, 0)
}

// hop moves e to the delay topic of tier.
func (r *Router) hop(e *entry, tier time.Duration, now time.Time) {
	out := r.onward(e, r.topicOf[tier], now)
	out.Headers = tiers.SetHeaders(e.rec.Headers,
		kgo.RecordHeader{Key: tiers.HeaderPath, Value: []byte(tiers.AppendPath(e.meta.Path, e.part.tier))},
		kgo.RecordHeader{Key: tiers.HeaderHops, Value: strconv.AppendInt(nil, int64(e.meta.Hops+1), 10)},
	)
	r.produce(e, out, kindHop, tier)
}

// deadLetter produces e to the dead-letter topic with the reason.
func (r *Router) deadLetter(e *entry, cause error) {
	code := tiers.ReasonOf(cause, reasonProduceFailed)
	r.log.Warn("dead letter", "topic", e.rec.Topic, "partition", e.rec.Partition, "offset", e.rec.Offset, "reason", code, "err", cause)
	r.stats.deadLettered.Add(1)
	r.metrics.deadLetters.WithLabelValues(string(code)).Inc()
	r.produce(e, tiers.DeadLetter(e.rec, r.cfg.DeadLetter, cause, r.clock.Now()), kindDeadLetter, 0)
}

func (r *Router) onward(e *entry, topic string, now time.Time) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: e.rec.Key, Value: e.rec.Value, Timestamp: now}
}

func (r *Router) produce(e *entry, out *kgo.Record, kind produceKind, to time.Duration) {
	e.part.inflight++
	// Records are produced with a background context: a stop waits for
	// them (bounded by ShutdownTimeout) instead of abandoning them.
	r.cl.Produce(context.Background(), out, func(_ *kgo.Record, err error) {
		r.mu.Lock()
		r.done = append(r.done, completion{e: e, kind: kind, to: to, err: err})
		r.mu.Unlock()
		select {
		case r.doneSig <- struct{}{}:
		default:
		}
	})
}

// complete applies the produce results waiting in r.done.
func (r *Router) complete() {
	r.mu.Lock()
	done := r.done
	r.done = nil
	r.mu.Unlock()
	for _, c := range done {
		p := c.e.part
		p.inflight--
		if p.gone {
			continue
		}
		if c.err != nil {
			if c.kind == kindDeadLetter {
				r.fatal = fmt.Errorf("dead-letter %s[%d]@%d to %s: %w", p.topic, p.partition, c.e.rec.Offset, r.cfg.DeadLetter, c.err)
				continue
			}
			r.deadLetter(c.e, fmt.Errorf("produce_failed: %w", c.err))
			continue
		}
		switch c.kind {
		case kindForward:
			r.stats.forwarded.Add(1)
			p.forwarded.Inc()
		case kindHop:
			r.stats.hopped.Add(1)
			r.metrics.hop(p.tier, c.to).Inc()
		}
		p.track.Done(c.e.rec.Offset)
	}
}

// releaseParts lets go of partitions being revoked or lost, and resumes
// them: a pause survives a revoke and a later re-assign. What a revoked
// partition holds is handed off (see handOff) so that its offsets can be
// committed in full and the next owner repeats nothing; what a lost
// partition holds is dropped, since its offsets cannot be committed anyway.
// answerRevokes waits for the produces in flight.
func (r *Router) releaseParts(parts map[string][]int32, lost bool) {
	resume := make(map[string][]int32)
	now := r.clock.Now()
	for topic, ps := range parts {
		for _, id := range ps {
			p, ok := r.parts[tp{topic, id}]
			if !ok {
				continue
			}
			if lost {
				// Dropped: the offsets stay uncommitted, so the records
				// are read again by the next owner.
				r.takeHeld(p)
				p.gone = true
			} else {
				r.handOff(p, now)
			}
			r.setPaused(p, false)
			resume[topic] = append(resume[topic], id)
		}
	}
	if len(resume) > 0 {
		r.cl.ResumeFetchPartitions(resume)
	}
}

// handOff moves what p holds back into Kafka: each held record is produced
// to the delay topic of what is left of its delay (or forwarded, if due), as
// a hop would. Once those produces are acknowledged every record p fetched is
// done, so a graceful stop or rebalance commits everything and the next owner
// neither loses nor repeats a record.
func (r *Router) handOff(p *partition, now time.Time) {
	for _, e := range r.takeHeld(p) {
		r.stats.handedOff.Add(1)
		if remaining := e.meta.Due.Sub(now); remaining <= 0 {
			r.forward(e, now)
		} else {
			r.hop(e, r.cfg.Tiers.Pick(remaining), now)
		}
	}
}

// takeHeld removes every entry of p from the router and returns them.
func (r *Router) takeHeld(p *partition) []*entry {
	if p.waiting+p.timed == 0 {
		return nil
	}
	var held []*entry
	for _, e := range r.wake {
		if e.part == p {
			held = append(held, e)
		}
	}
	for _, e := range held {
		r.wake.remove(e)
	}
	r.stats.timer.Add(-int64(p.timed))
	p.heldGauge.Sub(float64(p.waiting))
	p.waiting, p.timed = 0, 0
	return held
}

// answerRevokes replies to the revokes whose partitions have no produce in
// flight, or whose deadline has passed (or all, with force), and forgets
// those partitions.
func (r *Router) answerRevokes(reqs []*revokeReq, force bool) []*revokeReq {
	if len(reqs) == 0 {
		return reqs
	}
	now := time.Now() // revoke deadlines are wall-clock, like the group's
	keep := reqs[:0]
	for _, req := range reqs {
		drained := true
		for topic, ps := range req.parts {
			for _, id := range ps {
				if p, ok := r.parts[tp{topic, id}]; ok && p.inflight > 0 {
					drained = false
				}
			}
		}
		if !drained && !force && now.Before(req.deadline) {
			keep = append(keep, req)
			continue
		}
		var offs offsets.Commits
		if !req.lost {
			offs = r.offsets(req.parts)
		}
		for topic, ps := range req.parts {
			for _, id := range ps {
				if p, ok := r.parts[tp{topic, id}]; ok {
					p.gone = true
					delete(r.parts, tp{topic, id})
				}
			}
		}
		req.reply <- offs
	}
	return keep
}

// offsets returns the watermarks of the given partitions (all owned ones when
// parts is nil). Revoked partitions are counted only when named.
func (r *Router) offsets(parts map[string][]int32) offsets.Commits {
	out := make(offsets.Commits)
	if parts == nil {
		for _, p := range r.parts {
			if !p.gone {
				out.Add(p.topic, p.partition, &p.track)
			}
		}
		return out
	}
	for topic, ps := range parts {
		for _, id := range ps {
			if p, ok := r.parts[tp{topic, id}]; ok {
				out.Add(p.topic, p.partition, &p.track)
			}
		}
	}
	return out
}

// shutdown stops polling, hands off everything held and waits (bounded) for
// produces in flight, then returns the watermarks to commit.
func (r *Router) shutdown(stopPolling func(), revokes []*revokeReq) offsets.Commits {
	stopPolling()
	now := r.clock.Now()
	for _, p := range r.parts {
		if !p.gone {
			r.handOff(p, now)
		}
	}
	deadline := time.NewTimer(r.cfg.ShutdownTimeout)
	defer deadline.Stop()
wait:
	for inflight := r.inflight(); inflight > 0; inflight = r.inflight() {
		select {
		case <-r.doneSig:
			r.complete()
		case p := <-r.fetches: // a poll that raced with the stop: not taken
			close(p.ack)
		case <-deadline.C:
			r.log.Warn("shutdown deadline passed with produces in flight; their records will be read again", "inflight", inflight)
			break wait
		}
	}
	r.answerRevokes(revokes, true)
	return r.offsets(nil)
}

func (r *Router) inflight() int {
	n := 0
	for _, p := range r.parts {
		n += p.inflight
	}
	return n
}

// onRevoked commits what is done for the revoked partitions, after the loop
// has dropped what it held for them and their produces in flight finished.
func (r *Router) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	if len(revoked) == 0 {
		return
	}
	r.commitMu.Lock()
	defer r.commitMu.Unlock()
	offs, ok := r.request(revoked, false)
	if !ok || len(offs) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.RevokeTimeout)
	defer cancel()
	offsets.Commit(cctx, r.cl, offs, r.log)
}

// onLost forgets lost partitions; their offsets cannot be committed.
func (r *Router) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	if len(lost) > 0 {
		r.request(lost, true)
	}
}

func (r *Router) request(parts map[string][]int32, lost bool) (offsets.Commits, bool) {
	req := &revokeReq{parts: parts, lost: lost, deadline: time.Now().Add(r.cfg.RevokeTimeout), reply: make(chan offsets.Commits, 1)}
	select {
	case r.revokes <- req:
	case <-r.loopDone:
		return nil, false
	}
	// Wake the loop at the deadline, in case no produce result does.
	kick := time.AfterFunc(r.cfg.RevokeTimeout, func() {
		select {
		case r.doneSig <- struct{}{}:
		default:
		}
	})
	defer kick.Stop()
	// The loop answers after the drain or the deadline, and always before it
	// returns.
	return <-req.reply, true
}

// commitLoop commits the watermarks every CommitInterval.
func (r *Router) commitLoop(ctx context.Context) {
	t := r.clock.NewTimer(r.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		r.commitMu.Lock()
		reply := make(chan offsets.Commits, 1)
		select {
		case r.offsetsQ <- reply:
			offsets.Commit(ctx, r.cl, <-reply, r.log)
		case <-r.loopDone:
		}
		r.commitMu.Unlock()
		t.Reset(r.cfg.CommitInterval)
	}
}

func (r *Router) commit(ctx context.Context, offs offsets.Commits) {
	r.commitMu.Lock()
	defer r.commitMu.Unlock()
	offsets.Commit(ctx, r.cl, offs, r.log)
}
