package democmd

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/router"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// pipeline is a router and a canceller running in this process.
type pipeline struct {
	Router    *router.Router
	Canceller *canceller.Canceller
	cancel    context.CancelFunc
	g         *errgroup.Group
}

func startPipeline(ctx context.Context, seed []kgo.Opt, table tiers.Table, c closer.Closer, log *slog.Logger) (*pipeline, error) {
	rt, err := router.New(router.Config{Tiers: table}, router.Options{Kafka: seed, Logger: log.With("service", "router")})
	if err != nil {
		return nil, err
	}
	cn, err := canceller.New(canceller.Config{}, canceller.Options{Kafka: seed, Closer: c, Logger: log.With("service", "canceller")})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return rt.Run(gctx) })
	g.Go(func() error { return cn.Run(gctx) })
	return &pipeline{Router: rt, Canceller: cn, cancel: cancel, g: g}, nil
}

func (p *pipeline) stop() error {
	p.cancel()
	return p.g.Wait()
}
