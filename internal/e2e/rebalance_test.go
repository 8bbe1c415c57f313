package e2e

import (
	"context"
	"testing"
	"time"
)

// TestRebalance adds a second router to the group while the first is at
// work, lets it forward for a while, and stops it gracefully: partitions move
// twice, with records held, in flight and committed. Nothing may be lost or
// early. A graceful rebalance hands off what the leaving router holds, so it
// must not repeat a single close (duplicates come only from crashes).
func TestRebalance(t *testing.T) {
	const (
		n          = 1500
		partitions = 4
		// second must forward this many records before it leaves.
		secondForwards = 100
	)
	p := newPipe(t, "rebalance", "200ms,500ms,1s,2s", partitions)
	store := newStore()
	first := p.newRouter("router-1")
	stopFirst := start(t, "router-1", first.Run)
	cn := p.newCanceller(store)
	stopCanceller := start(t, "canceller", cn.Run)
	col := p.collectOutcomes()

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	if err := p.waitRunning(ctx, 1); err != nil {
		t.Fatal(err)
	}
	orders := churnOrders("rebalance", p.table, n)
	scheduled := make(chan error, 1)
	go func() { scheduled <- p.schedule(ctx, store, orders, 30, 100*time.Millisecond) }()

	const joinAfter = 200
	if err := waitFor(ctx, t, func() bool { return col.seen() >= joinAfter }); err != nil {
		t.Fatalf("waiting for %d outcomes before the join (have %d): %v", joinAfter, col.seen(), err)
	}
	second := p.newRouter("router-2")
	stopSecond := start(t, "router-2", second.Run)
	atJoin, joined := col.seen(), time.Now()
	if err := p.waitAssigned(ctx, 2); err != nil {
		t.Fatalf("waiting for both routers to own partitions: %v (group %+v)", err, cluster.GroupInfo(p.routerGroup()))
	}
	moved := time.Since(joined)
	if err := waitFor(ctx, t, func() bool { return second.Stats().Forwarded >= secondForwards }); err != nil {
		t.Fatalf("waiting for router-2 to forward %d records (has %+v): %v", secondForwards, second.Stats(), err)
	}
	left := time.Now()
	if err := stopSecond(); err != nil {
		t.Fatalf("graceful stop of router-2: %v", err)
	}
	atLeave := col.seen()
	if err := p.waitAssigned(ctx, 1); err != nil {
		t.Fatalf("waiting for router-1 to own every partition again: %v (group %+v)", err, cluster.GroupInfo(p.routerGroup()))
	}
	movedBack := time.Since(left)
	if g := cluster.GroupInfo(p.routerGroup()); g.NumAssigned() != p.table.Len()*partitions {
		t.Errorf("router-1 owns %d partitions after router-2 left, want %d", g.NumAssigned(), p.table.Len()*partitions)
	}

	if err := <-scheduled; err != nil {
		t.Fatalf("schedule: %v", err)
	}
	wctx, wcancel := allDue(ctx, orders, 15*time.Second)
	defer wcancel()
	if err := waitFor(wctx, t, func() bool { return col.seen() >= n }); err != nil {
		t.Fatalf("waiting for every order's outcome: %v; %s; router-1 %+v, router-2 %+v, canceller %+v",
			err, missing(orders, col), first.Stats(), second.Stats(), cn.Stats())
	}
	p.settle(ctx, col, stopFirst, stopCanceller)
	v := p.checkOrders(orders, col, store)

	s1, s2 := first.Stats(), second.Stats()
	// The partitions that move wait from their revoke to their next
	// owner's first fetch; a graceful rebalance must cost the deadlines
	// on them no more than a crash-free run allows.
	late := checkFaultlessLateness(t, "graceful rebalance", v.late)
	t.Logf("router-2 joined after %d outcomes (owning partitions %v later) and left after %d of %d (router-1 owned all again %v later); close lateness %s; router-1 %+v, router-2 %+v; %d duplicate outcomes %v; canceller %+v",
		atJoin, moved.Round(time.Millisecond), atLeave, n, movedBack.Round(time.Millisecond), late, s1, s2, v.dups, v.dupsBy, cn.Stats())
	// Forwarded counts acknowledged forwards of owned partitions, so it can
	// miss a forward acknowledged after its partition was revoked, but it
	// cannot exceed the cancel records (one outcome each, see settle).
	if got := s1.Forwarded + s2.Forwarded; got > int64(n)+int64(v.dups) {
		t.Errorf("routers counted %d forwards, more than the %d cancel records", got, n+v.dups)
	}
	if v.dups != 0 {
		t.Errorf("%d duplicate closes after a graceful rebalance, want 0: %v", v.dups, v.dupsBy)
	}
}
