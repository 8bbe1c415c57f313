package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/kafka"
)

// Defaults of Config.
const (
	// DefaultCommitInterval is the least time between two commits.
	DefaultCommitInterval = 50 * time.Millisecond
	// DefaultRevokeTimeout bounds how long a revoke waits for the work of
	// the revoked partitions before it commits what is done.
	DefaultRevokeTimeout = 5 * time.Second
)

// Config is how a Member joins its group and commits.
type Config struct {
	// Group names the group, its topics and the member's instance id and
	// session timeout; Name and Topics are required.
	Group Group
	// Kafka are the connection options (brokers, TLS, SASL, client id).
	Kafka []kgo.Opt
	// Opts are the service's other client options (fetch and producer
	// settings, hooks); the group's own options (Group.Opts) and the
	// rebalance callbacks come first and must not be repeated here.
	Opts []kgo.Opt
	// CommitInterval is the least time between two commits; default
	// DefaultCommitInterval.
	CommitInterval time.Duration
	// CommitTimeout bounds one commit; default DefaultCommitTimeout.
	CommitTimeout time.Duration
	// RevokeTimeout bounds Release at a revoke; default
	// DefaultRevokeTimeout.
	RevokeTimeout time.Duration
	// Release lets go of the records the service took from partitions
	// being revoked, or lost (lost true). For a revoke it returns once
	// every record it took from them is done (Member.Done) or given up, or
	// when deadline passes; the Member then commits their watermarks. For
	// a loss nothing is committed, and it may return at once. It is called
	// between polls (the group blocks rebalances while a poll's records
	// are being taken), and also after the service has stopped (a
	// rebalance during or after the stop); it must then return at once.
	// Default: nothing to let go of.
	Release func(parts map[string][]int32, lost bool, deadline time.Time)
	// Clock times the commit interval; default the wall clock.
	Clock clock.Clock
	// Logger receives warnings about commits; default slog.Default().
	Logger *slog.Logger
	// Registerer receives the member's series
	// (hourglass_consumer_commit_failures_total); default none.
	Registerer prometheus.Registerer
}

// Member is a commit-safe member of a consumer group: it commits, for each
// partition, only below the first record the service has not finished (the
// contiguous watermark), soon after it advances, and at a revoke and at the
// stop, always with a fresh bounded context. Create one with New, take each
// record with Take and finish it with Done; Start commits in the
// background, Close makes the last commit and leaves the group.
//
// Every commit, the periodic ones and those of a revoke and the stop, is
// serialized by one lock held from the reading of the watermarks to the
// commit's answer; a revoked or lost partition is forgotten under that lock,
// so that no commit computed before it lands after it (on a partition
// another member may already have moved on).
type Member struct {
	cfg     Config
	cl      *kgo.Client
	log     *slog.Logger
	comm    *committer
	backoff *kafka.FetchBackoff // paces partitions whose fetches fail
	fails   failures            // runs of fetch errors (FetchFailing)

	mu    sync.Mutex // guards parts, assigned and every partition's tracker
	parts map[tp]*partition
	// assigned holds the done offsets above the commit of partitions just
	// assigned (see handled), until their first record is taken.
	assigned map[tp]handled
	// metaBits bounds the done offsets a commit records above its
	// watermark: maxHandledBits, or 0 once the brokers refused the metadata
	// as too large.
	metaBits atomic.Int64
	skipped  prometheus.Counter // records skipped as handled before

	stopCommits context.CancelFunc
	committing  sync.WaitGroup
}

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// partition is the commit state of one assigned partition: which of the
// records taken from it are finished.
type partition struct {
	tp
	track tracker
	// handled are the offsets above the commit it was assigned with that
	// were done before (a crash or a rebalance came first): Take skips
	// them. hasHandled is false once the offsets taken are past them.
	handled    handled
	hasHandled bool
}

// Mark is a record taken from a partition, to finish with Member.Done. Its
// zero value is no record: Done ignores it.
type Mark struct {
	p       *partition
	offset  int64
	epoch   int // the tracker's epoch when the record was taken (see tracker.Stale)
	handled bool
}

// Handled reports that the record was done before its partition was
// assigned to this member: the commit it was assigned with records it as
// done above the committed offset (a crash or a rebalance came between the
// record's work and the commit's reaching it). The service must drop it;
// the member counts it done.
func (k Mark) Handled() bool { return k.handled }

