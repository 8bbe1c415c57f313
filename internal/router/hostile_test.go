package router

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/hostile"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// produceRec produces r as it is.
func (b *bundle) produceRec(t *testing.T, r *kgo.Record) {
	t.Helper()
	if err := b.cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// delayRecord is a delay record of topic with key, due at due and the extra
// headers.
func delayRecord(topic, key string, ts, due time.Time, hs ...kgo.RecordHeader) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: []byte(key), Timestamp: ts,
		Headers: append([]kgo.RecordHeader{{Key: tiers.HeaderDue, Value: tiers.FormatMillis(due)}}, hs...)}
}

func header(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }

// reason returns the dead-letter reason code of a dead letter.
func reason(r *kgo.Record) string {
	v, _ := tiers.Header(r.Headers, tiers.HeaderReason)
	code, _, _ := strings.Cut(string(v), ":")
	return code
}

// committed returns the router group's committed offset of topic's
// partition 0, or -1.
func (b *bundle) committed(t *testing.T, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(b.cl).FetchOffsets(ctx, b.cfg.Group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok {
		return -1
	}
	return o.At
}

// waitCommitted advances the clock by commit intervals until the router has
// committed want for topic, failing if it commits more.
func (b *bundle) waitCommitted(t *testing.T, topic string, want int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		got := b.committed(t, topic)
		if got > want {
			t.Fatalf("committed %d, past %d", got, want)
		}
		if got == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("committed %d, want %d; stats %+v", got, want, b.router.Stats())
		case <-tick.C:
			b.clock.Advance(b.cfg.CommitInterval)
		}
	}
}

// TestClockSkew: a record stamped a day ahead of the router's clock waits out
// its tier from now, not from its timestamp: it hops after the tier, and so
// neither holds its partition's commit nor the records behind it for a day.
func TestClockSkew(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	b.produce(t, topic, "ahead", t0.Add(24*time.Hour), t0.Add(48*time.Hour))
	b.waitArmed(t, t0.Add(30*time.Second))
	before := b.router.Stats()
	b.clock.Advance(30 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Hopped == before.Hopped+1 })
}

// TestTargets: a record may only name a target that matches
// AllowedTargets and is not a delay, dead-letter, outcomes or cancellations
// topic; any
// other goes to the dead-letter topic as target_invalid, never to the topic
// it names.
func TestTargets(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	_ = b.stop() // its error is checked at cleanup
	cfg := b.cfg
	allowed := cfg.Prefix + "orders.close"
	// "*" would allow every topic but the forbidden ones: delay, dead-letter
	// and outcomes topics are never targets, whatever the patterns say.
	cfg.AllowedTargets = []string{cfg.Target, cfg.Prefix + "orders.*", "*.delay.*", cfg.DeadLetter, cfg.Outcomes, cfg.Cancellations}
	b = restart(t, b, cfg)
	b.produceRec(t, &kgo.Record{Topic: allowed, Key: []byte("-")}) // creates it
	t0 := b.clock.Now()
	topic := tiers.Topic(cfg.Prefix, 30*time.Second)
	past := t0.Add(-time.Second)
	bad := map[string]string{
		"delay":         topic,
		"other-delay":   cfg.Prefix + "delay.7m",
		"dlq":           cfg.DeadLetter,
		"outcomes":      cfg.Outcomes,
		"cancellations": cfg.Cancellations,
		"foreign":       "payments.commands",
		"empty":         "",
		"not-a-topic":   "a/b",
		"near-allowed":  cfg.Prefix + "orders",
	}
	for key, target := range bad {
		b.produceRec(t, delayRecord(topic, key, t0, past, header(tiers.HeaderTarget, target)))
	}
	b.produceRec(t, delayRecord(topic, "allowed", t0, past, header(tiers.HeaderTarget, allowed)))
	b.produceRec(t, delayRecord(topic, "default", t0, past))
	for key, target := range bad {
		dl := b.read(t, cfg.DeadLetter, key, 1)[0]
		if got := reason(dl); got != string(tiers.ReasonTargetInvalid) {
			t.Errorf("%s (target %q): dead letter reason %q, want %s", key, target, got, tiers.ReasonTargetInvalid)
		}
	}
	b.read(t, allowed, "allowed", 1)
	b.read(t, cfg.Target, "default", 1)
	// The outcomes and cancellations topics hold only the record setup
	// created them with.
	for topic, want := range map[string]int64{"payments.commands": 0, cfg.Outcomes: 1, cfg.Cancellations: 1} {
		if n := count(t, b, topic); n != want {
			t.Errorf("%d records reached %s", n-want, topic)
		}
	}
}

