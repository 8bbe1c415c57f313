package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

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

// routerArgs returns the command line of a router process of p: the
// broker, the pipe's tiers, topics and group, a free HTTP port and warnings
// only in the log, then extra. Every other setting is the service's default.
func (p *pipe) routerArgs(extra ...string) []string {
	return append([]string{
		"router",
		"--brokers", cluster.ListenAddrs()[0],
		"--tiers", p.table.String(),
		"--topic-prefix", p.prefix,
		"--group", p.routerGroup(),
		"--http-addr", "127.0.0.1:0",
		"--log-level", "warn",
	}, extra...)
}

// kill sends SIGKILL to pr and fails the test unless it died of it.
func kill(t *testing.T, pr *proc) {
	t.Helper()
	var exit *exec.ExitError
	if err := pr.signal(syscall.SIGKILL); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("%s did not die of SIGKILL: %v", pr.name, err)
	}
}

// routerCrash is one way of crashing the router: its flags, and how long
// the second router starts after the first was killed.
type routerCrash struct {
	// args are the flags beyond routerArgs' (none: the defaults).
	args []string
	// downtime is the time from the SIGKILL to the start of router-2.
	downtime time.Duration
}

// crashRun is what runRouterCrash saw.
type crashRun struct {
	orders []*order
	v      verdict
	killed time.Time
	// atKill is how many orders had an outcome at the kill.
	atKill int
	// tookOver is the time from the kill until router-2 was the group's
	// only member and owned every partition.
	tookOver time.Duration
	// allDone is the time from the kill until every order had an outcome.
	allDone time.Duration
	// moved counts, by how long before the kill, the records the routers
	// produced onward (hops and forwards) in that time; see movedBefore.
	moved map[time.Duration]int
}

// lateAfterKill returns the lateness of the orders due after the kill.
func (r crashRun) lateAfterKill() []int64 {
	var late []int64
	for _, o := range r.orders {
		if l, ok := r.v.lateOf[o.id]; ok && !o.due.Before(r.killed) {
			late = append(late, l)
		}
	}
	return late
}

