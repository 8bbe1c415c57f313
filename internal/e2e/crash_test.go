package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// churnOrders returns n orders for the crash and rebalance tests: past due,
// shorter than the smallest tier, between tiers, and a fifth longer than the
// largest tier, so that some are held in a router's memory, some are in
// flight between tiers and some wait at a partition head when it goes.
func churnOrders(name string, table tiers.Table, n int) []*order {
	large := table.Largest()
	orders := make([]*order, n)
	for i := range orders {
		k := time.Duration(i/5) * 7 % 1000 // walks 0..999 (ms) through each case
		o := &order{id: fmt.Sprintf("%s-%d", name, i)}
		switch i % 5 {
		case 0:
			o.class, o.delay = "past", -k*time.Millisecond
		case 1:
			o.class, o.delay = "below-smallest", k*table.Smallest()/1000
		case 2:
			o.class, o.delay = "up-to-largest", k*large/1000
		case 3:
			o.class, o.delay = "up-to-twice-largest", large+k*large/1000
		default:
			o.class, o.delay = "beyond-twice-largest", 2*large+k*large/1000
		}
		orders[i] = o
	}
	return orders
}

// TestRouterCrash kills the router process with SIGKILL while it holds
// records, forwards and commits, starts another router process, and checks
// that nothing is lost and nothing is early. Duplicates are allowed (the
// killed router forwarded records it had not committed yet); they are
// counted, must be fewer than the orders, and never close an order twice.
func TestRouterCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and waits out a session timeout")
	}
	const (
		n          = 1500
		partitions = 4
	)
	p := newPipe(t, "crash", "200ms,500ms,1s,2s", partitions)
	store := newStore()
	cn := p.newCanceller(store)
	stopCanceller := start(t, "canceller", cn.Run)
	col := p.collectOutcomes()

	args := []string{
		"router",
		"--brokers", cluster.ListenAddrs()[0],
		"--tiers", p.table.String(),
		"--topic-prefix", p.prefix,
		"--group", p.routerGroup(),
		"--partitions", fmt.Sprint(partitions),
		"--http-addr", "127.0.0.1:0",
		"--session-timeout", "2s",
		"--shutdown-timeout", "10s",
		"--log-level", "warn",
	}
	first := startProc(t, "router-1", args...)

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	orders := churnOrders("crash", p.table, n)
	scheduled := make(chan error, 1)
	go func() { scheduled <- p.schedule(ctx, store, orders, 30, 100*time.Millisecond) }()

	// Kill the router once it is well at work: outcomes are arriving, it
	// has committed offsets, and it holds records for later and has
	// produces in flight.
	const killAfter = 300
	committed := func() bool {
		g := cluster.GroupInfo(p.routerGroup())
		return g != nil && len(g.Commits) > 0
	}
	if err := waitFor(ctx, t, func() bool { return col.seen() >= killAfter && committed() }); err != nil {
		t.Fatalf("waiting for %d outcomes and a commit before the crash (have %d, committed %v): %v", killAfter, col.seen(), committed(), err)
	}
	var exit *exec.ExitError
	if err := first.signal(syscall.SIGKILL); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("router-1 did not die of SIGKILL: %v", err)
	}
	atKill, killed := col.seen(), time.Now()
	second := startProc(t, "router-2", args...)

	if err := <-scheduled; err != nil {
		t.Fatalf("schedule: %v", err)
	}
	wctx, wcancel := allDue(ctx, orders, 15*time.Second)
	defer wcancel()
	if err := waitFor(wctx, t, func() bool { return col.seen() >= n }); err != nil {
		t.Fatalf("waiting for every order's outcome: %v; %s; canceller %+v", err, missing(orders, col), cn.Stats())
	}
	recovered := time.Since(killed)
	p.settle(ctx, col, func() error {
		// A graceful stop of the second router commits and exits 0; a race
		// report in the child would exit 66.
		return second.signal(syscall.SIGTERM)
	}, stopCanceller)
	v := p.checkOrders(orders, col, store)

	t.Logf("router-1 killed after %d of %d orders had an outcome; all had one %v later; %d duplicate outcomes (already_closed) after the restart %v; canceller %+v",
		atKill, n, recovered.Round(time.Millisecond), v.dups, v.dupsBy, cn.Stats())
	if v.dups >= n {
		t.Errorf("%d duplicates for %d orders: a restart must replay only what was not committed", v.dups, n)
	}
}