// count returns how many records topic holds (0 if it does not exist).
func count(t *testing.T, b *bundle, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(b.cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// restart starts a router of cfg on b's clock and topics after b's router
// has stopped.
func restart(t *testing.T, b *bundle, cfg Config) *bundle {
	t.Helper()
	return start(t, cfg, b.clock, b.cl)
}

// TestOwnedHeadersDropped: headers only Hourglass writes are dropped from
// what the router forwards or dead-letters: a forged dead-letter source
// cannot steer a replay, a forged forward time cannot rewrite a report.
func TestOwnedHeadersDropped(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	forged := []kgo.RecordHeader{
		header(tiers.HeaderSource, "payments.commands[0]@5"),
		header(tiers.HeaderReason, "close_failed: forged"),
		header(tiers.HeaderDeadAt, "1"),
		header(tiers.HeaderTruncated, "value 1"),
		header("hourglass-dlq-anything", "x"),
		header(tiers.HeaderForwarded, "1"),
		header("trace", "kept"),
	}
	b.produceRec(t, delayRecord(topic, "forward", t0, t0.Add(-time.Second), forged...))
	invalid := delayRecord(topic, "dead", t0, t0, forged...)
	invalid.Headers = append(invalid.Headers, header(tiers.HeaderVersion, "2"))
	b.produceRec(t, invalid)

	out := b.read(t, b.cfg.Target, "forward", 1)[0]
	dl := b.read(t, b.cfg.DeadLetter, "dead", 1)[0]
	for name, r := range map[string]*kgo.Record{"forwarded": out, "dead letter": dl} {
		for _, h := range r.Headers {
			if strings.HasPrefix(h.Key, "hourglass-dlq-") && (string(h.Value) == "payments.commands[0]@5" || strings.Contains(string(h.Value), "forged") ||
				h.Key == tiers.HeaderTruncated || h.Key == "hourglass-dlq-anything" || h.Key == tiers.HeaderDeadAt && string(h.Value) == "1") {
				t.Errorf("%s carries the forged %s: %q", name, h.Key, h.Value)
			}
		}
		if v, _ := tiers.Header(r.Headers, "trace"); string(v) != "kept" {
			t.Errorf("%s lost a header of the producer's", name)
		}
	}
	if v, _ := tiers.Header(out.Headers, tiers.HeaderForwarded); !bytes.Equal(v, tiers.FormatMillis(t0)) {
		t.Errorf("forwarded at %q, want the router's %d", v, t0.UnixMilli())
	}
	if v, _ := tiers.Header(dl.Headers, tiers.HeaderSource); !strings.HasPrefix(string(v), topic+"[0]@") {
		t.Errorf("dead letter source %q, want %s[0]@...", v, topic)
	}
}

// TestSizeLimits: records over the size limits go to the dead-letter topic
// with the reason, and the records after them are forwarded.
func TestSizeLimits(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	past := t0.Add(-time.Second)
	many := make([]kgo.RecordHeader, tiers.DefaultMaxHeaders+1)
	for i := range many {
		many[i] = header("h"+strconv.Itoa(i), "")
	}
	cases := map[string]*kgo.Record{
		"key":     delayRecord(topic, strings.Repeat("<", 180_000), t0, past),
		"value":   delayRecord(topic, "value", t0, past),
		"headers": delayRecord(topic, "headers", t0, past, many...),
		"bytes":   delayRecord(topic, "bytes", t0, past, header("big", strings.Repeat("h", tiers.DefaultMaxHeaderBytes))),
	}
	cases["value"].Value = bytes.Repeat([]byte("v"), tiers.DefaultMaxValueBytes+1)
	want := map[string]tiers.Reason{"key": tiers.ReasonKeyTooLarge, "value": tiers.ReasonValueTooLarge,
		"headers": tiers.ReasonHeadersTooLarge, "bytes": tiers.ReasonHeadersTooLarge}
	for _, r := range cases {
		b.produceRec(t, r)
	}
	b.produceRec(t, delayRecord(topic, "after", t0, past))
	b.read(t, b.cfg.Target, "after", 1)
	for name, r := range cases {
		dl := b.read(t, b.cfg.DeadLetter, string(r.Key), 1)[0]
		if got := reason(dl); got != string(want[name]) {
			t.Errorf("%s: reason %q, want %s", name, got, want[name])
		}
		if !bytes.Equal(dl.Value, r.Value) {
			t.Errorf("%s: value cut (%d of %d bytes) though the dead letter fits", name, len(dl.Value), len(r.Value))
		}
	}
}

// TestNearLimitRecords: a value a little under the broker's limit is
// dead-lettered with its value cut to fit (before the fix its forward and
// its dead letter were refused as too large, which stopped the router); a
// forward the target refuses as too large is dead-lettered whole; a dead
// letter the dead-letter topic refuses as too large goes in its minimal
// form. The router keeps forwarding meanwhile.
func TestNearLimitRecords(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	_ = b.stop() // its error is checked at cleanup
	cfg := b.cfg
	cfg.Target, cfg.DeadLetter = cfg.Prefix+"small.cancel", cfg.Prefix+"small.dlq"
	cfg.AllowedTargets = nil
	createTopic(t, b.cl, cfg.Target, map[string]string{"max.message.bytes": "4000"})
	createTopic(t, b.cl, cfg.DeadLetter, map[string]string{"max.message.bytes": "20000"})
	b = restart(t, b, cfg)
	t0 := b.clock.Now()
	topic := tiers.Topic(cfg.Prefix, 30*time.Second)
	past := t0.Add(-time.Second)

	huge := delayRecord(topic, "huge", t0, past)
	huge.Value = bytes.Repeat([]byte("v"), 999_000)
	b.produceRec(t, huge)
	mid := delayRecord(topic, "mid", t0, past)          // too large for the target, fits the dead-letter topic
	mid.Value = make([]byte, 10_000)                    // incompressible: the limit is on the compressed batch
	_, _ = rand.NewChaCha8([32]byte{1}).Read(mid.Value) // ChaCha8's Read never fails
	b.produceRec(t, mid)
	b.produceRec(t, delayRecord(topic, "after", t0, past))
	b.read(t, cfg.Target, "after", 1)

	dl := b.read(t, cfg.DeadLetter, "huge", 1)[0]
	if got := reason(dl); got != string(tiers.ReasonValueTooLarge) {
		t.Errorf("huge: reason %q", got)
	}
	if cut, _ := tiers.Header(dl.Headers, tiers.HeaderTruncated); string(cut) != "value 999000" || len(dl.Value) != 0 {
		t.Errorf("huge: %s %q and %d bytes of value; want the minimal dead letter (value 999000, no value) for a 20,000-byte topic",
			tiers.HeaderTruncated, cut, len(dl.Value))
	}
	dl = b.read(t, cfg.DeadLetter, "mid", 1)[0]
	if got := reason(dl); got != string(reasonProduceFailed) || !bytes.Equal(dl.Value, mid.Value) {
		t.Errorf("mid: reason %q, %d bytes of value; want %s with the whole value", got, len(dl.Value), reasonProduceFailed)
	}
	if s := b.router.Stats(); s.DeadLettered != 2 || s.DeadLetterRetries != 1 {
		t.Errorf("stats %+v: want 2 dead letters (huge, and mid refused at the target), 1 sent again minimal (huge's)", s)
	}
}

func createTopic(t *testing.T, cl *kgo.Client, topic string, configs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cs := make(map[string]*string)
	for k, v := range configs {
		cs[k] = &v
	}
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, cs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeadLetterRefused: a dead-letter topic that refuses every record
// stops nothing: the refused dead letter is tried again with backoff, the
// records after it are forwarded, the commit stays below it, and once the
// topic accepts it the dead letter lands and the commit moves on. A stop
// meanwhile hands off only what the final commit covers.
func TestDeadLetterRefused(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: b.cfg.DeadLetter, Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer fault.Remove()
	stuck := b.committed(t, topic) // the seed is committed; the next record is the stuck one
	if stuck < 0 {
		b.waitCommitted(t, topic, 1)
		stuck = 1
	}
	b.produceRec(t, &kgo.Record{Topic: topic, Key: []byte("bad"), Timestamp: t0}) // no due time
	b.produceRec(t, delayRecord(topic, "after", t0, t0.Add(-time.Second)))
	b.read(t, b.cfg.Target, "after", 1)
	// Tries come with the clock's backoff, never a stop.
	for i := range 4 {
		b.waitStats(t, func(s Stats) bool { return s.DeadLetterRetries == int64(i+1) && b.router.wakeAt.Load() != 0 })
		b.clock.Advance(kafka.RefusedBackoffMax)
	}
	b.waitCommitted(t, topic, stuck)

	b.waitStats(t, func(s Stats) bool { return s.DeadLetterRetries == 5 && b.router.wakeAt.Load() != 0 })
	fault.Remove()
	b.clock.Advance(kafka.RefusedBackoffMax)
	b.read(t, b.cfg.DeadLetter, "bad", 1)
	b.waitCommitted(t, topic, stuck+2)
	if err := b.stop(); err != nil {
		t.Fatalf("router: %v", err)
	}
}

// TestStopBehindStuckRecord: at a stop, a record whose dead letter cannot be
// produced stays uncommitted, and the records held after it are not handed
// off (the next owner reads them again; handing them off too would fire them
// twice).
func TestStopBehindStuckRecord(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: b.cfg.DeadLetter, Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer fault.Remove()
	b.waitCommitted(t, topic, 1)
	b.produce(t, topic, "held-before", t0, t0.Add(time.Hour))                     // offset 1
	b.produceRec(t, &kgo.Record{Topic: topic, Key: []byte("bad"), Timestamp: t0}) // offset 2: stuck
	b.produce(t, topic, "held-after", t0, t0.Add(time.Hour))                      // offset 3
	b.waitStats(t, func(s Stats) bool { return s.DeadLetterRetries == 1 && s.Held == 2 })
	if err := b.stop(); err != nil {
		t.Fatalf("router: %v", err)
	}
	if got := b.committed(t, topic); got != 2 {
		t.Errorf("committed %d after the stop, want 2 (the stuck record)", got)
	}
	hops := b.readAll(t, topic)
	var handed []string
	for _, r := range hops {
		if r.Offset > 3 {
			handed = append(handed, string(r.Key))
		}
	}
	if strings.Join(handed, ",") != "held-before" {
		t.Errorf("handed off %q, want only held-before", handed)
	}
}

// readAll returns every record of topic's partition 0 up to its end.
func (b *bundle) readAll(t *testing.T, topic string) []*kgo.Record {
	t.Helper()
	end := count(t, b, topic)
	cl, err := kgo.NewClient(seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for int64(len(out)) < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d of %d records", topic, len(out), end)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// TestFailingTarget: a target that keeps failing with a retriable error
// holds only its own records: the others are forwarded, the loop answers a
// revoke within RevokeTimeout, and the router stops within its shutdown
// timeout.
func TestFailingTarget(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	_ = b.stop() // its error is checked at cleanup
	cfg := b.cfg
	failing := cfg.Prefix + "orders.failing"
	cfg.AllowedTargets = []string{cfg.Target, failing}
	cfg.MaxInFlightPerTarget = 2
	cfg.RevokeTimeout, cfg.ShutdownTimeout = time.Second, time.Second
	b = restart(t, b, cfg)
	b.produceRec(t, &kgo.Record{Topic: failing, Key: []byte("-")})
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: failing, Err: kerr.NotLeaderForPartition, Count: -1})
	defer fault.Remove()
	t0 := b.clock.Now()
	topic := tiers.Topic(cfg.Prefix, 30*time.Second)
	past := t0.Add(-time.Second)
	before := b.router.Stats()
	for i := range 20 {
		b.produceRec(t, delayRecord(topic, "f"+strconv.Itoa(i), t0, past, header(tiers.HeaderTarget, failing)))
		b.produceRec(t, delayRecord(topic, "ok"+strconv.Itoa(i), t0, past))
	}
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+20 })
	if q := b.router.stats.queued.Load(); q != 18 {
		t.Errorf("%d produces waiting, want 18 (20 to the failing target, 2 in flight)", q)
	}
	start := time.Now()
	b.router.member.Revoked(map[string][]int32{topic: {0}})
	if took := time.Since(start); took > 3*cfg.RevokeTimeout {
		t.Errorf("revoke took %v with a failing target, want about %v", took, cfg.RevokeTimeout)
	}
	start = time.Now()
	if err := b.stop(); err != nil {
		t.Fatalf("router: %v", err)
	}
	if took := time.Since(start); took > 3*cfg.ShutdownTimeout+5*time.Second {
		t.Errorf("stop took %v", took)
	}
}

// TestBufferFull: with the client's produce buffer smaller than a burst,
// produces that do not fit wait in the router instead of blocking its loop,
// and all go out.
func TestBufferFull(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setupOpts(t, Config{Tiers: table}, kgo.MaxBufferedRecords(3))
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	before := b.router.Stats()
	var rs []*kgo.Record
	for i := range 200 {
		rs = append(rs, delayRecord(topic, "k"+strconv.Itoa(i), t0, t0.Add(-time.Second)))
	}
	if err := b.cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+200 })
}

