package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestNeverEarlyNothingLost schedules orders with every kind of delay
// through one router and one canceller and checks invariants 1 to 3 of
// DESIGN.md: every order is closed exactly once, none before its due time,
// with no duplicate (nothing crashed), and orders longer than the largest
// tier really hop from tier to tier.
func TestNeverEarlyNothingLost(t *testing.T) {
	const (
		n       = 3000
		longest = 7 * time.Second
	)
	p := newPipe(t, "never", "200ms,500ms,1s,2s", 4)
	store := newStore()
	rt := p.newRouter("router")
	stopRouter := start(t, "router", rt.Run)
	cn := p.newCanceller(store)
	stopCanceller := start(t, "canceller", cn.Run)
	col := p.collectOutcomes()

	ctx, cancel := context.WithTimeout(context.Background(), longest+30*time.Second)
	defer cancel()
	if err := p.waitRunning(ctx, 1); err != nil {
		t.Fatal(err)
	}
	orders := mixedOrders("never", p.table, n, longest)
	begin := time.Now()
	if err := p.schedule(ctx, store, orders, 10, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := allDue(ctx, orders, 15*time.Second)
	defer wcancel()
	if err := waitFor(wctx, t, func() bool { return col.seen() >= n }); err != nil {
		t.Fatalf("waiting for every order's outcome: %v; %s; router %+v, canceller %+v", err, missing(orders, col), rt.Stats(), cn.Stats())
	}
	took := time.Since(begin)
	p.settle(ctx, col, stopRouter, stopCanceller)
	v := p.checkOrders(orders, col, store)

	// Nothing crashed and nothing rebalanced: no duplicate at all.
	if v.dups != 0 {
		t.Errorf("%d duplicate outcomes without a crash or rebalance, want 0", v.dups)
	}
	if st := rt.Stats(); st.Forwarded != n || st.DeadLettered != 0 {
		t.Errorf("router forwarded %d and dead-lettered %d, want %d and 0", st.Forwarded, st.DeadLettered, n)
	}

	// What each kind of delay must have gone through.
	smallest := tiers.Name(p.table.Smallest())
	byClass := map[string]int{}
	for _, o := range orders {
		ev, ok := v.first[o.id]
		if !ok {
			continue // reported as lost
		}
		byClass[o.class]++
		switch o.class {
		case "past", "below-smallest":
			// Produced to the smallest tier; fired at once or from the
			// router's timer, without a hop.
			if ev.Hops != 0 || ev.Path != smallest {
				t.Errorf("%s (%s, delay %v): hops %d, path %q; want 0 and %q", o.id, o.class, o.delay, ev.Hops, ev.Path, smallest)
			}
		case "exact-tier":
			// Waits out exactly its tier and is due then.
			if want := tiers.Name(o.delay); ev.Hops != 0 || ev.Path != want {
				t.Errorf("%s (%s, delay %v): hops %d, path %q; want 0 and %q", o.id, o.class, o.delay, ev.Hops, ev.Path, want)
			}
		case "beyond-largest":
			// At least 2.75 times the largest tier: two full waits in it,
			// then at least one shorter tier or the timer.
			if largest := tiers.Name(p.table.Largest()); ev.Hops < 2 || !strings.HasPrefix(ev.Path, largest+"*") {
				t.Errorf("%s (%s, delay %v): hops %d, path %q; want at least 2 hops, starting with %s*", o.id, o.class, o.delay, ev.Hops, ev.Path, largest)
			}
		}
	}
	late := checkFaultlessLateness(t, "no crash", v.late)
	t.Logf("%d orders closed in %v (%v); close lateness %s; router %+v; canceller %+v",
		len(v.first), took.Round(time.Millisecond), byClass, late, rt.Stats(), cn.Stats())
}
