package cancellercmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/closer/closerfile"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/internal/topics"
)

const cancellerUsage = `canceller closes due Hourglass tasks.

It consumes the cancel topic as a consumer group and closes each task through
the closer of its kind, from the --closers file (sql, http, kafka or log; see
the README). Up to --max-in-flight closes run at once, never two of the same
task id, within --rate-limit. A failed close is rescheduled through the delay
tiers with backoff; after --max-attempts, or on a permanent error, the task
goes to the dead-letter topic. Every attempt produces an outcome event, and a
record is committed only when its close and its events are durable.

Usage: canceller [flags]
       canceller --version

` + cli.FlagsHeading + "\n"

// Config is the canceller service's configuration.
type Config struct {
	service.Common
	Canceller canceller.Config
	// ClosersFile is the closers file (--closers); empty logs every task
	// instead of closing it.
	ClosersFile string
	// Closers is the loaded ClosersFile.
	Closers closerfile.File
	// OutcomesKeyFile holds the key that signs outcome events
	// (--outcomes-key-file); empty: unsigned.
	OutcomesKeyFile string
}

func parse(args []string, stdout, stderr io.Writer) (*Config, bool, error) {
	var c Config
	fs := cli.NewFlagSet("canceller", cancellerUsage)
	fs.SetOutput(stderr)
	c.Register(fs, "hourglass-canceller", "127.0.0.1:8081")
	var rawTiers string
	register(fs, &c.Canceller, &rawTiers)
	fs.StringVar(&c.OutcomesKeyFile, "outcomes-key-file", cli.Env("outcomes-key-file"), "",
		"`file` holding the key that signs outcome events (at least 16 bytes; give the recorder the same); default: unsigned")
	fs.StringVar(&c.ClosersFile, "closers", cli.Env("closers"), "", "closers `file` (YAML): the closer of each task kind; without it tasks are only logged")
	sections(fs)
	stop, err := service.Parse(fs, args, stdout, &c.Common, func() error {
		var errs cli.Problems
		if c.ClosersFile != "" {
			f, err := closerfile.Load(c.ClosersFile)
			if err != nil {
				errs.Add("closers", "%v", err)
			}
			c.Closers = f
		}
		flags.DefaultGroup(fs, &c.Canceller.Group, c.Canceller.Prefix, "canceller")
		errs.Join(c.check(rawTiers))
		return errs.Err()
	})
	return &c, stop, err
}

// Run is the canceller service command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, stop, err := parse(args, stdout, stderr)
	if stop || err != nil {
		return err
	}
	log := c.Logger(stderr, "canceller")
	c.LogDeprecated(log)
	opts, err := c.KgoOpts()
	if err != nil {
		return err
	}
	k := c.Canceller
	if err := provision(ctx, c, opts, log); err != nil {
		return err
	}
	co := canceller.Options{Logger: log}
	if c.ClosersFile == "" {
		log.Warn("no --closers file: every task is logged, not closed")
	} else {
		cs, err := c.Closers.Open(ctx, opts, log)
		if err != nil {
			return fmt.Errorf("--closers %s: %w", c.ClosersFile, err)
		}
		// After the canceller's last close (Run has returned).
		defer func() {
			if err := cs.Stop(); err != nil {
				log.Warn("stopping closers", "err", err)
			}
		}()
		co.Routes = routes(cs)
	}
	tel := telemetry.New()
	co.Kafka, co.Hooks, co.Registerer = opts, []kgo.Hook{tel.Hook()}, tel
	cn, err := canceller.New(k, co)
	if err != nil {
		return err
	}
	kinds := make([]string, 0, len(c.Closers.Closers))
	for _, kind := range c.Closers.Kinds() {
		kinds = append(kinds, kind+"="+c.Closers.Closers[kind].Type())
	}
	log.Info("canceller starting", "topics", k.Topics, "closers", kinds, "outcomes", k.Outcomes, "signed", len(k.OutcomesKey) > 0, "group", k.Group,
		"instance_id", k.InstanceID, "session_timeout", k.SessionTimeout, "max_in_flight", cn.MaxInFlight(), "rate_limit", k.RateLimit)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return cn.Run(gctx) })
	g.Go(func() error { return service.ServeHTTP(gctx, c.HTTPAddr, cn.NotReady, tel, c.Pprof, log) })
	g.Go(func() error { tel.WatchLag(gctx, cn.Client(), k.Group, c.LagInterval, log); return nil })
	err = g.Wait()
	log.Info("canceller stopped", "stats", fmt.Sprintf("%+v", cn.Stats()))
	return err
}

// provision creates (with --create-topics) or checks the target, outcomes
// and dead-letter topics, and waits for the delay topics of --tiers.
func provision(ctx context.Context, c *Config, opts []kgo.Opt, log *slog.Logger) error {
	k := c.Canceller
	specs := c.Specs(topics.Set{Targets: k.Topics, Outcomes: k.Outcomes, DeadLetter: k.DeadLetter})
	if err := service.EnsureTopics(ctx, opts, specs, c.CreateTopics, log); err != nil {
		return err
	}
	// Failed closes are rescheduled through the delay topics of --tiers.
	// The router creates the delay topics of its own --tiers; the
	// canceller creates none, and waits for those of its tiers, so that
	// tiers differing from the router's fail here instead of sending
	// retries to a topic no router reads.
	return service.CheckDelayTopics(ctx, opts, k.Prefix, k.Tiers, log)
}