// TestPauseClearedOnRevoke: a partition paused because it holds its limit
// is resumed when it is revoked: a pause survives a revoke in the client,
// and the partition, assigned here again later, would never be fetched.
func TestPauseClearedOnRevoke(t *testing.T) {
	table, _ := tiers.Parse("10s,30s")
	b := setup(t, Config{Tiers: table, MaxHeldPerPartition: 2})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	for i := range 3 { // each hops to the 10s tier when handed off
		b.produce(t, topic, "k"+strconv.Itoa(i), t0, t0.Add(20*time.Second))
	}
	b.waitStats(t, func(s Stats) bool { return s.Paused == 1 })
	// The router counts the pause before it asks the client for it.
	poll.Until(t, 10*time.Second, "the client's pause of "+topic, func() bool {
		return len(b.router.cl.PauseFetchPartitions(nil)[topic]) == 1
	}, func() string { return fmt.Sprint(b.router.cl.PauseFetchPartitions(nil)) })
	held := b.router.Stats().Held
	b.router.member.Revoked(map[string][]int32{topic: {0}})
	// (The 10s tier may be paused in its turn by the records handed off.)
	if paused := b.router.cl.PauseFetchPartitions(nil); len(paused[topic]) != 0 {
		t.Errorf("client still pauses %v after the revoke", paused)
	}
	if s := b.router.Stats(); s.HandedOff != held {
		t.Errorf("after the revoke: %+v; want the %d held records handed off", s, held)
	}
}

