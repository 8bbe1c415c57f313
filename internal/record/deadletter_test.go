package record

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestLimitsFitABatch: a record at every default limit, with the headers
// the router and canceller add, still fits the batch a franz-go producer
// sends (about 1,000,012 bytes).
func TestLimitsFitABatch(t *testing.T) {
	const batchMax = 1_000_012
	var hs []kgo.RecordHeader
	per := tiers.DefaultMaxHeaderBytes / tiers.DefaultMaxHeaders
	for range tiers.DefaultMaxHeaders {
		hs = append(hs, kgo.RecordHeader{Key: "k", Value: bytes.Repeat([]byte("v"), per-1)})
	}
	r := &kgo.Record{Key: bytes.Repeat([]byte("k"), tiers.DefaultMaxKeyBytes), Value: bytes.Repeat([]byte("v"), tiers.DefaultMaxValueBytes), Headers: hs}
	if err := (tiers.Limits{}).Check(r); err != nil {
		t.Fatal(err)
	}
	onward := &kgo.Record{Key: r.Key, Value: r.Value, Headers: SetHeaders(r.Headers,
		kgo.RecordHeader{Key: tiers.HeaderPath, Value: bytes.Repeat([]byte("p"), maxPathBytes)},
		kgo.RecordHeader{Key: tiers.HeaderHops, Value: []byte("1000000")},
		kgo.RecordHeader{Key: tiers.HeaderForwarded, Value: tiers.FormatMillis(time.Now())},
		kgo.RecordHeader{Key: tiers.HeaderAttempt, Value: []byte("1000000")},
		kgo.RecordHeader{Key: tiers.HeaderDeadline, Value: tiers.FormatMillis(time.Now())},
	)}
	dl := DeadLetter(onward, "hourglass.dlq", errors.New(strings.Repeat("e", 10_000)), time.Now())
	for _, rec := range []*kgo.Record{onward, dl} {
		if n := Size(rec) + 61; n > batchMax { // 61: the batch header
			t.Errorf("%d bytes with the batch header, more than %d", n, batchMax)
		}
	}
	if _, cut := tiers.Header(dl.Headers, tiers.HeaderTruncated); cut {
		t.Errorf("a record within the limits was cut in its dead letter")
	}
}

func TestOnward(t *testing.T) {
	in := []kgo.RecordHeader{
		{Key: tiers.HeaderDue, Value: []byte("1")},
		{Key: tiers.HeaderSource, Value: []byte("payments.commands[0]@5")},
		{Key: "trace", Value: []byte("t")},
		{Key: tiers.HeaderReason, Value: []byte("close_failed: forged")},
		{Key: tiers.HeaderForwarded, Value: []byte("1")},
		{Key: "hourglass-dlq-anything", Value: []byte("x")},
	}
	got := Onward(in, kgo.RecordHeader{Key: tiers.HeaderPath, Value: []byte("1m")})
	want := []kgo.RecordHeader{{Key: tiers.HeaderDue, Value: []byte("1")}, {Key: "trace", Value: []byte("t")}, {Key: tiers.HeaderPath, Value: []byte("1m")}}
	if len(got) != len(want) {
		t.Fatalf("Onward = %q, want %q", got, want)
	}
	for i := range want {
		if got[i].Key != want[i].Key || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("Onward = %q, want %q", got, want)
		}
	}
	if len(in) != 6 || in[1].Key != tiers.HeaderSource {
		t.Fatalf("Onward changed its input: %q", in)
	}
}

// repeated adds n copies of the header key with values of size bytes.
func repeated(r *kgo.Record, key string, n, size int) *kgo.Record {
	for range n {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: key, Value: bytes.Repeat([]byte("p"), size)})
	}
	return r
}

func TestDeadLetterFits(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	src := func(key, value int, extra int) *kgo.Record {
		r := &kgo.Record{Topic: "hourglass.delay.1m", Partition: 3, Offset: 77,
			Key: bytes.Repeat([]byte("k"), key), Value: bytes.Repeat([]byte("v"), value),
			Headers: []kgo.RecordHeader{{Key: tiers.HeaderDue, Value: []byte("1")}, {Key: tiers.HeaderSource, Value: []byte("forged[0]@1")}}}
		for range extra {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "x-big", Value: bytes.Repeat([]byte("h"), 100_000)})
		}
		return r
	}
	cause := errors.New("produce_failed: MESSAGE_TOO_LARGE")
	tests := []struct {
		name      string
		rec       *kgo.Record
		minimal   bool
		wantCut   string
		wantValue int // -1: unchanged
		wantKey   int
	}{
		{name: "fits", rec: src(10, 1000, 0), wantValue: -1, wantKey: 10},
		{name: "value near the limit", rec: src(10, 999_000, 0), wantCut: "value 999000", wantKey: 10},
		{name: "huge headers", rec: src(10, 10, 12), wantCut: "value 10,headers 1200060", wantKey: 10},
		{name: "huge key", rec: src(990_000, 0, 0), wantCut: "key 990000", wantKey: tiers.DefaultMaxKeyBytes},
		{name: "minimal", rec: src(5000, 500, 1), minimal: true, wantCut: "value 500,headers 100005,key 5000", wantKey: tiers.DefaultMaxKeyBytes},
		{name: "a contract header repeated", rec: repeated(src(10, 10, 0), tiers.HeaderPath, 2000, 500), wantCut: "value 10,headers 1027486", wantKey: 10}, // all but the first copy
		{name: "a huge contract header", rec: repeated(src(10, 10, 0), tiers.HeaderPath, 1, 990_000), wantCut: "value 10,headers 990014", wantKey: 10},
		{name: "a huge contract header, minimal", rec: repeated(src(10, 10, 0), tiers.HeaderTarget, 1, 990_000), minimal: true, wantCut: "value 10,headers 990016", wantKey: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			build := DeadLetter
			if tt.minimal {
				build = MinimalDeadLetter
			}
			dl := build(tt.rec, "hourglass.dlq", cause, now)
			if n := Size(dl); n > MaxDeadLetterBytes {
				t.Errorf("dead letter of %d bytes, more than %d", n, MaxDeadLetterBytes)
			}
			cut, _ := tiers.Header(dl.Headers, tiers.HeaderTruncated)
			if string(cut) != tt.wantCut {
				t.Errorf("%s = %q, want %q", tiers.HeaderTruncated, cut, tt.wantCut)
			}
			if tt.wantValue < 0 && !bytes.Equal(dl.Value, tt.rec.Value) {
				t.Errorf("value changed: %d bytes, was %d", len(dl.Value), len(tt.rec.Value))
			}
			if len(dl.Key) != tt.wantKey {
				t.Errorf("key of %d bytes, want %d", len(dl.Key), tt.wantKey)
			}
			if src, _ := tiers.Header(dl.Headers, tiers.HeaderSource); string(src) != "hourglass.delay.1m[3]@77" {
				t.Errorf("%s = %q: the forged one survived or ours is missing", tiers.HeaderSource, src)
			}
			if reason, _ := tiers.Header(dl.Headers, tiers.HeaderReason); string(reason) != cause.Error() {
				t.Errorf("%s = %q", tiers.HeaderReason, reason)
			}
			if due, ok := tiers.Header(dl.Headers, tiers.HeaderDue); !ok || string(due) != "1" {
				t.Errorf("the contract header %s was lost", tiers.HeaderDue)
			}
		})
	}
}
