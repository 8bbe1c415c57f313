package kafkacloser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// seeds are the brokers of the package's kfake cluster. It does not create
// topics on demand: a close to a missing topic must fail.
var seeds []string

func TestMain(m *testing.M) {
	kfaketest.Main(m, func(c *kfake.Cluster) { seeds = c.ListenAddrs() })
}

// testTimeout bounds each test's waits.
const testTimeout = 20 * time.Second

var due = time.UnixMilli(1_893_553_445_123)

func task(id string, payload string, attempt int) closer.Task {
	return closer.Task{ID: id, Kind: "reminder", Payload: []byte(payload),
		Meta: tiers.Meta{Due: due, Kind: "reminder"}, Attempt: attempt}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

var topicSeq atomic.Int64

// newTopic creates a topic of three partitions unique to this call, deleted
// at the end of the test.
func newTopic(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test.kafkacloser.%s.%d", strings.NewReplacer("/", ".", " ", "-").Replace(t.Name()), topicSeq.Add(1))
	adm := newAdmin(t)
	if _, err := adm.CreateTopic(testCtx(t), 3, 1, nil, name); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if _, err := adm.DeleteTopic(ctx, name); err != nil {
			t.Errorf("delete topic %s: %v", name, err)
		}
	})
	return name
}

func newAdmin(t testing.TB) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// newTestCloser returns the closer of cfg on the test cluster, stopped at
// the end of the test.
func newTestCloser(t *testing.T, cfg Config) *Closer {
	t.Helper()
	c, err := New(cfg, []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("kafkacloser-test")})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

// consume reads topic from the start until it holds n records, and checks
// that it holds no more.
func consume(t *testing.T, topic string, n int) []*kgo.Record {
	t.Helper()
	ctx := testCtx(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: %d records within %v, want %d", topic, len(recs), testTimeout, n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", topic, p, err) })
		recs = append(recs, fs.Records()...)
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != int64(n) || len(recs) != n {
		t.Fatalf("%s holds %d records (%d read), want %d", topic, total, len(recs), n)
	}
	return recs
}

func detailOf(r *kgo.Record) string { return fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset) }