// runRouterCrash runs the pipeline with the router as a process (flags
// c.args), kills it with SIGKILL while it holds records, forwards and
// commits, starts router-2 with the same flags c.downtime later, and checks
// the invariants on every order: none lost, none early, each closed once in
// the store. Duplicates are allowed (router-1 produced onward records it had
// not committed); checkCrashDuplicates bounds them.
func runRouterCrash(t *testing.T, name string, c routerCrash) crashRun {
	const (
		n          = 1500
		partitions = 4
	)
	p := newPipe(t, name, "200ms,500ms,1s,2s", partitions)
	store := newStore()
	cn := p.newCanceller(store)
	stopCanceller := start(t, "canceller", cn.Run)
	col := p.collectOutcomes()
	args := p.routerArgs(c.args...)
	first := startProc(t, "router-1", args...)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.waitRunning(ctx, 1); err != nil {
		t.Fatal(err)
	}
	orders := churnOrders(name, p.table, n)
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
	before := cluster.GroupInfo(p.routerGroup())
	kill(t, first)
	r := crashRun{orders: orders, killed: time.Now(), atKill: col.seen()}
	if c.downtime > 0 {
		// The time the router is down: a scenario parameter, not a wait
		// for something to happen.
		select {
		case <-time.After(c.downtime):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	second := startProc(t, "router-2", args...)
	all := p.table.Len() * partitions
	if _, err := cluster.WaitGroupInfo(ctx, p.routerGroup(), func(g *kfake.GroupInfo) bool {
		return g != nil && g.State == "Stable" && len(g.Members) == 1 && g.Members[0].MemberID != before.Members[0].MemberID && g.Members[0].NumAssigned() == all
	}); err != nil {
		t.Fatalf("waiting for router-2 to own all %d partitions: %v (group %+v)", all, err, cluster.GroupInfo(p.routerGroup()))
	}
	r.tookOver = time.Since(r.killed)

	if err := <-scheduled; err != nil {
		t.Fatalf("schedule: %v", err)
	}
	wctx, wcancel := allDue(ctx, orders, 20*time.Second)
	defer wcancel()
	if err := waitFor(wctx, t, func() bool { return col.seen() >= n }); err != nil {
		t.Fatalf("waiting for every order's outcome: %v; %s; canceller %+v", err, missing(orders, col), cn.Stats())
	}
	r.allDone = time.Since(r.killed)
	p.settle(ctx, col, func() error {
		// A graceful stop of the second router commits and exits 0; a race
		// report in the child would exit 66.
		return second.signal(syscall.SIGTERM)
	}, stopCanceller)
	r.v = p.checkOrders(orders, col, store)
	r.moved = p.movedBefore(ctx, r.killed, 100*time.Millisecond, 200*time.Millisecond, commitWindow(p.table))
	return r
}

// Defaults of the router process that the crash tests bound lateness and
// duplicates by. They are written out, not read from the code: a test that
// took its bound from the default it should pin would follow a change of
// the default instead of failing.
const (
	// defaultSession is --session-timeout's default: how long a dead
	// dynamic router holds its partitions.
	defaultSession = 6 * time.Second
	// defaultCommitInterval is --commit-interval's default.
	defaultCommitInterval = 50 * time.Millisecond
)

// commitWindow is how long before a kill a record a router produced onward
// may still be uncommitted, so that the next owner produces it again. The
// router commits each partition up to its first record not yet produced
// onward, as soon as produces are acknowledged and at most every
// defaultCommitInterval. A record held in the in-memory timer holds
// back the commit of the records after it on its partition for at most the
// smallest tier (a longer wait hops instead), and records in a tier topic
// become ready in offset order otherwise. Add two commit intervals for the
// acknowledgement and the commit's round trip under -race: what a router
// produced onward earlier than this before it died was committed.
func commitWindow(table tiers.Table) time.Duration {
	return table.Smallest() + 4*defaultCommitInterval
}

// movedBefore counts the records the routers produced onward (hops into the
// delay topics, forwards into the cancel topic) with a timestamp in the
// windows before at: a router stamps what it produces with its clock.
func (p *pipe) movedBefore(ctx context.Context, at time.Time, windows ...time.Duration) map[time.Duration]int {
	p.t.Helper()
	out := make(map[time.Duration]int, len(windows))
	topics := append(p.table.Topics(p.prefix), p.cancelTopic())
	for _, topic := range topics {
		for _, r := range readAll(p.t.(*testing.T), p, topic) {
			// Records the scheduler produced have no path yet.
			if _, moved := tiers.Header(r.Headers, tiers.HeaderPath); !moved {
				continue
			}
			for _, w := range windows {
				if !r.Timestamp.Before(at.Add(-w)) && !r.Timestamp.After(at) {
					out[w]++
				}
			}
		}
	}
	return out
}

// movedBetween counts the records the routers produced onward with a
// timestamp in [from, to].
func (p *pipe) movedBetween(ctx context.Context, from, to time.Time) int {
	return p.movedBefore(ctx, to, to.Sub(from))[to.Sub(from)]
}

// checkCrashDuplicates bounds the duplicates of a crash: each is a record
// router-1 produced onward without committing it, which router-2 produced
// again, so there are at most as many as router-1 produced onward within
// commitWindow before it died.
func checkCrashDuplicates(t *testing.T, r crashRun, table tiers.Table) {
	t.Helper()
	w := commitWindow(table)
	if r.v.dups > r.moved[w] {
		t.Errorf("%d duplicate outcomes, more than the %d records the routers produced onward in the %v before the kill", r.v.dups, r.moved[w], w)
	}
}

// logCrash logs what a crash cost.
func logCrash(t *testing.T, r crashRun, table tiers.Table, lateAfter string) {
	t.Helper()
	var windows []string
	for _, w := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, commitWindow(table)} {
		windows = append(windows, fmt.Sprintf("%d in %v", r.moved[w], w))
	}
	t.Logf("router-1 killed after %d of %d orders had an outcome; router-2 owned every partition %v after the kill, every order had an outcome %v after it; "+
		"lateness of the orders due after the kill: %s, of all: p50 %d ms, p99 %d ms, max %d ms; "+
		"%d duplicate outcomes %v (records produced onward before the kill: %s)",
		r.atKill, len(r.orders), r.tookOver.Round(time.Millisecond), r.allDone.Round(time.Millisecond), lateAfter,
		percentile(r.v.late, 0.5), percentile(r.v.late, 0.99), percentile(r.v.late, 1),
		r.v.dups, r.v.dupsBy, strings.Join(windows, ", "))
}

// checkDynamicCrash checks the lateness of a crash of a dynamic member
// (no instance id): router-1's partitions wait out its session timeout, then
// router-2 forwards what fell due meanwhile and the canceller closes it. So
// the deadlines due after the kill are late by the session timeout plus
// that backlog's drain: p99 within 2 s more, none 3 s more.
func checkDynamicCrash(t *testing.T, r crashRun, session time.Duration) string {
	t.Helper()
	return checkLateness(t, "due after the kill", r.lateAfterKill(), session+2*time.Second, session+3*time.Second)
}

// TestRouterCrash kills a dynamic router process (no instance id) with a
// short session timeout (--session-timeout 2s) and starts another at once:
// router-1's partitions wait out its session, then go to router-2. Nothing
// is lost or early, a deadline waits at most about the session timeout, and
// duplicates stay within what router-1 had not committed.
func TestRouterCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and waits out a session timeout")
	}
	const session = 2 * time.Second
	r := runRouterCrash(t, "crash", routerCrash{args: []string{"--session-timeout", session.String()}})
	late := checkDynamicCrash(t, r, session)
	logCrash(t, r, tableOf(t, "200ms,500ms,1s,2s"), late)
	checkCrashDuplicates(t, r, tableOf(t, "200ms,500ms,1s,2s"))
}

// TestRouterCrashStatic kills a router process that has an instance id and
// otherwise the default flags, and starts it again with the same id 300 ms
// later: a static member takes its partitions back at once, without waiting
// for the (default, 6 s) session timeout. The deadlines due after the kill
// are late by p99 < 1 s and at most 2 s.
func TestRouterCrashStatic(t *testing.T) {
	r := runRouterCrash(t, "crash-static", routerCrash{args: []string{"--instance-id", "router-0"}, downtime: 300 * time.Millisecond})
	late := checkLateness(t, "due after the kill", r.lateAfterKill(), time.Second, 2*time.Second)
	logCrash(t, r, tableOf(t, "200ms,500ms,1s,2s"), late)
	checkCrashDuplicates(t, r, tableOf(t, "200ms,500ms,1s,2s"))
}

// TestRouterCrashDefault kills a router process started with the default
// flags (a dynamic member, the default 6 s session timeout) and starts
// another at once: router-1's partitions wait out its session timeout, no
// longer. Nothing is lost or early.
func TestRouterCrashDefault(t *testing.T) {
	r := runRouterCrash(t, "crash-default", routerCrash{})
	late := checkDynamicCrash(t, r, defaultSession)
	logCrash(t, r, tableOf(t, "200ms,500ms,1s,2s"), late)
	checkCrashDuplicates(t, r, tableOf(t, "200ms,500ms,1s,2s"))
}

func tableOf(t *testing.T, list string) tiers.Table {
	t.Helper()
	table, err := tiers.Parse(list)
	if err != nil {
		t.Fatal(err)
	}
	return table
}
