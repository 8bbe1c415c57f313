package router

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// ladderEvent is something the router must do at a time: hop a deadline
// into its next tier, or forward it.
type ladderEvent struct {
	at      time.Time
	forward bool
}

// TestEveryDelayClass runs deadlines of every delay class through the
// default ladder on a fake clock: shorter than the smallest tier, at each
// tier, between each two, the delay that visits the most tiers within a
// year, and the longest delay allowed. The clock moves from one expected
// event to the next, so that each deadline is seen to hop exactly when its
// tier wait ends and to fire exactly at its due time: once, never early, and
// after as many hops as Table.Walk counts, at most 21.
func TestEveryDelayClass(t *testing.T) {
	b := setup(t, Config{})
	table, t0 := b.cfg.Tiers, b.clock.Now()
	ds := table.Durations()
	delays := []time.Duration{20 * time.Second, b.cfg.MaxDelay, worstWalk(table, 365*24*time.Hour)}
	for i, d := range ds {
		delays = append(delays, d)
		if i > 0 {
			delays = append(delays, (d+ds[i-1])/2)
		}
	}
	before := b.router.Stats()
	var events []ladderEvent
	for i, d := range delays {
		due := t0.Add(d)
		walk := table.Walk(d)
		if len(walk) > 22 {
			t.Fatalf("delay %v visits %d tiers, more than 22", d, len(walk))
		}
		at := t0
		for _, v := range walk[:len(walk)-1] {
			at = at.Add(v)
			events = append(events, ladderEvent{at: at})
		}
		events = append(events, ladderEvent{at: due, forward: true})
		b.produce(t, tiers.Topic(b.cfg.Prefix, walk[0]), "class-"+strconv.Itoa(i), t0, due)
	}
	stepThrough(t, b, before, len(delays), events)

	for i, d := range delays {
		out := b.read(t, b.cfg.Target, "class-"+strconv.Itoa(i), 1)
		if len(out) != 1 {
			t.Fatalf("delay %v: %d records at the target, want 1", d, len(out))
		}
		if v, _ := tiers.Header(out[0].Headers, tiers.HeaderForwarded); !bytes.Equal(v, tiers.FormatMillis(t0.Add(d))) {
			t.Errorf("delay %v: forwarded at %s, want its due time %d", d, v, t0.Add(d).UnixMilli())
		}
		want := len(table.Walk(d)) - 1
		if v, _ := tiers.Header(out[0].Headers, tiers.HeaderHops); want > 0 && string(v) != strconv.Itoa(want) {
			t.Errorf("delay %v: %q hops, want %d", d, v, want)
		}
	}
}

// stepThrough moves b's clock from one of events to the next, each time
// once the router holds every deadline not yet forwarded (none is on its
// way between two tiers) and has done what was due: n deadlines, held
// since before, and nothing done a millisecond before an event.
func stepThrough(t *testing.T, b *bundle, before Stats, n int, events []ladderEvent) {
	t.Helper()
	slices.SortStableFunc(events, func(a, b ladderEvent) int { return a.at.Compare(b.at) })
	t0 := b.clock.Now()
	var hops, forwards int64
	settled := func() bool {
		s := b.router.Stats()
		return s.Hopped-before.Hopped == hops && s.Forwarded-before.Forwarded == forwards &&
			s.Held-before.Held == int64(n)-forwards
	}
	state := func() string {
		return fmt.Sprintf("want %d hops, %d forwarded, %d held; stats %+v, before %+v", hops, forwards, int64(n)-forwards, b.router.Stats(), before)
	}
	poll.Until(t, 10*time.Second, "every deadline held", settled, state)
	for i := 0; i < len(events); {
		at := events[i].at
		b.clock.Advance(at.Sub(b.clock.Now()) - time.Millisecond)
		if !settled() {
			t.Fatalf("1 ms before t0+%v: %s", at.Sub(t0), state())
		}
		b.clock.Advance(time.Millisecond)
		for ; i < len(events) && events[i].at.Equal(at); i++ {
			if events[i].forward {
				forwards++
			} else {
				hops++
			}
		}
		poll.Until(t, 10*time.Second, fmt.Sprintf("what is due at t0+%v", at.Sub(t0)), settled, state)
	}
}

