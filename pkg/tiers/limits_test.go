package tiers

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestLimitsCheck(t *testing.T) {
	big := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	headers := func(n, size int) []kgo.RecordHeader {
		hs := make([]kgo.RecordHeader, n)
		for i := range hs {
			hs[i] = kgo.RecordHeader{Key: "h", Value: big(size)}
		}
		return hs
	}
	tests := []struct {
		name   string
		limits Limits
		rec    *kgo.Record
		want   Reason // "" for valid
	}{
		{name: "small", rec: &kgo.Record{Key: []byte("42"), Value: big(100), Headers: headers(3, 10)}},
		{name: "key at the limit", rec: &kgo.Record{Key: big(DefaultMaxKeyBytes)}},
		{name: "key over", rec: &kgo.Record{Key: big(DefaultMaxKeyBytes + 1)}, want: ReasonKeyTooLarge},
		{name: "180 kB key", rec: &kgo.Record{Key: bytes.Repeat([]byte("<"), 180_000)}, want: ReasonKeyTooLarge},
		{name: "value at the limit", rec: &kgo.Record{Key: []byte("1"), Value: big(DefaultMaxValueBytes)}},
		{name: "value over", rec: &kgo.Record{Key: []byte("1"), Value: big(DefaultMaxValueBytes + 1)}, want: ReasonValueTooLarge},
		{name: "too many headers", rec: &kgo.Record{Key: []byte("1"), Headers: headers(DefaultMaxHeaders+1, 0)}, want: ReasonHeadersTooLarge},
		{name: "headers too large", rec: &kgo.Record{Key: []byte("1"), Headers: headers(2, DefaultMaxHeaderBytes/2)}, want: ReasonHeadersTooLarge},
		{name: "own limit", limits: Limits{ValueBytes: 10}, rec: &kgo.Record{Key: []byte("1"), Value: big(11)}, want: ReasonValueTooLarge},
		{name: "check disabled", limits: Limits{ValueBytes: -1}, rec: &kgo.Record{Key: []byte("1"), Value: big(2 << 20)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.limits.Check(tt.rec)
			if got := ReasonOf(err, ""); got != tt.want {
				t.Fatalf("Check = %v, want reason %q", err, tt.want)
			}
		})
	}
}

// TestLimitsFitABatch: a record at every default limit, with the headers
// the router and canceller add, still fits the batch a franz-go producer
// sends (about 1,000,012 bytes).
func TestLimitsFitABatch(t *testing.T) {
	const batchMax = 1_000_012
	var hs []kgo.RecordHeader
	per := DefaultMaxHeaderBytes / DefaultMaxHeaders
	for range DefaultMaxHeaders {
		hs = append(hs, kgo.RecordHeader{Key: "k", Value: bytes.Repeat([]byte("v"), per-1)})
	}
	r := &kgo.Record{Key: bytes.Repeat([]byte("k"), DefaultMaxKeyBytes), Value: bytes.Repeat([]byte("v"), DefaultMaxValueBytes), Headers: hs}
	if err := (Limits{}).Check(r); err != nil {
		t.Fatal(err)
	}
	onward := &kgo.Record{Key: r.Key, Value: r.Value, Headers: SetHeaders(r.Headers,
		kgo.RecordHeader{Key: HeaderPath, Value: bytes.Repeat([]byte("p"), maxPathLen)},
		kgo.RecordHeader{Key: HeaderHops, Value: []byte("1000000")},
		kgo.RecordHeader{Key: HeaderForwarded, Value: FormatMillis(time.Now())},
		kgo.RecordHeader{Key: HeaderAttempt, Value: []byte("1000000")},
		kgo.RecordHeader{Key: HeaderDeadline, Value: FormatMillis(time.Now())},
	)}
	dl := DeadLetter(onward, "hourglass.dlq", errors.New(strings.Repeat("e", 10_000)), time.Now())
	for _, rec := range []*kgo.Record{onward, dl} {
		if n := Size(rec) + 61; n > batchMax { // 61: the batch header
			t.Errorf("%d bytes with the batch header, more than %d", n, batchMax)
		}
	}
	if _, cut := Header(dl.Headers, HeaderTruncated); cut {
		t.Errorf("a record within the limits was cut in its dead letter")
	}
}

