package router

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestOwnTopicBrieflyUnknown: a broker answers the produces to the default
// target topic, then to a delay topic, UNKNOWN_TOPIC_OR_PARTITION a few
// times in a row (a broker whose metadata lags a leader move or a partition
// reassignment does; franz-go gives a record up after UnknownTopicRetries,
// 4, of them). Those topics are the router's own and exist: the forward and
// the hop must go through once the broker answers again, not become dead
// letters that an operator has to replay.
func TestOwnTopicBrieflyUnknown(t *testing.T) {
	table, _ := tiers.Parse("30s,2m")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	short, long := tiers.Topic(b.cfg.Prefix, 30*time.Second), tiers.Topic(b.cfg.Prefix, 2*time.Minute)
	before := b.router.Stats()

	// The default target.
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: b.cfg.Target, Err: kerr.UnknownTopicOrPartition, Count: 5})
	b.produceRec(t, delayRecord(short, "due", t0, t0.Add(-time.Second)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fault.Wait(ctx, 5); err != nil {
		t.Fatalf("the fault answered %d produces: %v", fault.Hits(), err)
	}
	fault.Remove()
	// Retries, if any, wait with the clock.
	settle(t, b, "the forward to the default target", func(s Stats) bool {
		return s.Forwarded > before.Forwarded || s.DeadLettered > before.DeadLettered
	})
	if st := b.router.Stats(); st.DeadLettered != before.DeadLettered {
		t.Errorf("a deadline forwarded to the default target was dead-lettered after a few UNKNOWN_TOPIC_OR_PARTITION answers (%+v)", st)
	}
	b.read(t, b.cfg.Target, "due", 1)

	// A delay topic: a hop from 2m to 30s.
	before = b.router.Stats()
	fault = cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: short, Err: kerr.UnknownTopicOrPartition, Count: 5})
	defer fault.Remove()
	b.produceRec(t, delayRecord(long, "hop", t0, t0.Add(2*time.Minute+50*time.Second)))
	b.waitStats(t, func(s Stats) bool { return s.Held == before.Held+1 })
	b.clock.Advance(2 * time.Minute)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fault.Wait(ctx, 5); err != nil {
		t.Fatalf("the fault answered %d produces: %v", fault.Hits(), err)
	}
	fault.Remove()
	settle(t, b, "the hop", func(s Stats) bool {
		return s.Hopped > before.Hopped || s.DeadLettered > before.DeadLettered
	})
	if st := b.router.Stats(); st.DeadLettered != before.DeadLettered {
		t.Errorf("a deadline hopping to a delay topic was dead-lettered after a few UNKNOWN_TOPIC_OR_PARTITION answers (%+v)", st)
	}
	b.read(t, short, "hop", 1)
}

// settle advances b's clock a second at a time, so that retries waiting
// on it come due, until done holds for the router's stats (ten seconds at
// most).
func settle(t *testing.T, b *bundle, what string, done func(Stats) bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what+" settled", func() bool {
		if done(b.router.Stats()) {
			return true
		}
		b.clock.Advance(time.Second)
		return false
	}, func() string { return fmt.Sprintf("stats %+v", b.router.Stats()) })
}