// TestCommitNeverPassesHeld: the committed offset stops at the oldest record
// still held, however many records after it were forwarded and however
// often the router commits, and moves past it once it hops.
func TestCommitNeverPassesHeld(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	b.waitCommitted(t, topic, 1)
	b.produce(t, topic, "held", t0, t0.Add(time.Hour)) // offset 1
	before := b.router.Stats()
	for i := range 5 {
		b.produce(t, topic, "due"+strconv.Itoa(i), t0, t0.Add(-time.Second))
	}
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+5 })
	for range 10 {
		b.clock.Advance(b.cfg.CommitInterval)
		if got := b.committed(t, topic); got != 1 {
			t.Fatalf("committed %d while offset 1 is held", got)
		}
	}
	b.waitArmed(t, t0.Add(30*time.Second))
	b.clock.Advance(30 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Hopped == before.Hopped+1 })
	b.waitCommitted(t, topic, 7)
}

// TestResetToEarlierOffset: the partition moved back to an earlier offset
// (as after a log truncation): the router takes the records again, forgets
// what it tracked from there up, and goes on (it panicked before).
func TestResetToEarlierOffset(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	before := b.router.Stats()
	b.produce(t, topic, "held", t0, t0.Add(time.Hour)) // offset 1, held
	for i := range 3 {
		b.produce(t, topic, "due"+strconv.Itoa(i), t0, t0.Add(-time.Second))
	}
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+3 })
	b.router.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: 2}}})
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+6 })
	b.waitArmed(t, t0.Add(30*time.Second))
	b.clock.Advance(30 * time.Second)
	b.waitStats(t, func(s Stats) bool { return s.Hopped == before.Hopped+1 })
	// The hop's copy (offset 5) is held in its turn.
	b.waitCommitted(t, topic, 5)
}

