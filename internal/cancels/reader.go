package cancels

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults of ReaderConfig.
const (
	// DefaultGrace is how long a cancellation is kept after the furthest
	// deadline it can call off was due, for a router that reaches that
	// deadline late.
	DefaultGrace = time.Hour
	// MaxAhead is how far a cancellation's time may run ahead of the
	// router's clock: one stamped further ahead calls off nothing until the
	// router's clock is within MaxAhead of it (see Check).
	MaxAhead = 5 * time.Minute
	// defaultFetchBytes bounds one fetch of the topic, so that a rebuild
	// does not hold kgo's default 50 MiB of fetched records.
	defaultFetchBytes = 1 << 20
	// applyBatch is the most records written to the store in one batch.
	applyBatch = 1000
	// freeAfter is how many records a read takes before the reader
	// returns its garbage to the OS once it is over (see release), and
	// releaseIdle how long nothing must be read for it to be over.
	freeAfter   = 50_000
	releaseIdle = 2 * time.Second
	// sweepEvery is how often expired cancellations are deleted.
	sweepEvery = time.Minute
	// progressEvery is how often a long read of the topic is logged.
	progressEvery = 5 * time.Second
	// roundRetry is the wait after a failed listing of end offsets.
	roundRetry = 250 * time.Millisecond
	// startWait bounds the wait for the topic at the start.
	startWait = time.Minute
	// partitionsEvery is how often a round looks for partitions added to
	// the topic; the other rounds list the end offsets of those known.
	partitionsEvery = 10 * time.Second
	// listTimeout bounds one listing of the end offsets: franz-go retries a
	// retriable answer (NOT_LEADER_OR_FOLLOWER, a broker that does not
	// answer) for up to 30 s by itself, while every due deadline waits.
	listTimeout = 5 * time.Second
	// stallWarn is how long a round waits for the positions to reach the
	// end offsets before it says so, and how often it says so again.
	stallWarn = 5 * time.Second
)

// ReaderConfig configures a Reader.
type ReaderConfig struct {
	// Topic is the cancellations topic. Required.
	Topic string
	// Kafka are the connection options (brokers, TLS, SASL).
	Kafka []kgo.Opt
	// MaxDelay is how far ahead a deadline can be due (the router's
	// --max-delay): a cancellation is kept that long after it was made,
	// plus Grace, and one naming a due time further from its own time is
	// invalid. Required.
	MaxDelay time.Duration
	// Grace is how long a cancellation is kept after the furthest deadline
	// it can call off was due; default DefaultGrace.
	Grace time.Duration
	// MaxKeyBytes is the longest task id a deadline may have (the router's
	// --max-key-bytes): a cancellation with a longer key can call off
	// nothing and is invalid. Default tiers.DefaultMaxKeyBytes.
	MaxKeyBytes int
	// Clock is the time source; default the wall clock.
	Clock clock.Clock
	// Logger receives the reader's logs; default slog.Default().
	Logger *slog.Logger
	// Invalid is called for each record that breaks the contract or the
	// limits, with an *tiers.InvalidError; default none.
	Invalid func(rec *kgo.Record, err error)
}

// Reader reads the cancellations topic into a Store and tells whether a
// due deadline may leave (Check). Every router reads the whole topic, so a
// rebalance moves no cancellation. Create one with NewReader and start it
// with Run.
type Reader struct {
	cfg   ReaderConfig
	store *Store
	cl    *kgo.Client
	adm   *kadm.Client

	// applyMu is held by whoever applies records to the store and the
	// transactions' tracker: the consume goroutine, and a round that ends
	// orphaned transactions.
	applyMu sync.Mutex
	txns    *txns

	mu  sync.Mutex
	pos map[int32]int64 // next offset to read, per partition
	// held counts the pending records of each task id written in
	// transactions still open, as far as the store's batches go.
	held   map[string]int
	frozen bool // every task id is held (see txns)
	// progress is signalled (capacity 1) after a batch is applied.
	progress chan struct{}

	partitionsChecked time.Time    // the rounds' goroutine's
	applied           atomic.Int64 // records read so far
	openTxns          atomic.Int64 // transactions open with pending records
	oldestTxn         atomic.Int64 // unix ns the oldest of them was first read; 0 without one

	covered atomic.Int64 // unix ns; every cancellation acknowledged before it is read
	wanted  atomic.Int64 // unix ns a round has been asked to cover
	// behindSince is when the rounds began to owe a wanted round, unix
	// ns; 0 while they owe none (see Behind).
	behindSince atomic.Int64
	want        chan struct{}
	advanced    chan struct{}
}