// TestAddedDelayPartition: a partition is added to a delay topic while the
// router runs, and a producer that knows it puts a due deadline there. The
// router must take the partition within seconds: franz-go refreshes its
// metadata, and so finds the partition, only every 5 minutes by default.
func TestAddedDelayPartition(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(b.cl).CreatePartitions(ctx, 1, topic); err != nil {
		t.Fatal(err)
	}
	manual, err := kgo.NewClient(seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer manual.Close()
	rec := delayRecord(topic, "new", t0, t0.Add(-time.Second))
	rec.Partition = 1
	if err := manual.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// Within 30 s, which franz-go's default (5 minutes) would miss by far,
	// with room for a rebalance on a busy machine.
	b.readWithin(t, b.cfg.Target, "new", 1, 30*time.Second)
	t.Logf("the deadline in the added partition was forwarded %v after it was produced", time.Since(start).Round(time.Millisecond))
}

// TestFetchErrorBacksOff: the fetches of one delay topic fail with an error
// franz-go does not retry itself (TOPIC_AUTHORIZATION_FAILED, after an ACL
// change). The client fetches the partition again at once and the poll
// returns the error again at once: the router must pause the partition for
// a backoff instead of looping on it (tens of thousands of fetches and log
// lines a second, a whole core), keep forwarding from the other tier, and
// read the failing one again once the broker answers it.
func TestFetchErrorBacksOff(t *testing.T) {
	table, _ := tiers.Parse("30s,2m")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	short, long := tiers.Topic(b.cfg.Prefix, 30*time.Second), tiers.Topic(b.cfg.Prefix, 2*time.Minute)
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: long, Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer fault.Remove()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fault.Wait(ctx, 1); err != nil {
		t.Fatalf("no fetch of %s: %v", long, err)
	}
	// The other tier flows meanwhile.
	b.produceRec(t, delayRecord(short, "other-tier", t0, t0.Add(-time.Second)))
	b.read(t, b.cfg.Target, "other-tier", 1)
	from, hits := time.Now(), fault.Hits()
	poll.Until(t, 10*time.Second, "two seconds", func() bool { return time.Since(from) >= 2*time.Second }, nil)
	// With the backoff (250ms doubling to 5s), a handful; without it,
	// thousands.
	if n := fault.Hits() - hits; n > 50 {
		t.Errorf("%d fetches of the failing partition in %v: the router loops on a fetch error", n, time.Since(from).Round(time.Millisecond))
	}
	fault.Remove()
	b.produceRec(t, delayRecord(long, "healed", t0, t0.Add(-time.Second)))
	b.readWithin(t, b.cfg.Target, "healed", 1, 20*time.Second)
}

// TestInvalidRecordBatchNotDeadLettered: the target answers one produce
// request INVALID_RECORD, as a broker does for a whole batch when one of its
// records fails validation (a schema check, a policy). The deadlines in that
// batch are valid: each must be tried again alone, as for a batch refused as
// too large, and forwarded, not dead-lettered with the one that failed.
func TestInvalidRecordBatchNotDeadLettered(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	before := b.router.Stats()
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: b.cfg.Target, Err: kerr.InvalidRecord, Count: 1})
	defer fault.Remove()
	const n = 20
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, delayRecord(topic, fmt.Sprintf("k%d", i), t0, t0.Add(-time.Second)))
	}
	if err := b.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.waitStats(t, func(s Stats) bool { return s.Forwarded+s.DeadLettered >= before.Forwarded+before.DeadLettered+n })
	if fault.Hits() != 1 {
		t.Fatalf("the fault answered %d produces, want 1", fault.Hits())
	}
	if st := b.router.Stats(); st.DeadLettered != before.DeadLettered || st.Forwarded != before.Forwarded+n {
		t.Errorf("one INVALID_RECORD answer dead-lettered %d valid deadlines (forwarded %d of %d)",
			st.DeadLettered-before.DeadLettered, st.Forwarded-before.Forwarded, n)
	}
}

// TestGatedRecordsGauge: while the cancellations reader cannot list the end
// of its topic, every due deadline waits for it and nothing is forwarded;
// tier_overrun and forward_lateness are observed only once a record moves
// on, so hourglass_router_gated_records must show the waiting records.
func TestGatedRecordsGauge(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: b.cfg.Cancellations, Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer fault.Remove()
	b.clock.Advance(time.Second) // past what the reader has covered
	b.produceRec(t, delayRecord(tiers.Topic(b.cfg.Prefix, 30*time.Second), "gated", t0, b.clock.Now()))
	// What hourglass_router_gated_records reads.
	gauge := func() int64 { return b.router.stats.gated.Load() }
	poll.Until(t, 10*time.Second, "hourglass_router_gated_records at 1", func() bool { return gauge() == 1 },
		func() string { return fmt.Sprintf("gauge %v, stats %+v", gauge(), b.router.Stats()) })
	fault.Remove()
	b.read(t, b.cfg.Target, "gated", 1)
	poll.Until(t, 10*time.Second, "hourglass_router_gated_records back at 0", func() bool { return gauge() == 0 }, nil)
}

// recreateTopic deletes topic and creates it again, with one partition.
func recreateTopic(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := adm.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, topic+" deleted", func() bool { return cluster.TopicInfo(topic) == nil }, nil)
	if resp, err := adm.CreateTopic(ctx, 1, -1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s again: %v %v", topic, err, resp.Err)
	}
}