// TestBatchTooLarge: a record batch that would decompress past the cap (a
// 35 kB zstd batch of 256 MiB) is skipped and dead-lettered with its offsets,
// and the records after it are forwarded: the partition does not stop.
func TestBatchTooLarge(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hostile.ZstdBomb(ctx, b.cl, topic, 0, []byte("bomb"), 256, 1<<20); err != nil {
		t.Fatal(err)
	}
	b.produce(t, topic, "after", t0, t0.Add(-time.Second))
	b.read(t, b.cfg.Target, "after", 1)
	dl := b.read(t, b.cfg.DeadLetter, "", 1)[0] // the batch's dead letter has no key
	if got := reason(dl); got != string(tiers.ReasonBatchTooLarge) {
		t.Fatalf("dead letter reason %q, want %s", got, tiers.ReasonBatchTooLarge)
	}
	if v, _ := tiers.Header(dl.Headers, tiers.HeaderReason); !strings.Contains(string(v), "offsets 1 to 256") {
		t.Errorf("reason %q does not name the batch's offsets 1 to 256", v)
	}
	b.waitCommitted(t, topic, 258)
	if n := testutil.ToFloat64(b.router.metrics.deadLetters.WithLabelValues(string(tiers.ReasonBatchTooLarge))); n != 1 {
		t.Errorf("dead letters counted as %s: %v, want 1", tiers.ReasonBatchTooLarge, n)
	}
}