// NewReader returns a Reader of cfg into store. It reads from the offsets
// the store records, or from the start of the topic.
func NewReader(cfg ReaderConfig, store *Store) (*Reader, error) {
	if cfg.Topic == "" || cfg.MaxDelay <= 0 {
		return nil, errors.New("cancels: reader needs a topic and a maximum delay")
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.MaxKeyBytes <= 0 {
		cfg.MaxKeyBytes = tiers.DefaultMaxKeyBytes
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	opts := append(append(append([]kgo.Opt(nil), cfg.Kafka...), kafka.ReaderOpts(0)...),
		// Uncommitted records too, so that a transaction left open holds
		// only the task ids it wrote (see txns), not the whole topic
		// behind its last stable offset.
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		// Control records (transaction markers) end the transactions.
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(defaultFetchBytes),
		kgo.FetchMaxPartitionBytes(defaultFetchBytes),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("cancels: %w", err)
	}
	return &Reader{
		cfg: cfg, store: store, cl: cl, adm: kadm.NewClient(cl),
		txns:     newTxns(),
		pos:      make(map[int32]int64),
		held:     make(map[string]int),
		progress: make(chan struct{}, 1),
		want:     make(chan struct{}, 1),
		advanced: make(chan struct{}, 1),
	}, nil
}

// Run reads until ctx is canceled, then closes the client. It returns an
// error when the topic cannot be read at the start.
func (r *Reader) Run(ctx context.Context) error {
	defer r.cl.Close()
	if err := r.start(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.rounds(ctx) })
	wg.Go(func() { r.sweep(ctx) })
	wg.Go(func() { r.release(ctx) })
	err := r.consume(ctx)
	cancel()
	wg.Wait()
	return err
}

// start finds the topic's partitions and where to read each from: the
// store's offsets when they are of this topic and within it, else the
// start (a topic deleted and created again voids the store).
func (r *Reader) start(ctx context.Context) error {
	starts, ends, err := r.waitTopic(ctx)
	if err != nil {
		return err
	}
	id, err := r.topicID(ctx)
	if err != nil {
		return err
	}
	storedID, err := r.store.TopicID()
	if err != nil {
		return err
	}
	stored, err := r.store.Offsets()
	if err != nil {
		return err
	}
	reset := id != nil && storedID != nil && !bytes.Equal(id, storedID)
	if reset {
		r.cfg.Logger.Warn("the store of cancellations was read from another topic of the name (was the topic created again?); reading the topic from its start",
			"topic", r.cfg.Topic)
	}
	for p, next := range stored {
		if end, ok := ends[p]; !reset && (!ok || next > end) {
			r.cfg.Logger.Warn("the store of cancellations is ahead of its topic (was the topic created again?); reading the topic from its start",
				"topic", r.cfg.Topic, "partition", p, "stored", next, "end", end)
			reset = true
		}
	}
	if reset {
		if err := r.store.Reset(); err != nil {
			return err
		}
		stored = nil
	}
	if id != nil && !bytes.Equal(id, storedID) {
		if err := r.store.SetTopicID(id); err != nil {
			return err
		}
	}
	assign := make(map[int32]kgo.Offset, len(starts))
	for p, start := range starts {
		next := max(stored[p], start)
		r.pos[p] = next
		assign[p] = kgo.NewOffset().At(next)
	}
	r.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{r.cfg.Topic: assign})
	// The partitions were just listed: the first rounds list only the end
	// offsets. The first round runs at once, so that the read of the topic
	// is over before the first deadline falls due.
	r.partitionsChecked = time.Now()
	r.Want(r.cfg.Clock.Now())
	var behind int64
	for p, end := range ends {
		behind += end - r.pos[p]
	}
	r.cfg.Logger.Info("reading cancellations", "topic", r.cfg.Topic, "partitions", len(starts), "records_to_read", behind, "held", r.store.Len())
	return nil
}

// waitTopic lists the offsets of the topic, waiting up to startWait for it
// to exist: a router and the command that creates the topics may start
// together.
func (r *Reader) waitTopic(ctx context.Context) (starts, ends map[int32]int64, err error) {
	deadline := time.Now().Add(startWait)
	for {
		starts, ends, err = r.listOffsets(ctx)
		if err == nil && len(starts) > 0 {
			return starts, ends, nil
		}
		if err == nil {
			err = errors.New("no partitions")
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("cancels: the cancellations topic %s cannot be read (create it with `hourglass topics`, or name it with --cancellations-topic): %w", r.cfg.Topic, err)
		}
		r.cfg.Logger.Warn("waiting for the cancellations topic", "topic", r.cfg.Topic, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// topicID returns the id of the topic, or nil from a broker that has no
// topic ids.
func (r *Reader) topicID(ctx context.Context) ([]byte, error) {
	tds, err := r.adm.ListTopics(ctx, r.cfg.Topic)
	if err == nil {
		err = tds.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("cancels: describe %s: %w", r.cfg.Topic, err)
	}
	id := tds[r.cfg.Topic].ID
	if id == (kadm.TopicID{}) {
		return nil, nil
	}
	return id[:], nil
}

// listOffsets returns the start and the end offset (high watermark) of
// every partition of the topic.
func (r *Reader) listOffsets(ctx context.Context) (starts, ends map[int32]int64, err error) {
	so, err := r.adm.ListStartOffsets(ctx, r.cfg.Topic)
	if err == nil {
		err = so.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cancels: list start offsets of %s: %w", r.cfg.Topic, err)
	}
	eo, err := r.adm.ListEndOffsets(ctx, r.cfg.Topic)
	if err == nil {
		err = eo.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cancels: list end offsets of %s: %w", r.cfg.Topic, err)
	}
	starts, ends = make(map[int32]int64), make(map[int32]int64)
	so.Each(func(o kadm.ListedOffset) { starts[o.Partition] = o.Offset })
	eo.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	return starts, ends, nil
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
