package xhourglass

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
	"github.com/hourglass/hourglass/loadtest/manifest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// broker is the address of the kfake broker the package's tests share.
var broker string

const testTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	kfaketest.Main(m, func(c *kfake.Cluster) { broker = c.ListenAddrs()[0] })
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

var prefixSeq atomic.Int64

// newPrefix creates the delay topics of tiers under a topic prefix unique to
// the test, and deletes them when it ends.
func newPrefix(t *testing.T, tierList string) string {
	t.Helper()
	prefix := fmt.Sprintf("test.xh%d.", prefixSeq.Add(1))
	table, err := tiers.Parse(tierList)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	topics := table.Topics(prefix)
	if _, err := adm.CreateTopics(testCtx(t), 2, 1, nil, topics...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if _, err := adm.DeleteTopics(ctx, topics...); err != nil {
			t.Logf("delete the test topics: %v", err)
		}
		cl.Close()
	})
	return prefix
}

// store is an order store on loopback that records payments and refuses
// the orders whose id contains "refuse".
type store struct {
	*httptest.Server
	mu   sync.Mutex
	paid map[string]string // id -> body
}

func newStore(t *testing.T) *store {
	s := &store{paid: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if strings.Contains(id, "refuse") {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.paid[id] = string(b)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// readTopics reads every record of topics from their start until n arrived.
func readTopics(t *testing.T, n int, topics ...string) map[string]*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t)
	got := map[string]*kgo.Record{}
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d records within %v, want %d", len(got), testTimeout, n)
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Key)] = r })
	}
	return got
}