func TestOnward(t *testing.T) {
	in := []kgo.RecordHeader{
		{Key: HeaderDue, Value: []byte("1")},
		{Key: HeaderSource, Value: []byte("payments.commands[0]@5")},
		{Key: "trace", Value: []byte("t")},
		{Key: HeaderReason, Value: []byte("close_failed: forged")},
		{Key: HeaderForwarded, Value: []byte("1")},
		{Key: "hourglass-dlq-anything", Value: []byte("x")},
	}
	got := Onward(in, kgo.RecordHeader{Key: HeaderPath, Value: []byte("1m")})
	want := []kgo.RecordHeader{{Key: HeaderDue, Value: []byte("1")}, {Key: "trace", Value: []byte("t")}, {Key: HeaderPath, Value: []byte("1m")}}
	if len(got) != len(want) {
		t.Fatalf("Onward = %q, want %q", got, want)
	}
	for i := range want {
		if got[i].Key != want[i].Key || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("Onward = %q, want %q", got, want)
		}
	}
	if len(in) != 6 || in[1].Key != HeaderSource {
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
			Headers: []kgo.RecordHeader{{Key: HeaderDue, Value: []byte("1")}, {Key: HeaderSource, Value: []byte("forged[0]@1")}}}
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
		{name: "huge key", rec: src(990_000, 0, 0), wantCut: "key 990000", wantKey: DefaultMaxKeyBytes},
		{name: "minimal", rec: src(5000, 500, 1), minimal: true, wantCut: "value 500,headers 100005,key 5000", wantKey: DefaultMaxKeyBytes},
		{name: "a contract header repeated", rec: repeated(src(10, 10, 0), HeaderPath, 2000, 500), wantCut: "value 10,headers 1027486", wantKey: 10}, // all but the first copy
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
			cut, _ := Header(dl.Headers, HeaderTruncated)
			if string(cut) != tt.wantCut {
				t.Errorf("%s = %q, want %q", HeaderTruncated, cut, tt.wantCut)
			}
			if tt.wantValue < 0 && !bytes.Equal(dl.Value, tt.rec.Value) {
				t.Errorf("value changed: %d bytes, was %d", len(dl.Value), len(tt.rec.Value))
			}
			if len(dl.Key) != tt.wantKey {
				t.Errorf("key of %d bytes, want %d", len(dl.Key), tt.wantKey)
			}
			if src, _ := Header(dl.Headers, HeaderSource); string(src) != "hourglass.delay.1m[3]@77" {
				t.Errorf("%s = %q: the forged one survived or ours is missing", HeaderSource, src)
			}
			if reason, _ := Header(dl.Headers, HeaderReason); string(reason) != cause.Error() {
				t.Errorf("%s = %q", HeaderReason, reason)
			}
			if due, ok := Header(dl.Headers, HeaderDue); !ok || string(due) != "1" {
				t.Errorf("the contract header %s was lost", HeaderDue)
			}
		})
	}
}

// TestLimitsIgnoreContractHeaders: the headers Hourglass adds on the way
// (path, hops, forwarded, attempt, deadline) do not count, so a record at
// the limits when produced passes them again after hops and retries.
func TestLimitsIgnoreContractHeaders(t *testing.T) {
	hs := make([]kgo.RecordHeader, DefaultMaxHeaders)
	for i := range hs {
		hs[i] = kgo.RecordHeader{Key: "h", Value: bytes.Repeat([]byte("v"), DefaultMaxHeaderBytes/DefaultMaxHeaders-1)}
	}
	r := &kgo.Record{Key: []byte("1"), Headers: hs}
	if err := (Limits{}).Check(r); err != nil {
		t.Fatalf("at the limits: %v", err)
	}
	r.Headers = SetHeaders(r.Headers,
		kgo.RecordHeader{Key: HeaderPath, Value: bytes.Repeat([]byte("p"), maxPathLen)},
		kgo.RecordHeader{Key: HeaderHops, Value: []byte("12")},
		kgo.RecordHeader{Key: HeaderAttempt, Value: []byte("3")},
		kgo.RecordHeader{Key: HeaderDeadline, Value: []byte("1")},
	)
	if err := (Limits{}).Check(r); err != nil {
		t.Errorf("after the headers of hops and retries: %v", err)
	}
}