// TestTargetCreatedAgain: the target topic is deleted and created again
// under the router, which has produced to it. franz-go never adopts the
// new topic's id by itself: its produces fail with UNKNOWN_TOPIC_ID until
// the topic is purged from the client. The deadlines due after the
// re-creation must reach the new topic, not be retried forever.
func TestTargetCreatedAgain(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	recreateTopic(t, b.cl, b.cfg.Target)
	before := b.router.Stats()
	// A new client to produce: ours knows the old id too.
	cl, err := kgo.NewClient(seeds, kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), delayRecord(topic, "after", t0, t0.Add(-time.Second))).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Retries, if any, wait with the clock.
	poll.Until(t, 20*time.Second, "the forward to the target created again", func() bool {
		if s := b.router.Stats(); s.Forwarded > before.Forwarded || s.DeadLettered > before.DeadLettered {
			return true
		}
		b.clock.Advance(time.Second)
		return false
	}, func() string { return fmt.Sprintf("stats %+v", b.router.Stats()) })
	if st := b.router.Stats(); st.DeadLettered != before.DeadLettered {
		t.Errorf("the deadline was dead-lettered (%+v)", st)
	}
	b.read(t, b.cfg.Target, "after", 1)
}

// TestDelayTopicCreatedAgain: a delay topic is deleted and created again
// under the router. Its client would fetch the old topic's id forever and
// never read a deadline produced to the new topic: the router must stop
// with an error naming the topic (a restart reads the new topic), not run
// on, ready, reading nothing.
func TestDelayTopicCreatedAgain(t *testing.T) {
	table, _ := tiers.Parse("30s")
	prefix := "t" + strconv.FormatInt(time.Now().UnixNano(), 36) + "."
	cfg := Config{Tiers: table, Prefix: prefix, Group: prefix + "router"}.WithDefaults()
	cl, err := kgo.NewClient(seeds, kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := tiers.Topic(prefix, 30*time.Second)
	for _, tp := range []string{topic, cfg.Target, cfg.DeadLetter, cfg.Cancellations, cfg.Outcomes} {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: tp, Key: []byte("-"), Headers: []kgo.RecordHeader{{Key: tiers.HeaderDue, Value: tiers.FormatMillis(time.UnixMilli(tiers.MinDueMillis))}}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(cfg, Options{Kafka: []kgo.Opt{seeds}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	poll.Until(t, 10*time.Second, "the seed record forwarded", func() bool { return r.Stats().Forwarded >= 1 }, nil)
	recreateTopic(t, cl, topic)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), topic) {
			t.Errorf("Run returned %v, want an error naming %s", err, topic)
		}
	case <-time.After(30 * time.Second):
		cancel()
		err := <-done
		t.Fatalf("the router ran on for 30s after %s was created again, reading nothing from it (then returned %v)", topic, err)
	}
}

// TestStalledGauge: the target's leader cannot take produces (a retriable
// error, which the client retries by itself without a word): the due
// deadline is held, produced and not acknowledged, and
// hourglass_router_stalled_seconds grows with the time it has waited, so
// that an alert sees a router that forwards nothing; it is 0 again once
// the produce is acknowledged.
func TestStalledGauge(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	stalled := func() float64 { return b.router.stats.stalled(b.clock.Now()) }
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: b.cfg.Target, Err: kerr.NotLeaderForPartition, Count: -1})
	defer fault.Remove()
	b.produceRec(t, delayRecord(tiers.Topic(b.cfg.Prefix, 30*time.Second), "stalled", t0, t0.Add(-time.Second)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fault.Wait(ctx, 1); err != nil {
		t.Fatalf("no produce to the target: %v", err)
	}
	b.clock.Advance(2 * time.Minute)
	if got := stalled(); got < 120 {
		t.Errorf("stalled %vs after two minutes without an acknowledgement; want at least 120", got)
	}
	fault.Remove()
	b.read(t, b.cfg.Target, "stalled", 1)
	poll.Until(t, 10*time.Second, "the stalled gauge back at 0", func() bool { return stalled() == 0 },
		func() string { return fmt.Sprintf("stalled %vs", stalled()) })
}