// TestEventValue: the value of a close command in event mode, for JSON and
// other payloads.
func TestEventValue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload string
		want    string
	}{
		{name: "JSON object", payload: `{"phone":"+49 <1>","n":1}`,
			want: `{"v":1,"command":"close","task_id":"o-1","kind":"reminder","due_ms":1893553445123,"attempt":2,"payload":{"phone":"+49 <1>","n":1}}`},
		{name: "JSON with spaces is compacted", payload: "{ \"a\" : [1, 2] }\n",
			want: `{"v":1,"command":"close","task_id":"o-1","kind":"reminder","due_ms":1893553445123,"attempt":2,"payload":{"a":[1,2]}}`},
		{name: "JSON string", payload: `"text"`,
			want: `{"v":1,"command":"close","task_id":"o-1","kind":"reminder","due_ms":1893553445123,"attempt":2,"payload":"text"}`},
		{name: "JSON number", payload: `42`,
			want: `{"v":1,"command":"close","task_id":"o-1","kind":"reminder","due_ms":1893553445123,"attempt":2,"payload":42}`},
		{name: "text", payload: "hello",
			want: `{"v":1,"command":"close","task_id":"o-1","kind":"reminder","due_ms":1893553445123,"attempt":2,"payload_base64":"aGVsbG8="}`},
		{name: "binary", payload: "\x00\xff\xfe",
			want: `{"v":1,"command":"close","task_id":"o-1","kind":"reminder","due_ms":1893553445123,"attempt":2,"payload_base64":"AP/+"}`},
		{name: "truncated JSON", payload: `{"a":`,
			want: `{"v":1,"command":"close","task_id":"o-1","kind":"reminder","due_ms":1893553445123,"attempt":2,"payload_base64":"eyJhIjo="}`},
		{name: "empty", payload: "",
			want: `{"v":1,"command":"close","task_id":"o-1","kind":"reminder","due_ms":1893553445123,"attempt":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topic := newTopic(t)
			c := newTestCloser(t, Config{Topic: topic})
			res, err := c.Close(testCtx(t), task("o-1", tc.payload, 2))
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
			r := consume(t, topic, 1)[0]
			if string(r.Value) != tc.want {
				t.Errorf("value\n got %s\nwant %s", r.Value, tc.want)
			}
			if want := (closer.Result{Outcome: outcome.Closed, Detail: detailOf(r)}); res != want {
				t.Errorf("Close = %+v, want %+v", res, want)
			}
			var cmd Command
			if err := json.Unmarshal(r.Value, &cmd); err != nil {
				t.Fatalf("the value does not decode as a Command: %v", err)
			}
			got := cmd.Payload
			if got == nil {
				got = cmd.PayloadBase64
			}
			if json.Valid([]byte(tc.payload)) {
				var a, b any
				if err := json.Unmarshal(got, &a); err != nil {
					t.Fatalf("decoded payload %s is not JSON: %v", got, err)
				}
				if err := json.Unmarshal([]byte(tc.payload), &b); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(a) != fmt.Sprint(b) {
					t.Errorf("decoded payload %s, want %s", got, tc.payload)
				}
			} else if !bytes.Equal(got, []byte(tc.payload)) {
				t.Errorf("decoded payload %q, want %q", got, tc.payload)
			}
		})
	}
}

// TestRecord: key, headers and, in payload mode, the payload unchanged; the
// idempotency key is the same for two attempts.
func TestRecord(t *testing.T) {
	for _, mode := range []string{ValueEvent, ValuePayload} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			topic := newTopic(t)
			c := newTestCloser(t, Config{Topic: topic, Value: mode})
			payload := "not JSON \x00\xff"
			for attempt := 1; attempt <= 2; attempt++ {
				if _, err := c.Close(testCtx(t), task("order/42 x", payload, attempt)); err != nil {
					t.Fatalf("Close attempt %d: %v", attempt, err)
				}
			}
			recs := consume(t, topic, 2)
			slices.SortFunc(recs, func(a, b *kgo.Record) int { return int(a.Offset - b.Offset) })
			if recs[0].Partition != recs[1].Partition {
				t.Errorf("the attempts went to partitions %d and %d: the key must keep a task on one", recs[0].Partition, recs[1].Partition)
			}
			for i, r := range recs {
				attempt := i + 1
				if string(r.Key) != "order/42 x" {
					t.Errorf("key %q, want the task id", r.Key)
				}
				want := []kgo.RecordHeader{
					{Key: "hourglass-kind", Value: []byte("reminder")},
					{Key: "hourglass-due", Value: []byte("1893553445123")},
					{Key: "hourglass-attempt", Value: fmt.Appendf(nil, "%d", attempt)},
					{Key: "hourglass-idempotency-key", Value: []byte("hourglass:reminder:order/42 x")},
				}
				if !slices.EqualFunc(r.Headers, want, func(a, b kgo.RecordHeader) bool { return a.Key == b.Key && bytes.Equal(a.Value, b.Value) }) {
					t.Errorf("attempt %d: headers %q, want %q", attempt, r.Headers, want)
				}
				if mode == ValuePayload && string(r.Value) != payload {
					t.Errorf("attempt %d: value %q, want the payload %q", attempt, r.Value, payload)
				}
			}
		})
	}
}

// TestConcurrent: 50 closes at once are each acknowledged, and the topic
// holds each command exactly once, at the offset Close reported.
func TestConcurrent(t *testing.T) {
	const n = 50
	topic := newTopic(t)
	c := newTestCloser(t, Config{Topic: topic})
	details := make([]string, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			res, err := c.Close(testCtx(t), task(fmt.Sprint("o-", i), fmt.Sprintf(`{"i":%d}`, i), 1))
			if err != nil || res.Outcome != outcome.Closed {
				t.Errorf("Close o-%d = %+v, %v", i, res, err)
			}
			details[i] = res.Detail
		})
	}
	close(start)
	wg.Wait()
	recs := consume(t, topic, n)
	seen := map[string]bool{}
	for _, r := range recs {
		var cmd Command
		if err := json.Unmarshal(r.Value, &cmd); err != nil {
			t.Fatalf("decode %s: %v", detailOf(r), err)
		}
		if seen[cmd.TaskID] {
			t.Errorf("task %s produced twice", cmd.TaskID)
		}
		seen[cmd.TaskID] = true
		var i int
		if _, err := fmt.Sscanf(cmd.TaskID, "o-%d", &i); err != nil || string(r.Key) != cmd.TaskID {
			t.Fatalf("record %s: key %q task %q", detailOf(r), r.Key, cmd.TaskID)
		}
		if details[i] != detailOf(r) {
			t.Errorf("Close o-%d reported %s; the command is at %s", i, details[i], detailOf(r))
		}
	}
	if len(seen) != n {
		t.Errorf("%d tasks in the topic, want %d", len(seen), n)
	}
}

// TestMissingTopic: a close to a topic that does not exist is a retryable
// error naming the topic; the closer does not create it.
func TestMissingTopic(t *testing.T) {
	topic := fmt.Sprintf("test.kafkacloser.missing.%d", topicSeq.Add(1))
	c := newTestCloser(t, Config{Topic: topic, Timeout: 5 * time.Second})
	start := time.Now()
	_, err := c.Close(testCtx(t), task("o-1", "{}", 1))
	took := time.Since(start)
	t.Logf("Close to a missing topic failed after %v: %v", took.Round(time.Millisecond), err)
	if err == nil || closer.IsPermanent(err) || !strings.Contains(err.Error(), topic) || !strings.Contains(err.Error(), `task "o-1"`) {
		t.Fatalf("Close error %v; want a retryable error naming the task and %s", err, topic)
	}
	topics, lerr := newAdmin(t).ListTopics(testCtx(t), topic)
	if lerr != nil {
		t.Fatalf("list topics: %v", lerr)
	}
	if topics.Has(topic) {
		t.Errorf("the closer created %s", topic)
	}
}

// TestTooLarge: a command larger than a batch may be is a permanent error.
func TestTooLarge(t *testing.T) {
	topic := newTopic(t)
	c := newTestCloser(t, Config{Topic: topic, Value: ValuePayload})
	_, err := c.Close(testCtx(t), task("o-1", strings.Repeat("x", 1<<20+1), 1))
	if !closer.IsPermanent(err) || !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("Close error %v; want a permanent MESSAGE_TOO_LARGE", err)
	}
	if _, err := c.Close(testCtx(t), closer.Task{Kind: "reminder", Attempt: 1}); !closer.IsPermanent(err) {
		t.Errorf("Close of a task without id: %v; want a permanent error", err)
	}
}

// TestContextCanceled: a close with a cancelled context returns its error.
func TestContextCanceled(t *testing.T) {
	topic := newTopic(t)
	c := newTestCloser(t, Config{Topic: topic})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := c.Close(ctx, task("o-1", "{}", 1))
	if !errors.Is(err, context.Canceled) || closer.IsPermanent(err) {
		t.Fatalf("Close error %v; want context.Canceled, retryable", err)
	}
}

// TestStop: Stop may be called twice; a close after it is a retryable
// error.
func TestStop(t *testing.T) {
	topic := newTopic(t)
	c, err := New(Config{Topic: topic}, []kgo.Opt{kgo.SeedBrokers(seeds...)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Close(testCtx(t), task("o-1", "{}", 1)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := c.Close(testCtx(t), task("o-2", "{}", 1)); err == nil || closer.IsPermanent(err) {
		t.Errorf("Close after Stop: %v; want a retryable error", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config // WithDefaults is applied unless raw is set
		raw  bool
		want []string // prefixes of the errors, in order
	}{
		{name: "minimal", cfg: Config{Topic: "sms.reminders"}},
		{name: "payload", cfg: Config{Topic: "orders_close-v2", Value: ValuePayload, Timeout: time.Second}},
		{name: "zero without defaults", raw: true, want: []string{"topic: required", "value: ", "timeout: "}},
		{name: "topic missing", want: []string{"topic: required"}},
		{name: "topic with a space", cfg: Config{Topic: "sms reminders"}, want: []string{"topic: "}},
		{name: "topic dot", cfg: Config{Topic: ".."}, want: []string{"topic: "}},
		{name: "topic too long", cfg: Config{Topic: strings.Repeat("t", 250)}, want: []string{"topic: "}},
		{name: "value", cfg: Config{Topic: "t", Value: "json"}, want: []string{"value: "}},
		{name: "timeout", cfg: Config{Topic: "t", Timeout: -time.Second}, want: []string{"timeout: "}},
		{name: "every problem", cfg: Config{Topic: "a/b", Value: "x", Timeout: -1}, want: []string{"topic: ", "value: ", "timeout: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if !tc.raw {
				cfg = cfg.WithDefaults()
			}
			var errs closer.Problems
			errors.As(cfg.Validate(), &errs)
			if len(errs) != len(tc.want) {
				t.Fatalf("Validate = %q, want %d errors starting %q", errs, len(tc.want), tc.want)
			}
			for i, err := range errs {
				if !strings.HasPrefix(err.Error(), tc.want[i]) {
					t.Errorf("error %d = %q, want it to start with %q", i, err, tc.want[i])
				}
			}
		})
	}
	if _, err := New(Config{Value: "x"}, nil); err == nil || !strings.Contains(err.Error(), "topic: required") {
		t.Errorf("New(invalid) error %v", err)
	}
	if got := (Config{Topic: "t"}).WithDefaults(); got.Value != DefaultValue || got.Timeout != DefaultTimeout {
		t.Errorf("WithDefaults = %+v", got)
	}
}

// TestDecodeYAML: the closers file's kafka section decodes into Config
// with unknown keys refused, as the loader decodes it.
func TestDecodeYAML(t *testing.T) {
	var got Config
	dec := yaml.NewDecoder(strings.NewReader("topic: sms.reminders\nvalue: payload\ntimeout: 3s\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if want := (Config{Topic: "sms.reminders", Value: ValuePayload, Timeout: 3 * time.Second}); got != want {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
	dec = yaml.NewDecoder(strings.NewReader("topic: t\nbrokers: x:9092\n"))
	dec.KnownFields(true)
	if err := dec.Decode(new(Config)); err == nil {
		t.Error("an unknown key decoded without error")
	}
}