// Offset returns the offset of the marked record.
func (k Mark) Offset() int64 { return k.offset }

// New returns a member of cfg.Group, not yet started.
func New(cfg Config) (*Member, error) {
	if cfg.Group.Name == "" || len(cfg.Group.Topics) == 0 {
		return nil, errors.New("consumer: a group name and topics are required")
	}
	if cfg.CommitInterval <= 0 {
		cfg.CommitInterval = DefaultCommitInterval
	}
	if cfg.CommitTimeout <= 0 {
		cfg.CommitTimeout = DefaultCommitTimeout
	}
	if cfg.RevokeTimeout <= 0 {
		cfg.RevokeTimeout = DefaultRevokeTimeout
	}
	if cfg.Release == nil {
		cfg.Release = func(map[string][]int32, bool, time.Time) {}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Member{cfg: cfg, log: cfg.Logger, parts: make(map[tp]*partition), assigned: make(map[tp]handled)}
	m.metaBits.Store(maxHandledBits)
	opts := append([]kgo.Opt{
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, parts map[string][]int32) { m.Revoked(parts) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, parts map[string][]int32) { m.Lost(parts) }),
		// Called at every join that worked, even with nothing new assigned.
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { m.fails.assigned() }),
		kgo.OnOffsetsFetched(func(_ context.Context, _ *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
			m.fetched(resp)
			return nil
		}),
	}, cfg.Kafka...)
	cl, err := cfg.Group.NewClient(append(opts, cfg.Opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	m.cl = cl
	m.backoff = kafka.NewFetchBackoff(cl)
	failures, skipped, err := newMetrics(cfg.Registerer, cfg.Group.Name, m.FetchFailingFor)
	if err != nil {
		cl.Close()
		return nil, err
	}
	m.skipped = skipped
	m.comm = &committer{
		Client: cl, Source: m.watermarks, Interval: cfg.CommitInterval, Timeout: cfg.CommitTimeout, Clock: cfg.Clock,
		OnError: func(err error) {
			failures.Inc()
			m.log.Warn("commit failed; retrying", "err", err)
			m.metadataRefused(err)
		},
	}
	return m, nil
}

// Client returns the member's Kafka client: the service polls, produces
// and pauses with it.
func (m *Member) Client() *kgo.Client { return m.cl }

// Start commits in the background, at most every CommitInterval after a
// record is finished, until Close.
func (m *Member) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	m.stopCommits = cancel
	m.committing.Go(func() { m.comm.Run(ctx) })
}

// Close stops the background commits, commits what is finished with a fresh
// context, and closes the client: a dynamic member leaves its group, and its
// partitions are revoked (Release is called again; see Config.Release). A
// static member then leaves its group explicitly, through a short-lived
// client bounded by 5s, since closing its client does not: without it the
// other members would take its partitions only after the session timeout.
// Records finished after Close are never committed; the next owner reads
// them again.
func (m *Member) Close(ctx context.Context) {
	if m.stopCommits != nil {
		m.stopCommits()
		m.committing.Wait()
	}
	err := m.Commit()
	if err != nil && m.metadataRefused(err) {
		err = m.Commit() // again, without the metadata refused
	}
	if err != nil {
		m.log.Warn("final commit failed; the records after the last commit will be read again", "err", err)
	}
	m.backoff.Close()
	m.cl.Close()
	if id := m.cfg.Group.InstanceID; id != "" {
		if err := LeaveGroup(ctx, m.cfg.Kafka, m.cfg.Group.Name, id); err != nil {
			m.log.Warn("the other members take this member's partitions after the session timeout", "err", err)
		}
	}
}

// Commit commits the watermark of every partition now, with a fresh
// context bounded by CommitTimeout, and returns the commit's error or the
// first partition the broker refused. A failed commit loses nothing: the
// records after the last committed offset are read again.
func (m *Member) Commit() error { return m.comm.Do(m.watermarks) }

// Take records that r was taken, and returns its mark, to finish with Done.
// Offsets normally rise within a partition; an offset at or below one taken
// before means the partition was reset to it (the log was truncated after a
// leader change, or the consumer was moved back): what was taken before
// from there up is forgotten, and Done ignores its marks.
func (m *Member) Take(r *kgo.Record) Mark {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.take(r.Topic, r.Partition, r.Offset)
}