func TestProducer(t *testing.T) {
	prefix := newPrefix(t, "1s,2s")
	st := newStore(t)
	path := filepath.Join(t.TempDir(), "m.jsonl")
	p, err := NewProducer(ProducerConfig{
		Brokers: StringList{broker}, Prefix: prefix, Tiers: "1s,2s", Manifest: path, StoreURL: st.URL,
		RunID: "run-a", Kind: "order-timeout", Outcomes: ptr(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("NewProducer created the manifest (stat: %v); it should wait for the first task", err)
	}
	ctx := testCtx(t)
	past := time.Now().Add(-3 * time.Second).Truncate(time.Millisecond)
	specs := []struct {
		spec       TaskSpec
		wantID     string
		wantQueued bool
		wantTopic  string
	}{
		{TaskSpec{ID: "a", Delay: 500 * time.Millisecond, Shape: "below_smallest"}, "lt-run-a-a", true, prefix + "delay.1s"},
		{TaskSpec{Delay: 2 * time.Second, Kind: "reminder", Paid: true, Shape: "exact_tier"}, "lt-run-a-1", true, prefix + "delay.2s"},
		{TaskSpec{Due: past, Payload: []byte("raw"), Shape: "past_due"}, "lt-run-a-2", true, prefix + "delay.1s"},
		{TaskSpec{ID: "refuse", Delay: time.Second, Paid: true}, "lt-run-a-refuse", false, ""},
	}
	for _, s := range specs {
		id, queued, err := p.Schedule(ctx, s.spec)
		if err != nil || id != s.wantID || queued != s.wantQueued {
			t.Errorf("Schedule(%+v) = %q, %v, %v; want %q, %v, nil", s.spec, id, queued, err, s.wantID, s.wantQueued)
		}
	}
	if _, _, err := p.Schedule(ctx, TaskSpec{ID: "k", Delay: time.Second, Kind: strings.Repeat("k", 200)}); err == nil {
		t.Error("Schedule with a 200-character kind succeeded")
	}

	stats, err := p.Close(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{RunID: "run-a", IDPrefix: "lt-run-a-", Manifest: path, Scheduled: 3, Produced: 3, PayErrors: 1}
	if first := stats.FirstError; !strings.Contains(first, "pay lt-run-a-refuse") || !strings.Contains(first, "500") {
		t.Errorf("first error %q, want the failed payment", first)
	}
	stats.FirstError = ""
	if stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	if _, _, err := p.Schedule(ctx, TaskSpec{Delay: time.Second}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Schedule after Close: %v, want a closed error", err)
	}
	if again, err := p.Close(ctx, nil); err != nil || again.Produced != 3 {
		t.Errorf("second Close = %+v, %v; want the same totals", again, err)
	}

	// The manifest lists the three produced tasks.
	m, err := manifest.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if h := m.Header; h.RunID != "run-a" || h.IDPrefix != "lt-run-a-" || h.Prefix != prefix || h.Tiers != "1s,2s" {
		t.Errorf("header %+v", h)
	}
	entries := map[string]manifest.Entry{}
	for _, e := range m.Entries {
		entries[e.ID] = e
	}
	if len(entries) != 3 || !entries["lt-run-a-1"].Paid || entries["lt-run-a-a"].Paid ||
		entries["lt-run-a-2"].DueMs != past.UnixMilli() || entries["lt-run-a-2"].Shape != "past_due" {
		t.Errorf("manifest entries %+v", m.Entries)
	}

	// Each record is in its tier's topic with the contract headers.
	recs := readTopics(t, 3, prefix+"delay.1s", prefix+"delay.2s")
	for _, s := range specs[:3] {
		r := recs[s.wantID]
		if r == nil {
			t.Errorf("no record for %s", s.wantID)
			continue
		}
		meta, err := tiers.DecodeRecord(r)
		if err != nil {
			t.Errorf("record %s: %v", s.wantID, err)
			continue
		}
		e := entries[s.wantID]
		wantKind := "order-timeout"
		if s.spec.Kind != "" {
			wantKind = s.spec.Kind
		}
		if r.Topic != s.wantTopic || meta.Due.UnixMilli() != e.DueMs || meta.Kind != wantKind || r.Timestamp.UnixMilli() != e.ScheduledMs {
			t.Errorf("record %s: topic %s, due %d, kind %q, timestamp %d; want %s, %d, %q, %d",
				s.wantID, r.Topic, meta.Due.UnixMilli(), meta.Kind, r.Timestamp.UnixMilli(), s.wantTopic, e.DueMs, wantKind, e.ScheduledMs)
		}
	}
	if v := string(recs["lt-run-a-a"].Value); v != `{"order":"lt-run-a-a"}` {
		t.Errorf("default payload %s", v)
	}
	if v := string(recs["lt-run-a-2"].Value); v != "raw" {
		t.Errorf("payload %q, want raw", v)
	}

	// Only the paid order was paid, before it was produced.
	st.mu.Lock()
	if len(st.paid) != 1 || st.paid["lt-run-a-1"] != "paid" {
		t.Errorf("store payments %v, want lt-run-a-1: paid", st.paid)
	}
	st.mu.Unlock()

	// The deltas add up to the totals, and the first error is told once.
	d := p.TakeDelta()
	if d.Produced != 3 || d.Errors != 0 || d.PayErrors != 1 || len(d.Latencies) != 3 || d.NewError == "" {
		t.Errorf("first delta %+v", d)
	}
	if d := p.TakeDelta(); d.Produced != 0 || d.PayErrors != 0 || len(d.Latencies) != 0 || d.NewError != "" {
		t.Errorf("second delta %+v, want nothing new", d)
	}
}

// TestProducerBroken: with the broker unreachable, tasks beyond MaxInFlight
// wait for room until their context ends, and the one in flight fails
// after the delivery timeout; nothing reaches the manifest.
func TestProducerBroken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	p, err := NewProducer(ProducerConfig{
		Brokers: StringList{"127.0.0.1:1"}, Tiers: "1s", Manifest: path, RunID: "run-b",
		MaxInFlight: 1, DeliveryTimeout: Duration(time.Second), Outcomes: ptr(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if _, queued, err := p.Schedule(ctx, TaskSpec{Delay: time.Second}); err != nil || !queued {
		t.Fatalf("first Schedule: %v, %v", queued, err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, _, err := p.Schedule(short, TaskSpec{Delay: time.Second}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Schedule with no room: %v, want the context's deadline", err)
	}
	start := time.Now()
	stats, err := p.Close(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Errors != 1 || stats.Produced != 0 || stats.InFlight != 0 || stats.FirstError == "" {
		t.Errorf("stats %+v, want 1 error and nothing produced", stats)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %v: the delivery timeout (1s) should bound it", d)
	}
	m, err := manifest.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Entries) != 0 {
		t.Errorf("manifest has %d entries, want none", len(m.Entries))
	}
}

func TestProducerRefuses(t *testing.T) {
	dir := t.TempDir()
	p, err := NewProducer(ProducerConfig{Brokers: StringList{broker}, Tiers: "1s", Manifest: filepath.Join(dir, "m.jsonl"), RunID: "run-c", Outcomes: ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Schedule(testCtx(t), TaskSpec{Delay: time.Second, Paid: true}); err == nil || !strings.Contains(err.Error(), "storeUrl") {
		t.Errorf("paid task without a store: %v, want an error naming storeUrl", err)
	}
	if _, err := p.Close(testCtx(t), nil); err != nil {
		t.Fatal(err)
	}

	// A producer that never scheduled closes without a manifest.
	q, err := NewProducer(ProducerConfig{Brokers: StringList{broker}, Tiers: "1s", Manifest: filepath.Join(dir, "never.jsonl"), RunID: "run-c", Outcomes: ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Close(testCtx(t), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "never.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an unused producer left a manifest (stat: %v)", err)
	}

	if _, err := NewProducer(ProducerConfig{Tiers: "x", MaxInFlight: -1}); err == nil ||
		!strings.Contains(err.Error(), "tiers:") || !strings.Contains(err.Error(), "maxInFlight:") {
		t.Errorf("NewProducer with a bad config: %v, want every problem", err)
	}
	bad, err := NewProducer(ProducerConfig{Manifest: filepath.Join(dir, "no", "dir", "m.jsonl"), Brokers: StringList{broker}, Tiers: "1s", Outcomes: ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the start's error stays
		if _, _, err := bad.Schedule(testCtx(t), TaskSpec{Delay: time.Second}); err == nil || !strings.Contains(err.Error(), "manifest") {
			t.Errorf("Schedule with a manifest in a missing directory: %v, want a manifest error", err)
		}
	}
	if _, err := bad.Close(testCtx(t), nil); err != nil {
		t.Errorf("Close after a failed start: %v", err)
	}
}
