package router

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/cancels"
	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestNotReadyWhileFetchesFail: with the default flags, every fetch of a
// delay topic fails with an error franz-go does not retry
// (UNKNOWN_SERVER_ERROR, as from a broker whose answers the client cannot
// use). The router stays ready until they have failed without a break for
// consumer.FetchFailingAfter, then is not, saying which partition fails
// and why; once the partition is read again, it is ready again. The clock
// moves 5s after each failed fetch, less than a run's gap.
func TestNotReadyWhileFetchesFail(t *testing.T) {
	b := setup(t, Config{})
	if !b.router.Ready() {
		t.Fatalf("not ready after start: %v", b.router.NotReady())
	}
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, time.Minute)
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Count: -1})
	defer fault.Remove()
	const step, steps = 5 * time.Second, 12
	for i := 0; b.router.Ready(); i++ {
		if i == steps {
			t.Fatalf("still ready after the fetches of %s failed for %v", topic, b.clock.Now().Sub(t0))
		}
		hits := fault.Hits()
		poll.Until(t, 20*time.Second, "a failed fetch", func() bool { return fault.Hits() > hits }, nil)
		if failing := b.router.member.FetchFailingFor(); failing >= consumer.FetchFailingAfter {
			t.Fatalf("ready, though the fetches of %s have failed for %v", topic, failing)
		}
		b.clock.Advance(step)
	}
	if failing := b.router.member.FetchFailingFor(); failing < consumer.FetchFailingAfter {
		t.Errorf("not ready after the fetches failed for %v, want %v", failing, consumer.FetchFailingAfter)
	}
	err := b.router.NotReady()
	want := fmt.Sprintf("fetch: fetches of %s[0] failed without a break for ", topic)
	if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, kerr.UnknownServerError) {
		t.Errorf("NotReady = %v, want %q... UNKNOWN_SERVER_ERROR", err, want)
	}

	fault.Remove()
	b.produce(t, topic, "healed", b.clock.Now(), b.clock.Now().Add(-time.Second))
	b.readWithin(t, b.cfg.Target, "healed", 1, 20*time.Second)
	poll.Until(t, 10*time.Second, "ready again", b.router.Ready, func() string { return fmt.Sprint(b.router.NotReady()) })
}

// TestNotReadyWhileCancellationsBehind: the end of the cancellations topic
// cannot be listed (NOT_LEADER_OR_FOLLOWER, a partition without a leader),
// so a due deadline waits at the gate and nothing is forwarded: the router
// is not ready once its reader has owed the round for
// cancels.BehindAfter, and ready again once the round ends.
func TestNotReadyWhileCancellationsBehind(t *testing.T) {
	table, _ := tiers.Parse("10s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 10*time.Second)
	b.produce(t, topic, "waits", t0, t0.Add(time.Second))
	b.waitArmed(t, t0.Add(time.Second))
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: b.cfg.Cancellations, Err: kerr.NotLeaderForPartition, Count: -1})
	defer fault.Remove()
	b.clock.Advance(time.Second)
	poll.Until(t, 20*time.Second, "a refused listing", func() bool { return fault.Hits() > 0 }, nil)
	if !b.router.Ready() {
		t.Fatalf("not ready at once: %v", b.router.NotReady())
	}
	b.clock.Advance(cancels.BehindAfter)
	err := b.router.NotReady()
	if err == nil || !strings.HasPrefix(err.Error(), "cancellations: the cancellations topic "+b.cfg.Cancellations+" has not been read up to its end for 30s") {
		t.Fatalf("NotReady = %v, want the cancellations reader behind for 30s", err)
	}
	if s := b.router.Stats(); s.Forwarded != int64(table.Len()) || s.Gated != 1 {
		t.Errorf("stats %+v: want the deadline gated", s)
	}
	fault.Remove()
	b.readWithin(t, b.cfg.Target, "waits", 1, 20*time.Second)
	poll.Until(t, 10*time.Second, "ready again", b.router.Ready, func() string { return fmt.Sprint(b.router.NotReady()) })
}
