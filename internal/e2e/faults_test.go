package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/router"
)

// seedEnv sets the seed of the randomized tests (broker faults, hostile
// records) to repeat a run; by default each run draws its own and logs it.
const seedEnv = "HOURGLASS_E2E_SEED"

// testSeed returns the seed of a randomized test and logs how to repeat it.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", seedEnv, s)
		}
		seed = v
	}
	t.Logf("seed %d: repeat with %s=%d go test -run '^%s$' ./internal/e2e", seed, seedEnv, seed, t.Name())
	return seed
}

// faultKind is a request the broker can fail and the errors a real broker
// answers it with when a leader moves, a coordinator moves or fails over, a
// request times out or a group rebalances.
type faultKind struct {
	key   kmsg.Key
	group bool // selected by consumer group, else by topic
	errs  []*kerr.Error
}

var faultKinds = []faultKind{
	{kmsg.Produce, false, []*kerr.Error{kerr.NotLeaderForPartition, kerr.RequestTimedOut}},
	{kmsg.Fetch, false, []*kerr.Error{kerr.NotLeaderForPartition}},
	{kmsg.OffsetCommit, true, []*kerr.Error{kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.RebalanceInProgress, kerr.RequestTimedOut}},
	{kmsg.OffsetFetch, true, []*kerr.Error{kerr.CoordinatorNotAvailable, kerr.NotCoordinator}},
	{kmsg.Heartbeat, true, []*kerr.Error{kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.RebalanceInProgress}},
	{kmsg.JoinGroup, true, []*kerr.Error{kerr.CoordinatorNotAvailable, kerr.NotCoordinator}},
	{kmsg.SyncGroup, true, []*kerr.Error{kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.RebalanceInProgress}},
	{kmsg.FindCoordinator, true, []*kerr.Error{kerr.CoordinatorNotAvailable}},
}

// faultInjector installs faults on the test's topics and groups at random
// moments, from a seeded source.
type faultInjector struct {
	rng     *rand.Rand
	topics  []string
	groups  []string
	mu      sync.Mutex
	handles []*kfake.FaultHandle
	log     []string
	byKind  map[string]int
}

// schedulerTimeout is the produce request timeout of the test's scheduler:
// faults leave its produces alone (see run), so that lateness measures the
// pipeline, not a scheduler that produced late.
const schedulerTimeout = 17 * time.Second

// run installs n faults, one every 10 to 100 ms, until ctx ends: a random
// request kind, error, topic or group, for 1 to 3 requests. Halfway, the
// session of one member of each group expires: its next heartbeat is
// answered UNKNOWN_MEMBER_ID, as after a pause longer than the session
// timeout, and it loses its partitions.
func (f *faultInjector) run(ctx context.Context, n int) {
	for i := range n {
		if i == n/2 {
			for _, g := range f.groups {
				f.add(kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: g, Err: kerr.UnknownMemberID}, g)
			}
		}
		wait := time.Duration(10+f.rng.IntN(90)) * time.Millisecond
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		k := faultKinds[f.rng.IntN(len(faultKinds))]
		fault := kfake.Fault{Keys: []kmsg.Key{k.key}, Err: k.errs[f.rng.IntN(len(k.errs))], Count: 1 + f.rng.IntN(3)}
		on := ""
		if k.group {
			fault.Group = f.groups[f.rng.IntN(len(f.groups))]
			on = fault.Group
		} else {
			fault.Topic = f.topics[f.rng.IntN(len(f.topics))]
			on = fault.Topic
		}
		if k.key == kmsg.Produce {
			fault.When = func(r kmsg.Request) bool {
				pr, ok := r.(*kmsg.ProduceRequest)
				return !ok || int64(pr.TimeoutMillis) != schedulerTimeout.Milliseconds()
			}
		}
		f.add(fault, on)
	}
}

// add installs fault, on a topic or group named on.
func (f *faultInjector) add(fault kfake.Fault, on string) {
	h := cluster.Fault(fault)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handles = append(f.handles, h)
	name := fault.Keys[0].Name() + " " + fault.Err.Message
	f.byKind[name]++
	f.log = append(f.log, fmt.Sprintf("%s %s on %s x%d", time.Now().Format("15:04:05.000"), name, on, max(1, fault.Count)))
}