// TakeSkipped records that the poll skipped the batch b (too large to
// decompress or malformed; see kafka.SkipBatch): its offsets hold nothing
// to do besides what the returned mark stands for, typically one dead
// letter naming the batch.
func (m *Member) TakeSkipped(b *kgo.ErrDecompressTooLarge) Mark {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.take(b.Topic, b.Partition, b.Offset)
	k.p.track.Skip(b.NextOffset)
	return k
}

func (m *Member) take(topic string, id int32, offset int64) Mark {
	m.backoff.Succeeded(topic, id)
	k := tp{topic, id}
	m.fails.succeeded(k)
	p, ok := m.parts[k]
	if !ok {
		p = &partition{tp: k, track: newTracker()}
		p.handled, p.hasHandled = m.assigned[k]
		delete(m.assigned, k)
		m.parts[k] = p
	}
	if p.hasHandled {
		switch {
		case p.handled.has(offset):
			p.track.Add(offset)
			p.track.Done(offset)
			m.skipped.Inc()
			return Mark{handled: true}
		case p.handled.past(offset):
			p.handled, p.hasHandled = handled{}, false
		}
	}
	if p.track.Add(offset) {
		m.log.Warn("partition reset to an earlier offset; records taken before from there up are forgotten", "topic", topic, "partition", id, "offset", offset)
	}
	return Mark{p: p, offset: offset, epoch: p.track.Epoch()}
}

// Done finishes the marked records: each is durably handled (its results
// acknowledged by Kafka, or its close applied), and the watermark may move
// past it. Marks of a partition revoked or reset since they were taken are
// ignored.
func (m *Member) Done(marks ...Mark) {
	m.mu.Lock()
	for _, k := range marks {
		if k.p != nil && !k.p.track.Stale(k.epoch, k.offset) {
			k.p.track.Done(k.offset)
		}
	}
	m.mu.Unlock()
	m.comm.Notify()
}

// Stale reports whether k's record was forgotten since it was taken: its
// partition was reset below it, or revoked or lost. Its results, if any,
// are for the next owner to produce again.
func (m *Member) Stale(k Mark) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return k.p == nil || m.parts[k.p.tp] != k.p || k.p.track.Stale(k.epoch, k.offset)
}

// watermarks returns the watermark of every partition.
func (m *Member) watermarks() commits {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(commits, 1)
	for k, p := range m.parts {
		out.add(k.topic, k.partition, &p.track, int(m.metaBits.Load()))
	}
	return out
}

// forget drops parts and returns their watermarks.
func (m *Member) forget(parts map[string][]int32) commits {
	m.backoff.Forget(parts)
	m.fails.forget(parts)
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(commits, len(parts))
	for topic, ps := range parts {
		for _, id := range ps {
			if p, ok := m.parts[tp{topic, id}]; ok {
				out.add(topic, id, &p.track, int(m.metaBits.Load()))
				delete(m.parts, tp{topic, id})
			}
			delete(m.assigned, tp{topic, id})
		}
	}
	return out
}

// Revoked lets the service finish or hand off what it took from the
// revoked partitions, bounded by RevokeTimeout, then commits their
// watermarks and forgets them, under the commit lock, so that no later
// commit names them. Commits go on while the service lets go: the group
// gives the partitions to another member only once Revoked returns, and
// any commit before that is at most the one Revoked makes. The client
// calls it at a revoke (between polls); a service's tests call it to act
// out one.
func (m *Member) Revoked(revoked map[string][]int32) {
	if len(revoked) == 0 {
		return
	}
	m.cfg.Release(revoked, false, time.Now().Add(m.cfg.RevokeTimeout))
	if err := m.comm.Do(func() commits { return m.forget(revoked) }); err != nil {
		m.log.Warn("commit at revoke failed; the next owner reads the records after the last commit again", "err", err)
		m.metadataRefused(err)
	}
}

// Lost forgets lost partitions, under the commit lock, so that no commit
// names them from then on: another member may own them already. Then it lets
// the service drop what it took from them. The client calls it when the
// member lost its partitions (its session expired, or it was fenced); a
// service's tests call it to act out one.
func (m *Member) Lost(lost map[string][]int32) {
	if len(lost) == 0 {
		return
	}
	_ = m.comm.Do(func() commits {
		m.forget(lost)
		return nil
	})
	m.cfg.Release(lost, true, time.Now().Add(m.cfg.RevokeTimeout))
}
