package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
	"github.com/hourglass/hourglass/loadtest/manifest"
)

// broker is the address of the kfake broker the package's tests share.
var broker string

const testTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	kfaketest.Main(m, func(c *kfake.Cluster) { broker = c.ListenAddrs()[0] })
}

var topicSeq atomic.Int64

// newTopic creates a topic with 3 partitions unique to the test and deletes
// it when the test ends.
func newTopic(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("test.verify.%s.%d", strings.NewReplacer("/", ".", " ", "-").Replace(t.Name()), topicSeq.Add(1))
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, name); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if _, err := adm.DeleteTopics(ctx, name); err != nil {
			t.Logf("delete the test topics: %v", err)
		}
		cl.Close()
	})
	return name
}

// produce writes records (key, value) to topic and waits for them.
func produce(t *testing.T, topic string, kvs ...[2]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var rs []*kgo.Record
	for _, kv := range kvs {
		rs = append(rs, &kgo.Record{Key: []byte(kv[0]), Value: []byte(kv[1])})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// event encodes an outcome event as its record.
func event(id string, out outcome.Outcome, detail string, dueMs, closedMs int64) [2]string {
	b, _ := (&outcome.Event{V: outcome.Version, TaskID: id, Outcome: out, Detail: detail, DueMs: dueMs, ClosedMs: closedMs}).Marshal()
	return [2]string{id, string(b)}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func TestCollectToEnd(t *testing.T) {
	topic := newTopic(t)
	produce(t, topic,
		event(pfx+"1", "retry", "", base, base+1),
		event(pfx+"1", "closed", "", base, base+2),
		event("lt-q-1", "closed", "", base, base+1), // another run
		[2]string{pfx + "2", "not json"},            // invalid, of this run
		[2]string{"lt-q-2", "not json"},             // invalid, of another run: not looked at
		event(pfx+"2", "skipped", "PAID", base, base+3),
	)
	got, err := Collect(testCtx(t), []kgo.Opt{kgo.SeedBrokers(broker)}, topic, CollectOptions{Prefix: pfx})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 3 || got.Invalid != 1 || got.Records != 6 {
		t.Errorf("events %d, invalid %d, records %d; want 3, 1, 6", len(got.Events), got.Invalid, got.Records)
	}
	var order []string
	for _, e := range got.Events {
		if e.TaskID == pfx+"1" {
			order = append(order, string(e.Outcome))
		}
	}
	if strings.Join(order, ",") != "retry,closed" {
		t.Errorf("events of one task in order %v, want retry, closed", order)
	}
}

// TestCollectWaits: with Want and Until, Collect reads on past the end
// offsets it found at start until every wanted task has a final outcome.
func TestCollectWaits(t *testing.T) {
	topic := newTopic(t)
	produce(t, topic, event(pfx+"1", "closed", "", base, base+1), event(pfx+"2", "retry", "", base, base+1))
	waitingHook = func() { produce(t, topic, event(pfx+"2", "closed", "", base, base+900)) }
	t.Cleanup(func() { waitingHook = nil })

	start := time.Now()
	got, err := Collect(testCtx(t), []kgo.Opt{kgo.SeedBrokers(broker)}, topic, CollectOptions{
		Prefix: pfx, Want: map[string]bool{pfx + "1": true, pfx + "2": true}, Until: start.Add(20 * time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 3 || got.Events[len(got.Events)-1].ClosedMs != base+900 {
		t.Errorf("events %+v, want 3 ending with the late close", got.Events)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Collect took %v: it should stop as soon as every task has a final outcome", d)
	}
}

// TestCollectGivesUp: a task that never gets a final outcome keeps Collect
// reading only until Until.
func TestCollectGivesUp(t *testing.T) {
	topic := newTopic(t)
	produce(t, topic, event(pfx+"1", "closed", "", base, base+1))
	start := time.Now()
	got, err := Collect(testCtx(t), []kgo.Opt{kgo.SeedBrokers(broker)}, topic, CollectOptions{
		Prefix: pfx, Want: map[string]bool{pfx + "1": true, pfx + "2": true}, Until: start.Add(500 * time.Millisecond),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 1 {
		t.Errorf("%d events, want 1", len(got.Events))
	}
	if d := time.Since(start); d < 500*time.Millisecond || d > 10*time.Second {
		t.Errorf("Collect returned after %v, want soon after 500ms", d)
	}
}

func TestCollectMissingTopic(t *testing.T) {
	_, err := Collect(testCtx(t), []kgo.Opt{kgo.SeedBrokers(broker)}, "test.verify.no-such-topic", CollectOptions{Prefix: pfx})
	if err == nil || !strings.Contains(err.Error(), "test.verify.no-such-topic") {
		t.Errorf("error %v, want one naming the missing topic", err)
	}
}

// writeManifest writes a manifest of run "r" with the given entries.
func writeManifest(t *testing.T, prefix string, entries ...manifest.Entry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.jsonl")
	w, err := manifest.Create(path, manifest.Header{RunID: "r", IDPrefix: pfx, Prefix: prefix, Tiers: "1s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := w.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMainCommand runs the command: exit 0 and a JSON report when every task
// has the right outcome on time, 1 when one is lost, 2 for bad flags.
func TestMainCommand(t *testing.T) {
	topic := newTopic(t)
	produce(t, topic,
		event(pfx+"1", "closed", "", base+1000, base+1002),
		event(pfx+"2", "skipped", "PAID", base+1000, base+1001),
	)
	good := writeManifest(t, "hourglass.", entry(pfx+"1", base+1000, base, false, "exact_tier"), entry(pfx+"2", base+1000, base, true, "past_due"))
	lost := writeManifest(t, "hourglass.", entry(pfx+"1", base+1000, base, false, ""), entry(pfx+"3", base+1000, base, false, ""))

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		{"ok", []string{"--brokers", broker, "--outcomes-topic", topic, "--manifest", good}, ExitOK,
			[]string{`"scheduled": 2`, `"closed": 1`, `"skipped_paid": 1`, `"ok": true`},
			[]string{"run r: OK", "scheduled 2 (paid 1)", "lateness ms: p50 1, p90 2"}},
		{"lost", []string{"--brokers", broker, "--outcomes-topic", topic, "--manifest", lost}, ExitFailed,
			[]string{`"lost": 1`, `"ok": false`}, []string{"run r: FAILED", "lost, e.g.: " + pfx + "3"}},
		{"no manifest", []string{"--brokers", broker}, ExitError, nil, []string{"--manifest: required"}},
		{"bad flags", []string{"--manifest", good, "--wait", "-1s", "--timeout", "0s", "--brokers", "nope"}, ExitError, nil,
			[]string{"--wait: -1s", "--timeout: 0s", "--brokers (HOURGLASS_BROKERS)"}},
		{"manifest missing", []string{"--brokers", broker, "--manifest", filepath.Join(t.TempDir(), "none.jsonl")}, ExitError, nil, []string{"none.jsonl"}},
		{"help", []string{"--help"}, ExitOK, nil, []string{"--manifest", "--wait"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(testCtx(t), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tt.wantStdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout does not contain %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr.String())
				}
			}
			if tt.wantCode != ExitError && stdout.Len() > 0 {
				var r Report
				if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
					t.Errorf("stdout is not a JSON report: %v", err)
				}
			}
		})
	}
}
