package router

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestTimerBytes: the in-memory timer takes no more records once it holds
// TimerBytes, however few they are; a record refused waits with the
// records of its partition instead, and still fires at its due time.
func TestTimerBytes(t *testing.T) {
	table, _ := tiers.Parse("10s")
	b := setup(t, Config{Tiers: table, TimerBytes: 1 << 20})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 10*time.Second)
	before := b.router.Stats()
	// 400 kB each: the third passes the 1 MiB bound, and the timer is
	// full for the fourth and fifth.
	const n, size = 5, 400_000
	for i := range n {
		r := delayRecord(topic, "k"+strconv.Itoa(i), t0, t0.Add(time.Duration(i+1)*time.Second))
		r.Value = make([]byte, size)
		b.produceRec(t, r)
	}
	b.waitStats(t, func(s Stats) bool { return s.Held == before.Held+n })
	if got := b.router.stats.timer.Load(); got != 3 {
		t.Fatalf("%d records of %d bytes in the timer, want 3: the timer is bounded to %d bytes", got, size, b.cfg.TimerBytes)
	}
	for i := range n {
		b.clock.Advance(time.Second)
		b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+int64(i)+1 })
	}
	for i := range n {
		out := b.read(t, b.cfg.Target, "k"+strconv.Itoa(i), 1)[0]
		want := tiers.FormatMillis(t0.Add(time.Duration(i+1) * time.Second))
		if v, _ := tiers.Header(out.Headers, tiers.HeaderForwarded); !bytes.Equal(v, want) {
			t.Errorf("k%d forwarded at %s, want its due time %s", i, v, want)
		}
	}
}

// TestTimerAfterTierWait: a record whose tier wait ends with less than the
// smallest tier left goes into the timer to wake at its due time, not at
// the end of its tier wait: the router arms its wake-up for the due time,
// and nothing waits for the cancellations reader before then.
func TestTimerAfterTierWait(t *testing.T) {
	table, _ := tiers.Parse("10s,1m")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	due := t0.Add(15 * time.Second)
	b.produce(t, tiers.Topic(b.cfg.Prefix, 10*time.Second), "k", t0, due)
	b.waitArmed(t, t0.Add(10*time.Second))
	before := b.router.Stats()

	b.clock.Advance(10 * time.Second) // tier wait over, 5s left: into the timer
	// Either the wake-up is armed for the due time, or the record woke
	// again at once and waits, due in 5s, for the cancellations reader.
	state := func() string {
		wake := "not armed"
		if ns := b.router.wakeAt.Load(); ns != 0 {
			wake = "armed for t0+" + time.Unix(0, ns).Sub(t0).String()
		}
		return fmt.Sprintf("wake-up %s, %d in the timer, %d gated; stats %+v",
			wake, b.router.stats.timer.Load(), b.router.stats.gated.Load(), b.router.Stats())
	}
	poll.Until(t, 10*time.Second, "a wake-up for the due time, or a gated record", func() bool {
		return b.router.wakeAt.Load() == due.UnixNano() || b.router.stats.gated.Load() != 0
	}, state)
	if b.router.wakeAt.Load() != due.UnixNano() || b.router.stats.timer.Load() != 1 || b.router.stats.gated.Load() != 0 {
		t.Fatalf("after the tier wait, 5s before the due time: %s; want the wake-up armed for t0+15s, 1 in the timer, 0 gated", state())
	}

	b.clock.Advance(5*time.Second - time.Millisecond)
	if s := b.router.Stats(); s.Forwarded != before.Forwarded || s.Hopped != before.Hopped {
		t.Fatalf("acted before the due time: %+v", s)
	}
	b.clock.Advance(time.Millisecond)
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+1 })
	out := b.read(t, b.cfg.Target, "k", 1)[0]
	if v, _ := tiers.Header(out.Headers, tiers.HeaderForwarded); !bytes.Equal(v, tiers.FormatMillis(due)) {
		t.Errorf("forwarded at %s, want the due time %d", v, due.UnixMilli())
	}
}