// TestRevokeDuringStop: a revoke that arrives while the router stops (its
// handed-off records still being produced) is answered once they are
// acknowledged, and commits them before it returns: the next owner must not
// read again what this router handed off. Before, such a revoke returned
// without committing.
func TestRevokeDuringStop(t *testing.T) {
	table, _ := tiers.Parse("10s,30s")
	// Retried produces take kgo a few seconds (a metadata refresh): give
	// the revoke time for them.
	b := setup(t, Config{Tiers: table, RevokeTimeout: 30 * time.Second})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	b.waitCommitted(t, topic, 1)
	for i := range 3 { // each hops to the 10s tier when handed off
		b.produce(t, topic, "k"+strconv.Itoa(i), t0, t0.Add(20*time.Second))
	}
	b.waitStats(t, func(s Stats) bool { return s.Held == 3 })
	// The hand-off's produces are refused for a while, so the stop waits.
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: tiers.Topic(b.cfg.Prefix, 10*time.Second),
		Err: kerr.NotEnoughReplicas, Count: 1})
	defer fault.Remove()
	stopped := make(chan error, 1)
	go func() { stopped <- b.stop() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fault.Wait(ctx, 1); err != nil {
		t.Fatalf("the hand-off was not produced: %v", err)
	}
	b.router.member.Revoked(map[string][]int32{topic: {0}})
	if got := b.committed(t, topic); got != 4 {
		t.Errorf("committed %d when the revoke returned, want 4 (everything handed off)", got)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("router: %v", err)
	}
}

