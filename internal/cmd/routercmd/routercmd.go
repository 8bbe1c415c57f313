package routercmd

import (
	"context"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/router"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/internal/topics"
)

const routerUsage = `router moves Hourglass delay records to their target topic when they are due.

It consumes the delay topics <prefix>delay.<tier> as a consumer group, holds
each partition's head until it is due (pausing the partition), hops records
that still have a tier's wait ahead to a shorter tier, forwards due ones to
their hourglass-target (or --target; only topics of --allowed-targets), and
sends malformed, oversized or misdirected ones to the dead-letter topic with
the reason.

Usage: router [flags]
       router --version

` + cli.FlagsHeading + "\n"

// Config is the router service's configuration.
type Config struct {
	service.Common
	Router router.Config
	// OutcomesKeyFile holds the key that signs the outcome events of
	// cancelled deadlines (--outcomes-key-file); empty: unsigned.
	OutcomesKeyFile string
}

func parse(args []string, stdout, stderr io.Writer) (*Config, bool, error) {
	var c Config
	fs := cli.NewFlagSet("router", routerUsage)
	fs.SetOutput(stderr)
	c.Register(fs, "hourglass-router", "127.0.0.1:8080")
	var raw rawFlags
	register(fs, &c.Router, &raw)
	fs.StringVar(&c.OutcomesKeyFile, "outcomes-key-file", cli.Env("outcomes-key-file"), "",
		"`file` holding the key that signs the outcome events of cancelled deadlines (the canceller's); default: unsigned")
	sections(fs)
	stop, err := service.Parse(fs, args, stdout, &c.Common, func() error {
		flags.DefaultGroup(fs, &c.Router.Group, c.Router.Prefix, "router")
		return c.check(raw)
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
	c.LogDeprecated(log)
	opts, err := c.KgoOpts()
	if err != nil {
		return err
	}
	r := c.Router
	specs := c.Specs(topics.Set{Prefix: r.Prefix, Tiers: r.Tiers, Targets: []string{r.Target}, DeadLetter: r.DeadLetter,
		Outcomes: r.Outcomes, Cancellations: r.Cancellations})
	if err := service.EnsureTopics(ctx, opts, specs, c.CreateTopics, log); err != nil {
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
	g.Go(func() error { return rt.Run(gctx) })
	g.Go(func() error { return service.ServeHTTP(gctx, c.HTTPAddr, rt.NotReady, tel, c.Pprof, log) })
	g.Go(func() error { tel.WatchLag(gctx, rt.Client(), r.Group, c.LagInterval, log); return nil })
	err = g.Wait()
	log.Info("router stopped", "stats", fmt.Sprintf("%+v", rt.Stats()))
	return err
}
