package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"golang.org/x/sync/errgroup"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/pkg/tiers"
)

const cancellerUsage = `canceller closes due Hourglass tasks.

It consumes the cancel topic as a consumer group, applies an idempotent close
through the configured closer, produces one outcome event per close to the
outcomes topic, and commits a record only when its close and its outcome are
done.

Usage: canceller [flags]

Flags (each has an environment variable; flags win):
`

// CancellerConfig is the canceller service's configuration.
type CancellerConfig struct {
	common
	Canceller canceller.Config
	Closer    string
	tiers     string
}

// closers are the closers selectable with --closer.
var closers = map[string]func(log *slog.Logger) closer.Closer{
	"log": func(log *slog.Logger) closer.Closer { return closer.Log{Logger: log} },
}

func parseCanceller(args []string, stdout, stderr io.Writer) (*CancellerConfig, bool, error) {
	var c CancellerConfig
	fs := cli.NewFlagSet("canceller", cancellerUsage)
	fs.SetOutput(stderr)
	c.register(fs, "hourglass-canceller", ":8081")
	k := &c.Canceller
	fs.StringVar(&k.Prefix, "topic-prefix", env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name")
	fs.StringsVar(&k.Topics, "topics", env("topics"), nil, "target `topics` to consume, comma-separated (default <prefix>cancel)")
	fs.StringVar(&k.Outcomes, "outcomes-topic", env("outcomes-topic"), "", "`topic` of outcome events (default <prefix>outcomes)")
	fs.StringVar(&k.DeadLetter, "dlq-topic", env("dlq-topic"), "", "dead-letter `topic` (default <prefix>dlq)")
	fs.StringVar(&k.Group, "group", env("group"), canceller.DefaultGroup, "consumer `group`")
	fs.StringVar(&k.DefaultKind, "default-kind", env("default-kind"), canceller.DefaultKind, "`kind` of tasks without hourglass-kind")
	fs.StringVar(&c.Closer, "closer", env("closer"), "log", "how tasks are closed: log")
	fs.DurationVar(&k.CloseTimeout, "close-timeout", env("close-timeout"), canceller.DefaultCloseTimeout, "bound on one close")
	fs.IntVar(&k.MaxPollRecords, "max-poll-records", env("max-poll-records"), canceller.DefaultMaxPollRecords, "records taken per poll")
	fs.DurationVar(&k.CommitInterval, "commit-interval", env("commit-interval"), canceller.DefaultCommitInterval, "how often offsets are committed")
	fs.DurationVar(&k.ShutdownTimeout, "shutdown-timeout", env("shutdown-timeout"), canceller.DefaultShutdownTimeout, "bound on a graceful stop")
	fs.StringVar(&k.Instance, "instance", env("instance"), "", "`name` of this instance in outcome events (default the host name)")
	fs.StringVar(&c.tiers, "tiers", env("tiers"), tiers.DefaultTiers, "delay tiers (the router's): retries are rescheduled through them")
	fs.IntVar(&k.MaxInFlight, "max-in-flight", env("max-in-flight"), canceller.DefaultMaxInFlight, "records closing or waiting at once; one task id never closes twice at once")
	fs.Float64Var(&k.RateLimit, "rate-limit", env("rate-limit"), 0, "closes per second over all kinds, 0 for no limit")
	fs.IntVar(&k.RateBurst, "rate-burst", env("rate-burst"), canceller.DefaultRateBurst, "closes allowed at once above --rate-limit")
	fs.IntVar(&k.MaxAttempts, "max-attempts", env("max-attempts"), canceller.DefaultMaxAttempts, "close attempts before a task goes to the dead-letter topic")
	fs.DurationVar(&k.RetryBackoff, "retry-backoff", env("retry-backoff"), canceller.DefaultRetryBackoff, "wait before the second attempt; doubles per attempt, half of it random")
	fs.DurationVar(&k.RetryBackoffMax, "retry-backoff-max", env("retry-backoff-max"), canceller.DefaultRetryBackoffMax, "longest wait between attempts")
	stop, err := parse(fs, args, stdout, &c.common, func() checks {
		var errs checks
		if _, ok := closers[c.Closer]; !ok {
			errs.add("closer", "%q: want log", c.Closer)
		}
		k.Tiers = errs.tiers("tiers", c.tiers)
		// Only the topic names derive from the prefix; a zero anywhere else
		// is the user's and is reported rather than replaced.
		if len(k.Topics) == 0 {
			k.Topics = []string{tiers.CancelTopic(k.Prefix)}
		}
		if k.Outcomes == "" {
			k.Outcomes = tiers.OutcomesTopic(k.Prefix)
		}
		if k.DeadLetter == "" {
			k.DeadLetter = tiers.DeadLetterTopic(k.Prefix)
		}
		return append(errs, k.Validate()...)
	})
	return &c, stop, err
}

// Canceller is the canceller service command.
func Canceller(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, stop, err := parseCanceller(args, stdout, stderr)
	if stop || err != nil {
		return err
	}
	log := c.logger(stderr, "canceller")
	opts, err := c.kgoOpts()
	if err != nil {
		return err
	}
	k := c.Canceller
	// The delay topics too: failed closes are rescheduled through them.
	specs := TopicSpecs(TopicSet{Prefix: k.Prefix, Tiers: k.Tiers, Targets: k.Topics, Outcomes: k.Outcomes, DeadLetter: k.DeadLetter}, int32(c.Partitions), int16(c.Replication))
	if err := ensureTopics(ctx, opts, specs, c.CreateTopics, log); err != nil {
		return err
	}
	tel := telemetry.New()
	cn, err := canceller.New(k, canceller.Options{Kafka: append(opts, tel.Hook()), Logger: log, Closer: closers[c.Closer](log), Registerer: tel})
	if err != nil {
		return err
	}
	log.Info("canceller starting", "topics", k.Topics, "closer", c.Closer, "outcomes", k.Outcomes, "group", k.Group)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := cn.Run(gctx); err != nil {
			return fmt.Errorf("canceller: %w", err)
		}
		return nil
	})
	g.Go(func() error { return serveHTTP(gctx, c.HTTPAddr, cn.Ready, tel, c.Pprof, log) })
	g.Go(func() error { tel.WatchLag(gctx, cn.Client(), k.Group, c.LagInterval, log); return nil })
	err = g.Wait()
	log.Info("canceller stopped", "stats", fmt.Sprintf("%+v", cn.Stats()))
	return err
}
