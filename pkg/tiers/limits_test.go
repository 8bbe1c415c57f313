package tiers

import (
	"bytes"
	"errors"
	"testing"

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
			if got := reasonOf(err); got != tt.want {
				t.Fatalf("Check = %v, want reason %q", err, tt.want)
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
	r.Headers = append(r.Headers,
		kgo.RecordHeader{Key: HeaderPath, Value: bytes.Repeat([]byte("p"), maxPathLen)},
		kgo.RecordHeader{Key: HeaderHops, Value: []byte("12")},
		kgo.RecordHeader{Key: HeaderAttempt, Value: []byte("3")},
		kgo.RecordHeader{Key: HeaderDeadline, Value: []byte("1")},
	)
	if err := (Limits{}).Check(r); err != nil {
		t.Errorf("after the headers of hops and retries: %v", err)
	}
}

// reasonOf returns the Reason of the *InvalidError err, or "" for nil.
func reasonOf(err error) Reason {
	var inv *InvalidError
	if errors.As(err, &inv) {
		return inv.Reason
	}
	return ""
}
