package recordercmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/chflags"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/recorder"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

const recorderUsage = `hourglass recorder loads outcome events into ClickHouse, and indexes every
deadline.

It consumes the outcomes topic as a consumer group, inserts the events in
batches (at --batch-rows events, or --flush-interval after a batch's first
event) into the outcomes table of --clickhouse-database, and commits a batch
only after its insert. While ClickHouse is down it retries the insert with
backoff, reads nothing more and commits nothing; when ClickHouse is back it
catches up. Events recorded twice (after a crash of the canceller or of the
recorder) count once in every query.

With --index (the default) the same consumer group reads every delay topic
of --topic-prefix, the cancellations topic and the dead-letter topic, and
inserts a row per scheduled deadline (its first record: hops and retries add
none), per cancellation and per dead letter: the deadline index that
hourglass status reads in milliseconds and the forecast of due load counts.

The recorder is its own process, not part of the canceller, so that a
ClickHouse outage or a slow insert never delays a close: the canceller only
produces outcome events to Kafka, which keeps them until the recorder has
inserted them.

With --migrate (the default) it creates the database and applies the schema
migrations at start; run one recorder with it, or run them all with it (the
migrations are idempotent). It waits for ClickHouse at start.

Usage: hourglass recorder [flags]

` + cli.FlagsHeading + "\n"

// Config is the recorder command's configuration.
type Config struct {
	service.Common
	Recorder   recorder.Config
	ClickHouse chstore.Config
	Prefix     string
	Migrate    bool
	// MigrateOnly applies the migrations and exits, without Kafka: for a
	// migration Job that runs before the recorders start.
	MigrateOnly bool
	// OutcomesKeyFile holds the canceller's signing key
	// (--outcomes-key-file); empty: every event is stored.
	OutcomesKeyFile string
	// Index indexes the deadlines (--index), into Recorder.Index.
	Index bool
	// IndexTopics are the cancellations and dead-letter topics of the
	// index (--cancellations-topic, --dlq-topic).
	IndexTopics recorder.Index
}

