package canceller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestNotReadyWhileGroupFails: the canceller's group refuses it
// (GROUP_AUTHORIZATION_FAILED on every heartbeat and join, as after an ACL
// change), so it is assigned nothing and closes nothing. It stays ready
// until its group session has failed for consumer.FetchFailingAfter, then
// is not, saying why, however far apart the errors come; once it joins
// again, it is ready and closes.
func TestNotReadyWhileGroupFails(t *testing.T) {
	var m closer.Memory
	b := setup(t, Config{}, &m)
	m.Put("before", closer.StateUnpaid)
	b.produce(t, "before", "", hdrMillis(tiers.HeaderDue, t0))
	b.waitStats(t, func(s Stats) bool { return s.Closed == 1 })
	if err := b.c.NotReady(); err != nil {
		t.Fatalf("not ready while consuming: %v", err)
	}
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat, kmsg.JoinGroup}, Group: b.cfg.Group,
		Err: kerr.GroupAuthorizationFailed, Count: -1})
	defer fault.Remove()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; b.c.Ready(); i++ {
		if i == 6 {
			t.Fatalf("still ready after its group refused it for %v", b.clock.Now().Sub(t0))
		}
		if err := fault.Wait(ctx, fault.Hits()+1); err != nil {
			t.Fatalf("no heartbeat or join refused: %v", err)
		}
		if failing := b.c.member.FetchFailingFor(); failing >= consumer.FetchFailingAfter {
			t.Fatalf("ready, though its group session has failed for %v", failing)
		}
		b.clock.Advance(consumer.FetchFailingAfter + time.Second)
	}
	err := b.c.NotReady()
	want := fmt.Sprintf("fetch: the session of group %s failed without a break for ", b.cfg.Group)
	if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("NotReady = %v, want %q... GROUP_AUTHORIZATION_FAILED", err, want)
	}

	fault.Remove()
	waitFor(t, "ready again", b.c.Ready, func() string { return fmt.Sprint(b.c.NotReady()) })
	m.Put("after", closer.StateUnpaid)
	b.produce(t, "after", "", hdrMillis(tiers.HeaderDue, t0))
	b.waitStats(t, func(s Stats) bool { return s.Closed == 2 })
}
