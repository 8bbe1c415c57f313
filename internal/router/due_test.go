package router

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestDueInSeconds: with the default flags, 50 records whose hourglass-due
// is in seconds (as `$(( $(date +%s) + 5 ))` writes it, a time in January
// 1970 in milliseconds) all go to the dead-letter topic as due_implausible,
// with the value and the unit it looks like; none is forwarded. A record due
// at the first instant of 2000, long past but plausible, is forwarded.
func TestDueInSeconds(t *testing.T) {
	b := setup(t, Config{})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, time.Minute)
	before, targetBefore := b.router.Stats(), count(t, b, b.cfg.Target)
	const n = 50
	for i := range n {
		due := t0.Unix() + 5
		b.produceRec(t, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "seconds-%d", i), Timestamp: t0,
			Headers: []kgo.RecordHeader{header(tiers.HeaderDue, fmt.Sprint(due))}})
	}
	b.produce(t, topic, "backlog", t0, time.UnixMilli(tiers.MinDueMillis))
	b.waitStats(t, func(s Stats) bool { return s.DeadLettered-before.DeadLettered+s.Forwarded-before.Forwarded > n })

	if s := b.router.Stats(); s.DeadLettered-before.DeadLettered != n || s.Forwarded-before.Forwarded != 1 {
		t.Errorf("dead-lettered %d, forwarded %d; want %d and 1 (the record of 2000)",
			s.DeadLettered-before.DeadLettered, s.Forwarded-before.Forwarded, n)
	}
	b.read(t, b.cfg.Target, "backlog", 1)
	wantDetail := fmt.Sprintf("it looks like unix seconds (%s), which is %d in milliseconds",
		t0.Add(5*time.Second).UTC().Format(time.RFC3339), t0.Add(5*time.Second).UnixMilli())
	for i := range n {
		dl := b.read(t, b.cfg.DeadLetter, fmt.Sprintf("seconds-%d", i), 1)[0]
		v, _ := tiers.Header(dl.Headers, tiers.HeaderReason)
		if reason(dl) != string(tiers.ReasonDueImplausible) || !strings.Contains(string(v), wantDetail) {
			t.Errorf("seconds-%d: dead letter reason %q, want due_implausible saying %q", i, v, wantDetail)
		}
	}
	// Only the record of 2000 reached the target.
	if got := count(t, b, b.cfg.Target) - targetBefore; got != 1 {
		t.Errorf("%d records reached the target topic, want 1: %d due in seconds were forwarded", got, got-1)
	}
	if got := testutil.ToFloat64(b.router.metrics.deadLetters.WithLabelValues(string(tiers.ReasonDueImplausible))); got != n {
		t.Errorf("hourglass_router_dead_letters_total{reason=\"due_implausible\"} = %v, want %d", got, n)
	}
}