// TestOtherTiers: a router reads the delay topics of its prefix whose tiers
// it is not configured with, one there before it started (a tier left by a
// change of tiers) and one created while it runs (producers with a longer
// ladder); their deadlines wait out those tiers, hop into the configured
// ones and fire at their due times, exactly once.
func TestOtherTiers(t *testing.T) {
	table, _ := tiers.Parse("1s,5s")
	fast := []kgo.Opt{kgo.MetadataMinAge(50 * time.Millisecond), kgo.MetadataMaxAge(200 * time.Millisecond)}
	first := setupOpts(t, Config{Tiers: table}, fast...)
	t0 := first.clock.Now()
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	first.produce(t, tiers.Topic(first.cfg.Prefix, 30*time.Second), "long", t0, t0.Add(37*time.Second))
	b := start(t, first.cfg, first.clock, first.cl, fast...)
	before := Stats{}
	b.produce(t, tiers.Topic(b.cfg.Prefix, 2*time.Second), "short", t0, t0.Add(3*time.Second))
	stepThrough(t, b, before, 2, []ladderEvent{
		{at: t0.Add(2 * time.Second)},                 // short: 1s left -> 1s tier
		{at: t0.Add(3 * time.Second), forward: true},  // short due
		{at: t0.Add(30 * time.Second)},                // long: 7s left -> 5s
		{at: t0.Add(35 * time.Second)},                // 2s left -> 1s
		{at: t0.Add(36 * time.Second)},                // 1s left -> 1s
		{at: t0.Add(37 * time.Second), forward: true}, // long due
	})
	for key, want := range map[string]struct {
		due  time.Duration
		path string
	}{"short": {3 * time.Second, "2s,1s"}, "long": {37 * time.Second, "30s,5s,1s*2"}} {
		out := b.read(t, b.cfg.Target, key, 1)[0]
		if v, _ := tiers.Header(out.Headers, tiers.HeaderForwarded); !bytes.Equal(v, tiers.FormatMillis(t0.Add(want.due))) {
			t.Errorf("%s: forwarded at %s, want its due time t0+%v", key, v, want.due)
		}
		if v, _ := tiers.Header(out.Headers, tiers.HeaderPath); string(v) != want.path {
			t.Errorf("%s: path %q, want %q", key, v, want.path)
		}
	}
}

// worstWalk returns the delay up to limit that visits the most tiers, on a
// grid of a minute.
func worstWalk(table tiers.Table, limit time.Duration) time.Duration {
	var worst time.Duration
	for d := time.Duration(0); d <= limit; d += time.Minute {
		if len(table.Walk(d)) > len(table.Walk(worst)) {
			worst = d
		}
	}
	return worst
}

// TestHeldShared: once the router as a whole holds MaxHeld records waiting
// out their tiers, each partition is held to an even share of it, so that
// what the router holds does not grow with the number of tiers: at most
// twice MaxHeld and one poll, where the limit per partition alone would let
// four partitions hold 200 or more. All of it fires at its due time.
func TestHeldShared(t *testing.T) {
	table, _ := tiers.Parse("10s,20s,30s,40s")
	const perPartition, maxHeld, each = 50, 20, 100
	b := setup(t, Config{Tiers: table, MaxHeldPerPartition: perPartition, MaxHeld: maxHeld})
	t0 := b.clock.Now()
	before := b.router.Stats()
	for _, d := range table.Durations() {
		rs := make([]*kgo.Record, each)
		for i := range rs {
			rs[i] = delayRecord(tiers.Topic(b.cfg.Prefix, d), fmt.Sprintf("%v-%d", d, i), t0, t0.Add(d))
		}
		if err := b.cl.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b.waitStats(t, func(s Stats) bool { return s.Paused == int64(table.Len()) })
	if held := b.router.Stats().Held - before.Held; held > 2*maxHeld+perPartition {
		t.Errorf("every partition paused holding %d records, want at most %d", held, 2*maxHeld+perPartition)
	}
	b.clock.Advance(table.Largest())
	b.waitStats(t, func(s Stats) bool {
		return s.Forwarded == before.Forwarded+int64(table.Len()*each) && s.Paused == 0
	})
}
