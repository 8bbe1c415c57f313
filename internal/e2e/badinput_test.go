package e2e

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestBadInput produces records straight to a delay topic, as a producer in
// another language would, with every way of breaking the contract's due
// header and without a key, between valid records. Each bad record must go
// to the dead-letter topic, unchanged, with the reason; each valid one must
// be closed, the one already due at once, whatever is queued before it.
func TestBadInput(t *testing.T) {
	// A long tier: a record that waited it out did not fire "at once".
	const tier = 10 * time.Second
	p := newPipe(t, "badinput", "200ms,10s", 1)
	store := newStore()
	rt := p.newRouter("router")
	stopRouter := start(t, "router", rt.Run)
	cn := p.newCanceller(store)
	stopCanceller := start(t, "canceller", cn.Run)
	col := p.collectOutcomes()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Produce once the router owns the partition, so that "at once" is
	// measured from the produce.
	if err := p.waitAssigned(ctx, 1); err != nil {
		t.Fatalf("waiting for the router to join: %v", err)
	}

	now := time.Now()
	ms := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	type input struct {
		key    []byte // nil: no key
		due    *string
		reason tiers.Reason // "" for a valid record
	}
	str := func(s string) *string { return &s }
	inputs := []input{
		{key: []byte("valid-before"), due: str(ms(500 * time.Millisecond))},
		{key: []byte("bad-missing"), reason: tiers.ReasonDueMissing},
		{key: []byte("bad-empty"), due: str(""), reason: tiers.ReasonDueEmpty},
		{key: []byte("bad-abc"), due: str("abc"), reason: tiers.ReasonDueNotNumber},
		{key: []byte("bad-negative"), due: str("-5"), reason: tiers.ReasonDueNegative},
		// 9999-12-31T23:59:59.999Z, beyond the default maximum delay.
		{key: []byte("bad-too-far"), due: str("253402300799999"), reason: tiers.ReasonDueTooFar},
		{key: nil, due: str(ms(time.Second)), reason: tiers.ReasonKeyMissing},
		// Seconds, as $(( $(date +%s) + 5 )) writes them: January 1970.
		{key: []byte("bad-seconds"), due: str(strconv.FormatInt(now.Add(5*time.Second).Unix(), 10)), reason: tiers.ReasonDueImplausible},
		{key: []byte("valid-past"), due: str(ms(-time.Minute))},
		{key: []byte("valid-after"), due: str(ms(time.Second))},
	}
	// All in one partition, in this order: the bad records come after a
	// valid record that waits and before the one that is already due.
	prod, err := kgo.NewClient(append(slices.Clone(p.seeds), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var recs []*kgo.Record
	valid := map[string]bool{}
	for i, in := range inputs {
		r := &kgo.Record{
			Topic:     p.delayTopic(tier),
			Partition: 0,
			Key:       in.key,
			Value:     fmt.Appendf(nil, `{"input":%d}`, i),
			Headers:   []kgo.RecordHeader{{Key: "x-trace", Value: fmt.Appendf(nil, "trace-%d", i)}},
			Timestamp: now,
		}
		if in.due != nil {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: tiers.HeaderDue, Value: []byte(*in.due)})
		}
		if in.reason == "" {
			valid[string(in.key)] = true
			store.Put(string(in.key), closer.StateUnpaid)
		}
		recs = append(recs, r)
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Every valid record is closed, the one already due at once; all are
	// due within a second, well before their tier is over.
	wctx, wcancel := context.WithTimeout(ctx, tier*8/10)
	defer wcancel()
	if err := waitFor(wctx, t, func() bool { return col.seen() >= len(valid) }); err != nil {
		t.Fatalf("waiting for the %d valid records' outcomes (have %d): %v; router %+v", len(valid), col.seen(), err, rt.Stats())
	}
	// Stopping the router waits for its produces: the dead letters are
	// all written after this.
	p.settle(ctx, col, stopRouter, stopCanceller)

	// Each bad record is in the dead-letter topic once, unchanged, with its
	// reason (the values are unique, so they name the inputs).
	n, err := p.endOffsets(ctx, p.dlqTopic())
	if err != nil {
		t.Fatalf("end offsets of %s: %v", p.dlqTopic(), err)
	}
	dlq := map[string][]*kgo.Record{}
	for _, r := range readTopic(ctx, t, p, p.dlqTopic(), int(n)) {
		dlq[string(r.Value)] = append(dlq[string(r.Value)], r)
	}
	bad := 0
	for i, in := range inputs {
		src := recs[i]
		got := dlq[string(src.Value)]
		delete(dlq, string(src.Value))
		if in.reason == "" {
			if len(got) > 0 {
				t.Errorf("valid input %d (key %q) is in %s", i, in.key, p.dlqTopic())
			}
			continue
		}
		bad++
		if len(got) != 1 {
			t.Errorf("input %d (key %q, want %s) is in %s %d times, want once", i, in.key, in.reason, p.dlqTopic(), len(got))
			continue
		}
		r := got[0]
		reason, _ := tiers.Header(r.Headers, tiers.HeaderReason)
		if !strings.HasPrefix(string(reason), string(in.reason)+":") {
			t.Errorf("input %d (key %q): %s %q, want it to start with %q", i, in.key, tiers.HeaderReason, reason, in.reason+":")
		}
		if !bytes.Equal(r.Key, src.Key) || (r.Key == nil) != (src.Key == nil) {
			t.Errorf("input %d: dead letter key %q, want %q unchanged", i, r.Key, src.Key)
		}
		for _, h := range src.Headers {
			if v, ok := tiers.Header(r.Headers, h.Key); !ok || !bytes.Equal(v, h.Value) {
				t.Errorf("input %d (key %q): header %s %q, want %q passed through", i, in.key, h.Key, v, h.Value)
			}
		}
		wantSrc := fmt.Sprintf("%s[0]@%d", src.Topic, src.Offset)
		if v, _ := tiers.Header(r.Headers, tiers.HeaderSource); string(v) != wantSrc {
			t.Errorf("input %d (key %q): %s %q, want %q", i, in.key, tiers.HeaderSource, v, wantSrc)
		}
	}
	for v, rs := range dlq {
		t.Errorf("%d unexpected dead letters with value %q", len(rs), v)
	}

	col.mu.Lock()
	for id, evs := range col.events {
		if !valid[id] {
			t.Errorf("outcome for %q, which is not a valid record", id)
			continue
		}
		ev := evs[0]
		if len(evs) != 1 || ev.Outcome != outcome.Closed || store.Closes(id) != 1 {
			t.Errorf("%s: %d outcomes, the first %q, %d closes; want exactly one close", id, len(evs), ev.Outcome, store.Closes(id))
		}
		if ev.ForwardedMs < ev.DueMs || ev.ClosedMs < ev.DueMs {
			t.Errorf("%s early: due %d, forwarded %d, closed %d", id, ev.DueMs, ev.ForwardedMs, ev.ClosedMs)
		}
		for _, at := range store.called(id) {
			if due := time.UnixMilli(ev.DueMs); at.Before(due) {
				t.Errorf("%s: Close called at %s, %v before its due time %s", id, at.Format(time.StampMicro), due.Sub(at), due.Format(time.StampMilli))
			}
		}
		if id == "valid-past" {
			if waited := time.Duration(ev.ForwardedMs-now.UnixMilli()) * time.Millisecond; waited >= tier/2 {
				t.Errorf("valid-past, due a minute ago, was forwarded %v after it was produced: want at once, not after its %v tier", waited, tier)
			}
		}
	}
	for id := range valid {
		if col.events[id] == nil {
			t.Errorf("valid record %q has no outcome", id)
		}
	}
	col.mu.Unlock()
	if st := rt.Stats(); st.DeadLettered != int64(bad) || st.Forwarded != int64(len(valid)) {
		t.Errorf("router stats %+v: want %d dead-lettered and %d forwarded", st, bad, len(valid))
	}
	if st := cn.Stats(); st.DeadLettered != 0 || st.Closed != int64(len(valid)) {
		t.Errorf("canceller stats %+v: want %d closed and none dead-lettered", st, len(valid))
	}
}

// readTopic reads n records of topic from the start, or fewer if ctx ends
// first.
func readTopic(ctx context.Context, t *testing.T, p *pipe, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append(slices.Clone(p.seeds),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(topic string, partition int32, err error) {
			if ctx.Err() == nil {
				t.Logf("fetch %s[%d]: %v", topic, partition, err)
			}
		})
		out = append(out, fs.Records()...)
	}
	return out
}