// stop removes the faults not used up, and returns how many requests they
// failed and a summary by kind.
func (f *faultInjector) stop() (hits int, summary string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.handles {
		hits += h.Hits()
		h.Remove()
	}
	var kinds []string
	for k, n := range f.byKind {
		kinds = append(kinds, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(kinds)
	return hits, strings.Join(kinds, ", ")
}

// commitWatch samples when a group's commits land (kfake's GroupInfo), so
// that a test can tell the periods in which a group could not commit.
type commitWatch struct {
	mu    sync.Mutex
	times []time.Time // when the group's latest commit changed, in order
}

// watchCommits samples group's commits every 10 ms until ctx ends.
func watchCommits(ctx context.Context, group string) *commitWatch {
	w := &commitWatch{}
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var last time.Time
		for {
			if g := cluster.GroupInfo(group); g != nil {
				var at time.Time
				for _, ps := range g.Commits {
					for _, c := range ps {
						at = maxTime(at, c.At)
					}
				}
				if !at.Equal(last) {
					last = at
					w.mu.Lock()
					w.times = append(w.times, at)
					w.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// gaps returns the periods longer than least between two commits, each
// widened by slack before it: what was handed on in them may not have been
// committed when the group lost its partitions.
func (w *commitWatch) gaps(least, slack time.Duration, until time.Time) [][2]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out [][2]time.Time
	times := append(slices.Clone(w.times), until)
	for i := 1; i < len(times); i++ {
		if times[i].Sub(times[i-1]) > least {
			out = append(out, [2]time.Time{times[i-1].Add(-slack), times[i]})
		}
	}
	return out
}

// TestBrokerFaults runs the pipeline, router and canceller with their
// default settings, while the broker fails requests at random (a seeded
// schedule, logged): produces and fetches of every topic of the pipeline
// answered NOT_LEADER_OR_FOLLOWER or REQUEST_TIMED_OUT (the produce was
// written, its answer lost), commits, offset fetches, heartbeats, joins,
// syncs and coordinator lookups of both groups answered
// COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, REBALANCE_IN_PROGRESS or
// REQUEST_TIMED_OUT. These are retriable: every order must be closed, none
// early, none dead-lettered, the services must keep running, and lateness
// stays bounded.
func TestBrokerFaults(t *testing.T) {
	const (
		n       = 2000
		longest = 6 * time.Second
	)
	seed := testSeed(t)
	p := newPipe(t, "faults", "200ms,500ms,1s,2s", 3)
	store := newStore()
	// The defaults, but for the topology: the pipe's topics and groups.
	rt, err := router.New(router.Config{Tiers: p.table, Prefix: p.prefix, Group: p.routerGroup()},
		router.Options{Kafka: p.kafkaOpts(), Logger: testLogger(t, "router")})
	if err != nil {
		t.Fatal(err)
	}
	cn, err := canceller.New(canceller.Config{Prefix: p.prefix, Group: p.cancellerGroup(), Tiers: p.table, Instance: "e2e"},
		canceller.Options{Kafka: p.kafkaOpts(), Closer: store, Logger: testLogger(t, "canceller")})
	if err != nil {
		t.Fatal(err)
	}
	stopRouter := start(t, "router", rt.Run)
	stopCanceller := start(t, "canceller", cn.Run)
	col := p.collectOutcomes()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.waitRunning(ctx, 1); err != nil {
		t.Fatal(err)
	}

	routerCommits := watchCommits(ctx, p.routerGroup())
	cancellerCommits := watchCommits(ctx, p.cancellerGroup())
	inj := &faultInjector{
		rng:    rand.New(rand.NewPCG(seed, seed>>32|1)),
		topics: append(p.table.Topics(p.prefix), p.cancelTopic(), p.outcomesTopic(), p.dlqTopic()),
		groups: []string{p.routerGroup(), p.cancellerGroup()},
		byKind: make(map[string]int),
	}
	// The faults come while the orders are scheduled and held, about 5 s;
	// then those not used up are removed, and the pipeline must recover.
	const faults = 100
	fctx, stopFaults := context.WithCancel(ctx)
	injected := make(chan struct{})
	go func() { defer close(injected); inj.run(fctx, faults) }()
	var (
		offOnce sync.Once
		hits    int
		summary string
	)
	faultsOff := func() {
		offOnce.Do(func() {
			stopFaults()
			<-injected
			hits, summary = inj.stop()
		})
	}
	defer faultsOff()

	// The scheduler's produces are not faulted (see schedulerTimeout); the
	// pipe's first client stays for its admin requests.
	p.prod, err = kgo.NewClient(append(slices.Clone(p.seeds), kgo.ProduceRequestTimeout(schedulerTimeout))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.prod.Close)
	orders := mixedOrders("faults", p.table, n, longest)
	begin := time.Now()
	if err := p.schedule(ctx, store, orders, 20, 100*time.Millisecond); err != nil {
		t.Fatalf("schedule: %v", err)
	}
	select {
	case <-injected:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	faultsOff()
	healed := time.Now()

	wctx, wcancel := allDue(ctx, orders, 60*time.Second)
	defer wcancel()
	if err := waitFor(wctx, t, func() bool { return col.seen() >= n }); err != nil {
		t.Fatalf("waiting for every order's outcome (faults removed %v ago): %v; %s; router %+v, canceller %+v",
			time.Since(healed).Round(time.Millisecond), err, missing(orders, col), rt.Stats(), cn.Stats())
	}
	took := time.Since(begin)
	// A canceller that lost its session closes again what it had not
	// committed.
	p.settleRepeated(ctx, col, stopRouter, stopCanceller)
	v := p.checkOrders(orders, col, store)

	if st := rt.Stats(); st.DeadLettered != 0 {
		t.Errorf("router dead-lettered %d records: a retriable broker error must not turn a deadline into a dead letter (%+v)", st.DeadLettered, st)
	}
	if st := cn.Stats(); st.DeadLettered != 0 {
		t.Errorf("canceller dead-lettered %d records (%+v)", st.DeadLettered, st)
	}
	if dl, err := p.endOffsets(ctx, p.dlqTopic()); err != nil || dl != 0 {
		t.Errorf("%d records in %s (%v), want none", dl, p.dlqTopic(), err)
	}
	// A member whose session expired, or whose rejoin failed for good,
	// loses its partitions, and what it handed on since its last commit is
	// read and handed on again: a router's records produced onward, a
	// canceller's closes. A rejoin keeps the partitions while it retries,
	// and no commit lands meanwhile, so that is every record handed on
	// while the group could not commit (see commitWatch), and none other.
	end := time.Now()
	w := commitWindow(p.table)
	var rgaps, cgaps []string
	bound := 0
	for _, g := range routerCommits.gaps(w, w, end) {
		moved := p.movedBetween(ctx, g[0], g[1])
		bound += moved
		rgaps = append(rgaps, fmt.Sprintf("%v (%d moved)", g[1].Sub(g[0]).Round(time.Millisecond), moved))
	}
	for _, g := range cancellerCommits.gaps(w, w, end) {
		closed := col.closedBetween(g[0], g[1])
		bound += closed
		cgaps = append(cgaps, fmt.Sprintf("%v (%d closed)", g[1].Sub(g[0]).Round(time.Millisecond), closed))
	}
	if v.dups > bound {
		t.Errorf("%d duplicate outcomes, more than the %d records handed on while a group could not commit (router %v, canceller %v)", v.dups, bound, rgaps, cgaps)
	}
	// Measured on two cores under -race over 15 seeds: p99 0.7 to 7.7 s,
	// max up to 8 s. The large ones are NOT_LEADER_OR_FOLLOWER answers
	// soon after another (or after any error that refreshed the client's
	// metadata): the partition then waits for the client's next metadata
	// refresh, which kgo spaces MetadataMinAge (5 s by default, which the
	// services keep) apart, once per such answer; a failed rejoin adds up
	// to the session timeout. The bound allows about two of those.
	late := checkLateness(t, "broker faults", v.late, 12*time.Second, 20*time.Second)
	t.Logf("%d faulted requests (%s); %d orders closed in %v, %v after the faults were removed; lateness %s; %d duplicate outcomes %v (at most %d: commit gaps of the router %v, of the canceller %v); router %+v; canceller %+v",
		hits, summary, n, took.Round(time.Millisecond), time.Since(healed).Round(time.Millisecond), late, v.dups, v.dupsBy, bound, rgaps, cgaps, rt.Stats(), cn.Stats())
	if t.Failed() {
		inj.mu.Lock()
		t.Logf("faults:\n  %s", strings.Join(slices.Clone(inj.log), "\n  "))
		inj.mu.Unlock()
	}
}

// defaultRouter returns an in-process router with the default settings but
// for the pipe's topology (tiers, topics, group).
func (p *pipe) defaultRouter(name string) *router.Router {
	p.t.Helper()
	rt, err := router.New(router.Config{Tiers: p.table, Prefix: p.prefix, Group: p.routerGroup()},
		router.Options{Kafka: p.kafkaOpts(), Logger: testLogger(p.t, name)})
	if err != nil {
		p.t.Fatal(err)
	}
	return rt
}

// TestRouterSessionLost expires the session of a router (default settings)
// while it holds, forwards and commits records: its next heartbeat is
// answered UNKNOWN_MEMBER_ID, as after a pause longer than the session
// timeout, so it loses its partitions, drops what it holds, rejoins and
// reads them again from the last commit. Nothing may be lost or early; the
// duplicates are what it handed on and had not committed; and once it holds
// nothing again, its count of held records is zero.
func TestRouterSessionLost(t *testing.T) {
	const n = 1000
	p := newPipe(t, "lost", "200ms,500ms,1s,2s", 3)
	store := newStore()
	rt := p.defaultRouter("router")
	stopRouter := start(t, "router", rt.Run)
	cn := p.newCanceller(store)
	stopCanceller := start(t, "canceller", cn.Run)
	col := p.collectOutcomes()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.waitRunning(ctx, 1); err != nil {
		t.Fatal(err)
	}
	orders := churnOrders("lost", p.table, n)
	scheduled := make(chan error, 1)
	go func() { scheduled <- p.schedule(ctx, store, orders, 30, 100*time.Millisecond) }()

	committed := func() bool {
		g := cluster.GroupInfo(p.routerGroup())
		return g != nil && len(g.Commits) > 0
	}
	if err := waitFor(ctx, t, func() bool { return col.seen() >= 200 && committed() }); err != nil {
		t.Fatalf("waiting for 200 outcomes and a commit: %v", err)
	}
	h := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: p.routerGroup(), Err: kerr.UnknownMemberID})
	defer h.Remove()
	if err := h.Wait(ctx, 1); err != nil {
		t.Fatalf("waiting for the router's next heartbeat: %v", err)
	}
	expired := time.Now()
	heldAt := rt.Stats()
	if err := <-scheduled; err != nil {
		t.Fatalf("schedule: %v", err)
	}
	wctx, wcancel := allDue(ctx, orders, 20*time.Second)
	defer wcancel()
	if err := waitFor(wctx, t, func() bool { return col.seen() >= n }); err != nil {
		t.Fatalf("waiting for every order's outcome: %v; %s; router %+v", err, missing(orders, col), rt.Stats())
	}
	if err := waitFor(wctx, t, func() bool { return rt.Stats().HeldBytes == 0 }); err != nil {
		t.Errorf("the router still holds records after every order was closed: %+v", rt.Stats())
	}
	st := rt.Stats()
	if st.HeldBytes == 0 && st.Held != 0 {
		t.Errorf("the router holds no bytes but counts %d records held (%+v; %d held when its session expired): the counts of the records a lost partition held were not taken back",
			st.Held, st, heldAt.Held)
	}
	p.settle(ctx, col, stopRouter, stopCanceller)
	v := p.checkOrders(orders, col, store)

	// What the router handed on in the commit window before the expiry, and
	// until the rejoin that found it expired (a join's round trip), was not
	// committed and is handed on again.
	w := commitWindow(p.table)
	moved := p.movedBetween(ctx, expired.Add(-w), expired.Add(200*time.Millisecond))
	if v.dups > moved {
		t.Errorf("%d duplicate outcomes, more than the %d records produced onward from %v before the expiry to 200ms after", v.dups, moved, w)
	}
	late := checkLateness(t, "session lost", v.late, time.Second, 2*time.Second)
	t.Logf("session expired with %d records held; %d duplicate outcomes %v (at most %d); lateness %s; router %+v",
		heldAt.Held, v.dups, v.dupsBy, moved, late, st)
}
