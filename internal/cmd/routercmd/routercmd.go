package routercmd

import (
	"context"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/router"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

const routerUsage = `router moves Hourglass delay records to their target topic when they are due.

It consumes the delay topics <prefix>delay.<tier> as a consumer group, holds
each partition's head until it is due (pausing the partition), hops records
that still have a tier's wait ahead to a shorter tier, forwards due ones to
their hourglass-target (or --target; only topics of --allowed-targets), and
sends malformed, oversized or misdirected ones to the dead-letter topic with
the reason.

Usage: router [flags]

Flags (each has an environment variable; flags win):
`

// Config is the router service's configuration.
type Config struct {
	service.Common
	Router router.Config
	tiers  string
}

func parse(args []string, stdout, stderr io.Writer) (*Config, bool, error) {
	var c Config
	fs := cli.NewFlagSet("router", routerUsage)
	fs.SetOutput(stderr)
	c.Register(fs, "hourglass-router", "127.0.0.1:8080")
	r := &c.Router
	fs.StringVar(&c.tiers, "tiers", cli.Env("tiers"), tiers.DefaultTiers, "delay tiers: comma-separated `durations`, one delay topic each")
	fs.StringVar(&r.Prefix, "topic-prefix", cli.Env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name")
	fs.StringVar(&r.Target, "target", cli.Env("target"), "", "`topic` for due records without hourglass-target (default <prefix>cancel)")
	fs.StringVar(&r.DeadLetter, "dlq-topic", cli.Env("dlq-topic"), "", "dead-letter `topic` (default <prefix>dlq)")
	fs.StringVar(&r.Outcomes, "outcomes-topic", cli.Env("outcomes-topic"), "", "the canceller's outcome `topic`, never a target (default <prefix>outcomes)")
	fs.StringsVar(&r.AllowedTargets, "allowed-targets", cli.Env("allowed-targets"), nil,
		"topics a record may name in hourglass-target, comma-separated `patterns` (orders.*, *.cancel); others go to the dead-letter topic (default: --target only)")
	fs.StringVar(&r.Group, "group", cli.Env("group"), router.DefaultGroup, "consumer `group`")
	service.InstanceIDVar(fs, &r.InstanceID)
	fs.DurationVar(&r.MaxDelay, "max-delay", cli.Env("max-delay"), router.DefaultMaxDelay, "records due further ahead go to the dead-letter topic")
	fs.IntVar(&r.TimerCapacity, "timer-capacity", cli.Env("timer-capacity"), router.DefaultTimerCapacity,
		"records held in memory for delays shorter than the smallest tier; when full, partitions pause instead")
	fs.IntVar(&r.TimerBytes, "timer-bytes", cli.Env("timer-bytes"), router.DefaultTimerBytes, "`bytes` of records the in-memory timer holds at most")
	fs.IntVar(&r.MaxHeldPerPartition, "max-held-per-partition", cli.Env("max-held-per-partition"), router.DefaultMaxHeldPerPartition,
		"records a partition holds waiting out their tier before it is paused")
	fs.IntVar(&r.MaxHeldBytesPerPartition, "max-held-bytes-per-partition", cli.Env("max-held-bytes-per-partition"), router.DefaultMaxHeldBytesPerPartition,
		"`bytes` of records a partition holds (waiting, in the timer or being produced) before it is paused")
	fs.IntVar(&r.MaxInFlightPerTarget, "max-in-flight-per-target", cli.Env("max-in-flight-per-target"), router.DefaultMaxInFlightPerTarget,
		"produces in flight to one topic at most; more wait, so that a failing topic cannot hold up the others")
	fs.IntVar(&r.Limits.KeyBytes, "max-key-bytes", cli.Env("max-key-bytes"), tiers.DefaultMaxKeyBytes, "largest key (task id) in `bytes`; larger records go to the dead-letter topic")
	fs.IntVar(&r.Limits.HeaderBytes, "max-header-bytes", cli.Env("max-header-bytes"), tiers.DefaultMaxHeaderBytes, "largest sum of header names and values in `bytes`, besides the contract's headers")
	fs.IntVar(&r.Limits.Headers, "max-headers", cli.Env("max-headers"), tiers.DefaultMaxHeaders, "most headers on a record, besides the contract's")
	fs.IntVar(&r.Limits.ValueBytes, "max-value-bytes", cli.Env("max-value-bytes"), tiers.DefaultMaxValueBytes, "largest value (payload) in `bytes`")
	var fetchBytes int
	fs.IntVar(&fetchBytes, "fetch-partition-bytes", cli.Env("fetch-partition-bytes"), router.DefaultFetchPartitionBytes, "most `bytes` fetched per partition at once")
	fs.DurationVar(&r.CommitInterval, "commit-interval", cli.Env("commit-interval"), router.DefaultCommitInterval,
		"least time between two commits; offsets are committed as produces are acknowledged, so a crash repeats about this much")
	fs.DurationVar(&r.RevokeTimeout, "revoke-timeout", cli.Env("revoke-timeout"), router.DefaultRevokeTimeout, "how long a rebalance waits for produces in flight")
	fs.DurationVar(&r.ShutdownTimeout, "shutdown-timeout", cli.Env("shutdown-timeout"), router.DefaultShutdownTimeout, "bound on a graceful stop")
	stop, err := service.Parse(fs, args, stdout, &c.Common, func() service.Checks {
		var errs service.Checks
		r.Tiers = errs.Tiers(c.tiers)
		r.SessionTimeout = c.SessionTimeout
		errs.IntRange("fetch-partition-bytes", fetchBytes, 1<<10, 1<<30)
		r.FetchPartitionBytes = int32(fetchBytes)
		if r.Tiers.Len() > 0 {
			// Only the topic names derive from the prefix; every other
			// flag has its default already, so a zero is the user's and
			// is reported rather than replaced.
			if r.Target == "" {
				r.Target = tiers.CancelTopic(r.Prefix)
			}
			if r.DeadLetter == "" {
				r.DeadLetter = tiers.DeadLetterTopic(r.Prefix)
			}
			if r.Outcomes == "" {
				r.Outcomes = tiers.OutcomesTopic(r.Prefix)
			}
			if len(r.AllowedTargets) == 0 {
				r.AllowedTargets = []string{r.Target}
			}
			errs = append(errs, r.Validate()...)
		}
		return errs
	})
	return &c, stop, err
}

// Run is the router service command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, stop, err := parse(args, stdout, stderr)
	if stop || err != nil {
		return err
	}
	log := c.Logger(stderr, "router")
	opts, err := c.KgoOpts()
	if err != nil {
		return err
	}
	r := c.Router
	specs := topics.Specs(topics.Set{Prefix: r.Prefix, Tiers: r.Tiers, Targets: []string{r.Target}, DeadLetter: r.DeadLetter}, int32(c.Partitions), int16(c.Replication))
	if err := topics.EnsureLogged(ctx, opts, specs, c.CreateTopics, log); err != nil {
		return err
	}
	tel := telemetry.New()
	rt, err := router.New(r, router.Options{Kafka: opts, Hooks: []kgo.Hook{tel.Hook()}, Logger: log, Registerer: tel})
	if err != nil {
		return err
	}
	log.Info("router starting", "tiers", r.Tiers.String(), "topics", r.Tiers.Topics(r.Prefix), "target", r.Target,
		"allowed_targets", r.AllowedTargets, "group", r.Group, "instance_id", r.InstanceID, "session_timeout", r.SessionTimeout)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := rt.Run(gctx); err != nil {
			return fmt.Errorf("router: %w", err)
		}
		return nil
	})
	g.Go(func() error { return service.ServeHTTP(gctx, c.HTTPAddr, rt.Ready, tel, c.Pprof, log) })
	g.Go(func() error { tel.WatchLag(gctx, rt.Client(), r.Group, c.LagInterval, log); return nil })
	err = g.Wait()
	log.Info("router stopped", "stats", fmt.Sprintf("%+v", rt.Stats()))
	return err
}
