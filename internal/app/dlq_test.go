package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/app"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestDLQ lists and replays dead letters: one the canceller gave up on
// (replayable) and one that breaks the record contract (skipped).
func TestDLQ(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "d.dlq", "d.cancel"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	broker := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	due := tiers.FormatMillis(time.Now().Add(-time.Minute))
	h := func(k string, v []byte) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: v} }
	// Dead-lettered two hours ago (the record time --since goes by).
	gaveUp := &kgo.Record{Topic: "d.dlq", Key: []byte("42"), Value: []byte(`{"order":42}`), Timestamp: time.Now().Add(-2 * time.Hour), Headers: []kgo.RecordHeader{
		h(tiers.HeaderDue, due), h(tiers.HeaderKind, []byte("order-timeout")), h(tiers.HeaderAttempt, []byte("10")),
		h(tiers.HeaderDeadline, due), h("x-trace", []byte("t42")),
		h(tiers.HeaderReason, []byte("retries_exhausted: attempt 10 of 10: connection refused")),
		h(tiers.HeaderSource, []byte("d.cancel[0]@17")), h(tiers.HeaderDeadAt, tiers.FormatMillis(time.Now())),
	}}
	malformed := &kgo.Record{Topic: "d.dlq", Key: []byte("43"), Headers: []kgo.RecordHeader{
		h(tiers.HeaderReason, []byte("due_missing: header hourglass-due is required (unix milliseconds)")),
		h(tiers.HeaderSource, []byte("d.delay.1m[0]@3")),
	}}
	if err := cl.ProduceSync(ctx, gaveUp, malformed).FirstErr(); err != nil {
		t.Fatal(err)
	}
	base := []string{"--brokers", broker, "--topic-prefix", "d."}

	stdout, stderr, err := run(t, app.DLQ, append([]string{"list", "--format", "json"}, base...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("list: %d lines, want 2:\n%s", len(lines), stdout)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"key": "42", "reason": "retries_exhausted", "attempt": 10.0, "source": "d.cancel[0]@17", "kind": "order-timeout"} {
		if first[k] != want {
			t.Errorf("list: %s = %v, want %v", k, first[k], want)
		}
	}
	stdout, _, err = run(t, app.DLQ, append([]string{"list", "--since", "1h"}, base...)...)
	if err != nil || !strings.Contains(stdout, "1 dead letters") || strings.Contains(stdout, "retries_exhausted") {
		t.Errorf("list --since 1h: %v, want only the recent dead letter\n%s", err, stdout)
	}
	stdout, _, err = run(t, app.DLQ, append([]string{"list", "--reason", "due_missing"}, base...)...)
	if err != nil || !strings.Contains(stdout, "1 dead letters") || !strings.Contains(stdout, "43") {
		t.Errorf("list --reason due_missing: %v\n%s", err, stdout)
	}

	stdout, _, err = run(t, app.DLQ, append([]string{"replay", "--dry-run"}, base...)...)
	if err != nil || !strings.Contains(stdout, "would replay 1 to d.cancel") || !strings.Contains(stdout, "skipped 1") {
		t.Errorf("replay --dry-run: %v\n%s", err, stdout)
	}
	stdout, _, err = run(t, app.DLQ, append([]string{"replay"}, base...)...)
	if err != nil || !strings.Contains(stdout, "replayed 1 to d.cancel") {
		t.Fatalf("replay: %v\n%s", err, stdout)
	}
	// The replayed record: same key, value and contract headers, attempt
	// reset, no dead-letter headers.
	rd, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics("d.cancel"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	fs := rd.PollFetches(ctx)
	recs := fs.Records()
	if len(recs) != 1 {
		t.Fatalf("cancel topic has %d records (%v), want 1", len(recs), fs.Err0())
	}
	r := recs[0]
	m, err := tiers.DecodeRecord(r)
	if err != nil || string(r.Key) != "42" || string(r.Value) != `{"order":42}` || m.Attempt != 0 || m.Kind != "order-timeout" || m.Deadline.IsZero() {
		t.Errorf("replayed %q %q meta %+v (%v)", r.Key, r.Value, m, err)
	}
	for _, k := range []string{tiers.HeaderReason, tiers.HeaderSource, tiers.HeaderDeadAt, tiers.HeaderAttempt} {
		if _, ok := tiers.Header(r.Headers, k); ok {
			t.Errorf("replayed record keeps %s", k)
		}
	}
	if v, _ := tiers.Header(r.Headers, "x-trace"); string(v) != "t42" {
		t.Errorf("replayed record lost x-trace: %v", r.Headers)
	}
}

// TestDLQBadArgs: a missing subcommand and bad flags are usage errors.
func TestDLQBadArgs(t *testing.T) {
	checkBadConfig(t, []badConfigCase{
		{"no subcommand", app.DLQ, nil, nil, []string{"list or replay"}},
		{"unknown subcommand", app.DLQ, []string{"purge"}, nil, []string{"list or replay"}},
		{"list format", app.DLQ, []string{"list", "--format", "xml"}, nil, []string{"--format"}},
		{"replay to a bad topic", app.DLQ, []string{"replay", "--to", "bad topic"}, nil, []string{"--to"}},
		{"list since negative", app.DLQ, []string{"list", "--since", "-1h"}, nil, []string{"--since"}},
	}, func(t *testing.T, stdout string) {
		if stdout != "" {
			t.Errorf("stdout is not empty:\n%s", stdout)
		}
	})
}
