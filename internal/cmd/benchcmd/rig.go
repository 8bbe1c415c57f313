package benchcmd

import (
	"context"
	"io"
	"strconv"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// rig is what a bench drives: the embedded broker, the router and the
// canceller as child processes, the producer of the orders and, with a
// database --closer, the orders table.
type rig struct {
	c                         *benchConfig
	broker                    *kfake.Cluster
	seed                      []kgo.Opt
	routerArgs, cancellerArgs []string
	// rt and cn are the running router and canceller, replaced when a
	// --kill restarts one.
	rt, cn atomic.Pointer[child]
	prod   *kgo.Client
	s      *tiers.Scheduler
	orders *ordersTable // nil with the log closer
	// routerHTTP is the router's metrics address in the cancellations
	// memory mode; empty otherwise (no HTTP server).
	routerHTTP string
	bigBatches [][]byte // --big-batches, sent halfway through the scheduling
	stderr     io.Writer
	died       func(error) // ends the bench when a service exits on its own
}

// startRig starts the broker with the topics, the router and the canceller,
// waits for their groups to form, and makes the producer. On an error it
// stops what it started.
func startRig(ctx context.Context, c *benchConfig, died func(error), stderr io.Writer) (_ *rig, err error) {
	r := &rig{c: c, stderr: stderr, died: died}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	addr, err := r.startBroker(ctx)
	if err != nil {
		return nil, err
	}
	common := []string{"--brokers", addr, "--http-addr", "", "--log-level", "warn", "--create-topics=false"}
	r.routerArgs = append(append([]string{"router", "--tiers", c.tiers.String()}, common...), c.routerArgs...)
	r.cancellerArgs = append(append([]string{"canceller", "--tiers", c.tiers.String()}, common...), c.cancellerArgs...)
	if c.closer != closerLog {
		rows := c.orders
		if c.burst > 0 {
			rows = c.burst
		}
		if r.orders, err = createOrders(ctx, c, rows, stderr); err != nil {
			return nil, err
		}
		r.cancellerArgs = append(r.cancellerArgs, "--closers", r.orders.closersFile())
	}
	if len(c.cancelSteps) > 0 {
		if r.routerHTTP, err = freeAddr(); err != nil {
			return nil, err
		}
		r.routerArgs = append(r.routerArgs, "--http-addr", r.routerHTTP)
	}
	if c.instanceIDs {
		r.routerArgs = append(r.routerArgs, "--instance-id", "bench-router-0")
		r.cancellerArgs = append(r.cancellerArgs, "--instance-id", "bench-canceller-0")
	}
	for _, s := range []struct {
		p    *atomic.Pointer[child]
		args []string
	}{{&r.rt, r.routerArgs}, {&r.cn, r.cancellerArgs}} {
		ch, err := spawn(ctx, stderr, r.died, s.args...)
		if err != nil {
			return nil, err
		}
		s.p.Store(ch)
	}
	if err := waitGroups(ctx, r.broker); err != nil {
		return nil, err
	}
	if r.prod, err = kgo.NewClient(append(r.seed, kgo.MaxBufferedRecords(100_000))...); err != nil {
		return nil, err
	}
	if r.s, err = tiers.NewScheduler(r.prod, c.tiers); err != nil {
		return nil, err
	}
	return r, nil
}

// startBroker starts the embedded broker, with --broker-latency, and
// creates the topics; it returns the broker's address.
func (r *rig) startBroker(ctx context.Context) (string, error) {
	var opts []kfake.Opt
	if r.c.latency > 0 {
		opts = append(opts, embedded.Latency(r.c.latency))
	}
	broker, addr, err := embedded.StartBroker(0, opts...)
	if err != nil {
		return "", err
	}
	r.broker, r.seed = broker, []kgo.Opt{kgo.SeedBrokers(addr)}
	specs := topics.Specs(topics.Default(tiers.DefaultPrefix, r.c.tiers), int32(r.c.partitions), -1)
	if _, err := topics.Provision(ctx, r.seed, specs, true); err != nil {
		return "", err
	}
	return addr, nil
}

// close stops what startRig started, in reverse: the producer, the
// canceller, the router, the broker, the orders table.
func (r *rig) close() {
	if r.prod != nil {
		r.prod.Close()
	}
	for _, p := range []*atomic.Pointer[child]{&r.cn, &r.rt} {
		if ch := p.Load(); ch != nil {
			ch.stop()
		}
	}
	if r.broker != nil {
		r.broker.Close()
	}
	if r.orders != nil {
		r.orders.drop(r.c.keepTable, r.stderr)
	}
}

// taskID is the id of the i-th order: its row's id with a database closer.
func (r *rig) taskID(i int) string {
	if r.orders != nil {
		return strconv.Itoa(i)
	}
	return "bench-" + strconv.Itoa(i)
}
