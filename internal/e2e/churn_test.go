package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestRouterChurn runs three router processes in one group, each with an
// instance id and otherwise the default flags, while orders of every kind
// of delay are scheduled continuously for about 30 s. Every few seconds one
// router goes and a replacement with its instance id starts at once,
// alternately killed (SIGKILL: the replacement takes the partitions back as
// the same static member) and stopped (SIGTERM: the router leaves the group,
// the other two take its partitions, and the replacement joins). Nothing may
// be lost or early, the processes that are not stopped must keep running,
// duplicates come only from the kills and are bounded by what the routers
// produced onward in the commit window before each, and lateness stays
// bounded.
func TestRouterChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs router processes for about 40 s")
	}
	const (
		routers    = 3
		partitions = 4
		batches    = 300 // one every 100ms: 30s of scheduling
		n          = 20 * batches
		every      = 3 * time.Second // one router goes every this often
	)
	p := newPipe(t, "churn", "200ms,500ms,1s,2s", partitions)
	store := newStore()
	cn := p.newCanceller(store)
	stopCanceller := start(t, "canceller", cn.Run)
	col := p.collectOutcomes()

	procs := make([]*proc, routers)
	ids := make([]string, routers)
	for i := range procs {
		ids[i] = fmt.Sprintf("router-%d", i)
		procs[i] = startProc(t, ids[i]+"#1", p.routerArgs("--instance-id", ids[i])...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// memberOf returns the member id of instance id, "" if none.
	memberOf := func(id string) string {
		if g := cluster.GroupInfo(p.routerGroup()); g != nil {
			for _, m := range g.Members {
				if m.InstanceID != nil && *m.InstanceID == id {
					return m.MemberID
				}
			}
		}
		return ""
	}
	// waitAll waits until the group is stable with every router owning
	// partitions and, if id is set, its member replaced (not the old one
	// that a SIGKILL left behind).
	waitAll := func(id, old string) error {
		_, err := cluster.WaitGroupInfo(ctx, p.routerGroup(), func(g *kfake.GroupInfo) bool {
			if g == nil || g.State != "Stable" || len(g.Members) != routers {
				return false
			}
			for i := range g.Members {
				m := &g.Members[i]
				if m.NumAssigned() == 0 || m.InstanceID != nil && *m.InstanceID == id && m.MemberID == old {
					return false
				}
			}
			return true
		})
		return err
	}
	if err := waitAll("", ""); err != nil {
		t.Fatalf("waiting for %d routers to own partitions: %v", routers, err)
	}
	if err := p.waitRunning(ctx, routers); err != nil {
		t.Fatal(err)
	}

	orders := churnOrders("churn", p.table, n)
	scheduled := make(chan error, 1)
	go func() { scheduled <- p.schedule(ctx, store, orders, batches, 100*time.Millisecond) }()

	// Churn until the scheduling is done: one router at a time, the one
	// that has run longest.
	var (
		kills   []time.Time
		cycles  []string
		started = []int{1, 1, 1}
		tick    = time.NewTicker(every)
		done    error
		cycle   int
	)
	defer tick.Stop()
churn:
	for {
		select {
		case done = <-scheduled:
			break churn
		case <-ctx.Done():
			t.Fatalf("churn: %v", ctx.Err())
		case <-tick.C:
		}
		i := cycle % routers
		sig := syscall.SIGKILL
		if cycle%2 == 1 {
			sig = syscall.SIGTERM
		}
		cycle++
		old := memberOf(ids[i])
		at := time.Now()
		if sig == syscall.SIGKILL {
			kill(t, procs[i])
			kills = append(kills, at)
		} else if err := procs[i].signal(syscall.SIGTERM); err != nil {
			t.Fatalf("%s: a graceful stop must exit 0: %v", procs[i].name, err)
		}
		gone := time.Since(at)
		started[i]++
		procs[i] = startProc(t, fmt.Sprintf("%s#%d", ids[i], started[i]), p.routerArgs("--instance-id", ids[i])...)
		if err := waitAll(ids[i], old); err != nil {
			t.Fatalf("waiting for the group to be whole again after %v of %s: %v (group %+v)", sig, ids[i], err, cluster.GroupInfo(p.routerGroup()))
		}
		cycles = append(cycles, fmt.Sprintf("%v %s: exited in %v, group whole %v later", sig, ids[i], gone.Round(time.Millisecond), time.Since(at).Round(time.Millisecond)))
	}
	if done != nil {
		t.Fatalf("schedule: %v", done)
	}
	if len(kills) < 3 || cycle < 6 {
		t.Fatalf("only %d routers replaced (%d killed) while scheduling: want at least 6, 3 of them killed", cycle, len(kills))
	}

	wctx, wcancel := allDue(ctx, orders, 20*time.Second)
	defer wcancel()
	if err := waitFor(wctx, t, func() bool { return col.seen() >= n }); err != nil {
		t.Fatalf("waiting for every order's outcome: %v; %s; canceller %+v", err, missing(orders, col), cn.Stats())
	}
	p.settle(ctx, col, func() error {
		var errs []string
		for _, pr := range procs {
			if err := pr.signal(syscall.SIGTERM); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", pr.name, err))
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("graceful stops: %s", strings.Join(errs, "; "))
		}
		return nil
	}, stopCanceller)
	v := p.checkOrders(orders, col, store)

	// Each duplicate is a record a killed router produced onward without
	// committing it (see commitWindow); a graceful stop hands off what it
	// holds and commits what it produced.
	w := commitWindow(p.table)
	bound := 0
	for _, at := range kills {
		bound += p.movedBefore(ctx, at, w)[w]
	}
	if v.dups > bound {
		t.Errorf("%d duplicate outcomes after %d kills, more than the %d records the routers produced onward in the %v before each kill", v.dups, len(kills), bound, w)
	}
	// Measured on two cores under -race: p99 1.2 to 1.4 s, max 1.4 to
	// 1.6 s. A killed router's replacement rejoins as the same static
	// member, but the group is whole again only about 1.5 s later; a
	// stopped router leaves, its partitions go to the others at their next
	// heartbeat (every 2 s by default) and move again when the replacement
	// joins, about 2 s in all. The bound leaves room for a loaded machine.
	late := checkLateness(t, "churn", v.late, 3*time.Second, 5*time.Second)
	t.Logf("%d orders; %d routers replaced:\n  %s\nclose lateness %s; %d duplicate outcomes %v (bound %d); canceller %+v",
		n, cycle, strings.Join(cycles, "\n  "), late, v.dups, v.dupsBy, bound, cn.Stats())
}