func parse(args []string, stdout, stderr io.Writer) (*Config, bool, error) {
	var c Config
	fs := cli.NewFlagSet("recorder", recorderUsage)
	fs.SetOutput(stderr)
	fs.Sections(sectionClickHouse)
	c.Register(fs, "hourglass-recorder", "127.0.0.1:8082")
	k := &c.Recorder
	fs.StringVar(&c.Prefix, "topic-prefix", cli.Env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name")
	register(fs, k)
	fs.BoolVar(&c.Index, "index", cli.Env("index"), true,
		"index every deadline, cancellation and dead letter of --topic-prefix, for hourglass status and the forecast")
	fs.StringVar(&c.IndexTopics.Cancellations, "cancellations-topic", cli.Env("cancellations-topic"), "", "compacted `topic` of cancellations, indexed (default <prefix>cancellations)")
	fs.StringVar(&c.IndexTopics.DeadLetters, "dlq-topic", cli.Env("dlq-topic"), "", "dead-letter `topic`, indexed (default <prefix>dlq)")
	fs.StringVar(&c.OutcomesKeyFile, "outcomes-key-file", cli.Env("outcomes-key-file"), "",
		"`file` holding the canceller's outcome signing key: events without a valid signature are skipped (default: every event is stored)")
	fs.Section(sectionClickHouse)
	chflags.Register(fs, &c.ClickHouse)
	fs.BoolVar(&c.Migrate, "migrate", cli.Env("migrate"), true, "create the database and apply schema migrations at start")
	fs.BoolVar(&c.MigrateOnly, "migrate-only", cli.Env("migrate-only"), false, "apply the schema migrations and exit, without Kafka (for a migration Job)")
	fs.Section("")
	sections(fs)
	stop, err := service.Parse(fs, args, stdout, &c.Common, func() error {
		flags.DefaultGroup(fs, &k.Group, c.Prefix, "recorder")
		return c.check()
	})
	return &c, stop, err
}

// Run is the `hourglass recorder` command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, stop, err := parse(args, stdout, stderr)
	if stop || err != nil {
		return err
	}
	log := c.Logger(stderr, "recorder")
	c.LogDeprecated(log)
	if c.MigrateOnly {
		return migrateOnly(ctx, c, stdout, log)
	}
	opts, err := c.KgoOpts()
	if err != nil {
		return err
	}
	k := c.Recorder
	specs := c.Specs(topics.Set{Prefix: c.Prefix, Outcomes: k.Topic})
	if err := service.EnsureTopics(ctx, opts, specs, c.CreateTopics, log); err != nil {
		return err
	}
	// /healthz and /metrics answer while the recorder waits for ClickHouse
	// (which may take long); /readyz once it consumes.
	tel := telemetry.New()
	var running atomic.Pointer[recorder.Recorder]
	ready := func() error { r := running.Load(); return telemetry.NotReady(r != nil && r.Ready()) }
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return service.ServeHTTP(gctx, c.HTTPAddr, ready, tel, c.Pprof, log) })
	g.Go(func() error {
		store, err := openStore(gctx, c.ClickHouse, c.Migrate, log)
		if err != nil {
			if gctx.Err() != nil {
				return nil // stopped while waiting for ClickHouse
			}
			return err
		}
		defer store.Close()
		rec, err := recorder.New(k, recorder.Options{Kafka: opts, Hooks: []kgo.Hook{tel.Hook()}, Store: store, Logger: log, Registerer: tel})
		if err != nil {
			return err
		}
		running.Store(rec)
		log.Info("recorder starting", "topic", k.Topic, "group", k.Group, "index", k.Index != nil, "clickhouse", c.ClickHouse.String(), "batch_rows", k.BatchRows, "flush_interval", k.FlushInterval)
		lagCtx, stopLag := context.WithCancel(gctx)
		lagDone := make(chan struct{})
		go func() { defer close(lagDone); tel.WatchLag(lagCtx, rec.Client(), k.Group, c.LagInterval, log) }()
		err = rec.Run(gctx)
		stopLag()
		<-lagDone
		log.Info("recorder stopped", "stats", fmt.Sprintf("%+v", rec.Stats()))
		return err
	})
	return g.Wait()
}

// openStore connects to ClickHouse and, with migrate, applies the schema
// migrations. While ClickHouse does not answer it retries, backing off from
// 1s to 30s, until ctx is canceled; a configuration the server refuses
// (a wrong password, an unknown user) fails at once.
func openStore(ctx context.Context, cfg chstore.Config, migrate bool, log *slog.Logger) (*chstore.Store, error) {
	wait := time.Second
	for {
		store, err := chstore.Open(ctx, cfg)
		if err == nil && migrate {
			var applied []uint32
			applied, err = store.Migrate(ctx)
			if err != nil {
				store.Close()
			} else if len(applied) > 0 {
				log.Info("applied schema migrations", "database", cfg.Database, "versions", applied)
			}
		}
		if err == nil {
			return store, nil
		}
		if chstore.IsRefused(err) {
			return nil, err
		}
		log.Warn("ClickHouse is not available; retrying", "clickhouse", cfg.String(), "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stopped while waiting for ClickHouse %s (%w): %w", cfg.String(), ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// migrateOnly applies the schema migrations, for --migrate-only.
func migrateOnly(ctx context.Context, c *Config, stdout io.Writer, log *slog.Logger) error {
	// ClickHouse may still be starting: openStore waits, bounded by
	// ctx (and by the Job's deadline).
	store, err := openStore(ctx, c.ClickHouse, true, log)
	if err != nil {
		return err
	}
	defer store.Close()
	fmt.Fprintf(stdout, "schema of %s is at version %d\n", c.ClickHouse.Database, chstore.SchemaVersion())
	return nil
}