// TestLostPartitionForgetsHeld: a lost partition's held records are
// dropped and no longer counted (held, timer, bytes), so the timer's room
// comes back.
func TestLostPartitionForgetsHeld(t *testing.T) {
	table, _ := tiers.Parse("10s,30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	b.produce(t, topic, "waiting", t0, t0.Add(time.Hour))
	b.produce(t, topic, "timer", t0, t0.Add(5*time.Second))
	b.waitStats(t, func(s Stats) bool { return s.Held == 2 })
	b.router.member.Lost(map[string][]int32{topic: {0}})
	if s := b.router.Stats(); s.Held != 0 || s.HeldBytes != 0 || b.router.stats.timer.Load() != 0 {
		t.Errorf("after the loss: %+v, timer %d; want nothing held", s, b.router.stats.timer.Load())
	}
}

// TestTimestampBefore1970: a record stamped before 1970 (Kafka's "no
// timestamp", -1, or a producer clock set to it) hops like any other: the
// hop writes a hourglass-scheduled header that the next tier reads back,
// not one it dead-letters as header_invalid.
func TestTimestampBefore1970(t *testing.T) {
	table, _ := tiers.Parse("30s,2m")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	for _, ts := range []int64{-1, -86_400_000} {
		key := "stamped" + strconv.FormatInt(ts, 10)
		before := b.router.Stats()
		b.produce(t, tiers.Topic(b.cfg.Prefix, 2*time.Minute), key, time.UnixMilli(ts), t0.Add(3*time.Minute))
		// Its tier wait, measured from its timestamp, is long over: it hops
		// at once into the 2m tier and waits there.
		b.waitStats(t, func(s Stats) bool { return s.Hopped == before.Hopped+1 })
		hop := b.read(t, tiers.Topic(b.cfg.Prefix, 2*time.Minute), key, 2)[1]
		if v, _ := tiers.Header(hop.Headers, tiers.HeaderScheduled); len(v) == 0 || v[0] == '-' {
			t.Errorf("%s: the hop carries %s %q", key, tiers.HeaderScheduled, v)
		}
		b.waitArmed(t, t0.Add(2*time.Minute))
		if s := b.router.Stats(); s.DeadLettered != before.DeadLettered {
			t.Fatalf("%s: dead-lettered after its hop; stats %+v", key, s)
		}
	}
}

// TestHopsAtTheLimit: a record whose hourglass-hops is the largest the
// contract reads (1,000,000) is valid; its hop must not write a count the
// next tier dead-letters as header_invalid.
func TestHopsAtTheLimit(t *testing.T) {
	table, _ := tiers.Parse("30s,2m")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	before := b.router.Stats()
	b.produceRec(t, delayRecord(topic, "many-hops", t0, t0.Add(3*time.Minute), header(tiers.HeaderHops, "1000000")))
	b.waitArmed(t, t0.Add(30*time.Second))
	b.clock.Advance(30 * time.Second) // 2m30s left: a hop to the 2m tier
	b.waitStats(t, func(s Stats) bool { return s.Hopped == before.Hopped+1 })
	hop := b.read(t, tiers.Topic(b.cfg.Prefix, 2*time.Minute), "many-hops", 1)[0]
	if _, err := tiers.DecodeRecord(hop); err != nil {
		t.Errorf("the hop does not decode: %v", err)
	}
	b.waitArmed(t, t0.Add(30*time.Second+2*time.Minute))
	if s := b.router.Stats(); s.DeadLettered != before.DeadLettered {
		t.Fatalf("dead-lettered after its hop; stats %+v", s)
	}
}

// TestHugeContractHeader: a record whose one contract header is huge (an
// hourglass-path of 1,040,000 bytes, which a producer with the broker's
// limit sends; it counts in no header limit, since the contract bounds its
// headers' values one by one) is dead-lettered as header_invalid, its dead
// letter cut to fit, and its partition's commit passes it. Before, every
// form of its dead letter kept the header and was refused as too large, and
// tried again forever.
func TestHugeContractHeader(t *testing.T) {
	table, _ := tiers.Parse("30s")
	b := setup(t, Config{Tiers: table})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	b.waitCommitted(t, topic, 1)
	big, err := kgo.NewClient(seeds, kgo.ProducerBatchMaxBytes(1_048_000), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	rec := delayRecord(topic, "huge-path", t0, t0.Add(-time.Second), header(tiers.HeaderPath, strings.Repeat("p", 1_040_000)))
	if err := big.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.produce(t, topic, "after", t0, t0.Add(-time.Second))
	b.read(t, b.cfg.Target, "after", 1)
	poll.Until(t, 10*time.Second, "the huge record's dead letter given up on or committed", func() bool {
		if b.router.Stats().DeadLetterRetries >= 3 || b.committed(t, topic) >= 3 {
			return true
		}
		b.clock.Advance(kafka.RefusedBackoffMax)
		return false
	}, nil)
	if s := b.router.Stats(); s.DeadLetterRetries >= 3 {
		t.Fatalf("the dead letter is refused again and again; stats %+v", s)
	}
	dl := b.read(t, b.cfg.DeadLetter, "huge-path", 1)[0]
	if got := reason(dl); got != string(tiers.ReasonHeaderInvalid) {
		t.Errorf("dead letter reason %q, want %s", got, tiers.ReasonHeaderInvalid)
	}
	if v, ok := tiers.Header(dl.Headers, tiers.HeaderTruncated); !ok || !strings.Contains(string(v), "headers") {
		t.Errorf("%s %q, want the headers cut", tiers.HeaderTruncated, v)
	}
	b.waitCommitted(t, topic, 3)
}
