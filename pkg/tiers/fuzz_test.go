package tiers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fuzzKeys are the header keys a fuzz input picks from by index, so that the
// fuzzer reaches duplicates and every decoder without guessing key names.
var fuzzKeys = []string{
	HeaderDue, HeaderTarget, HeaderVersion, HeaderKind, HeaderScheduled,
	HeaderForwarded, HeaderHops, HeaderAttempt, HeaderPath,
	"hourglass-foo", "Hourglass-Due", "x-trace",
}

// fuzzLiteralKey is the key index after which the key itself follows.
var fuzzLiteralKey = len(fuzzKeys)

// decodeFuzzHeaders turns a fuzz input into headers. The input is a sequence
// of headers, each a key index byte (fuzzLiteralKey: a length byte and the key
// follow), a two-byte little-endian value length and the value. Lengths are
// clipped to what is left, so every input is some header list.
func decodeFuzzHeaders(data []byte) []kgo.RecordHeader {
	var hs []kgo.RecordHeader
	take := func(n int) []byte {
		n = min(n, len(data))
		v := data[:n:n]
		data = data[n:]
		return v
	}
	for len(data) > 0 {
		var key string
		if k := int(take(1)[0]) % (len(fuzzKeys) + 1); k == fuzzLiteralKey {
			n := take(1)
			if len(n) == 0 {
				break
			}
			key = string(take(int(n[0])))
		} else {
			key = fuzzKeys[k]
		}
		var n int
		if l := take(2); len(l) == 2 {
			n = int(binary.LittleEndian.Uint16(l))
		}
		hs = append(hs, kgo.RecordHeader{Key: key, Value: take(n)})
	}
	return hs
}

// encodeFuzzHeaders is the inverse of decodeFuzzHeaders, for the seed corpus.
func encodeFuzzHeaders(hs []kgo.RecordHeader) []byte {
	var b []byte
	for _, h := range hs {
		if i := slices.Index(fuzzKeys, h.Key); i >= 0 {
			b = append(b, byte(i))
		} else {
			b = append(b, byte(fuzzLiteralKey), byte(len(h.Key)))
			b = append(b, h.Key...)
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(len(h.Value)))
		b = append(b, h.Value...)
	}
	return b
}

func TestFuzzHeadersRoundTrip(t *testing.T) {
	t.Parallel()

	hs := hdrs(HeaderDue, "1767225600000", "custom-key", "v", HeaderPath, strings.Repeat("30m,", 200), "x-trace", "")
	got := decodeFuzzHeaders(encodeFuzzHeaders(hs))
	if !equalHeaders(got, hs) {
		t.Errorf("decodeFuzzHeaders(encodeFuzzHeaders(%s)) = %s", headersString(hs), headersString(got))
	}
}

var knownReasons = map[Reason]bool{
	ReasonDueMissing: true, ReasonDueEmpty: true, ReasonDueNotNumber: true, ReasonDueNegative: true,
	ReasonDueTooFar: true, ReasonDueImplausible: true, ReasonDuplicateHeader: true, ReasonVersionUnsupported: true,
	ReasonTargetInvalid: true, ReasonHeaderInvalid: true, ReasonKeyMissing: true,
}

// FuzzDecode checks that Decode, which reads headers from any producer, never
// panics, reports every failure as an *InvalidError with a known Reason, and,
// when it accepts a record, returns exactly what the headers say.
func FuzzDecode(f *testing.F) {
	const due = "1767225600000"
	seeds := [][]kgo.RecordHeader{
		hdrs(HeaderDue, due),
		hdrs(HeaderDue, "0"),
		hdrs(HeaderDue, "999999999999999999"),
		hdrs(HeaderDue, due, HeaderVersion, "1", HeaderTarget, "orders.close", HeaderKind, "order-timeout",
			HeaderScheduled, "1767223800000", HeaderForwarded, "1767225600042", HeaderHops, "3",
			HeaderPath, "30m*2,5m", HeaderAttempt, "2"),
		hdrs("traceparent", "00-abc-def-01", HeaderDue, due, "hourglass-foo", "bar"),
		hdrs(HeaderDue, due, HeaderPath, strings.Repeat("p", 1022)),
		nil,
		hdrs(HeaderTarget, "orders.close"),
		hdrs(HeaderDue, ""),
		hdrs(HeaderDue, "abc"),
		hdrs(HeaderDue, " 5"),
		hdrs(HeaderDue, "+5"),
		hdrs(HeaderDue, "1.5"),
		hdrs(HeaderDue, "0x10"),
		hdrs(HeaderDue, "-5"),
		hdrs(HeaderDue, "-"),
		hdrs(HeaderDue, "1000000000000000000"),
		hdrs(HeaderDue, "1767225600"),
		hdrs(HeaderDue, "1767225600000000"),
		hdrs(HeaderDue, "1767225600000000000"),
		hdrs(HeaderDue, "99999999999999999999"),
		hdrs(HeaderDue, "946684799999"),
		hdrs(HeaderDue, "253402300800000"),
		hdrs(HeaderDue, due, HeaderDue, due),
		hdrs(HeaderDue, due, HeaderVersion, "2"),
		hdrs(HeaderDue, due, HeaderTarget, "orders close"),
		hdrs(HeaderDue, due, HeaderTarget, strings.Repeat("t", 250)),
		hdrs(HeaderDue, due, HeaderKind, "order\x00timeout"),
		hdrs(HeaderDue, due, HeaderKind, "\xff"),
		hdrs(HeaderDue, due, HeaderHops, "1000001"),
		hdrs(HeaderDue, due, HeaderAttempt, "-1"),
	}
	for _, hs := range seeds {
		f.Add(encodeFuzzHeaders(hs))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		hs := decodeFuzzHeaders(data)
		m, err := Decode(hs)
		if err != nil {
			ie, ok := err.(*InvalidError) //nolint:errorlint // Decode's contract: an *InvalidError itself, not wrapped
			if !ok {
				t.Fatalf("Decode(%q) error %T %v, want an *InvalidError", headersString(hs), err, err)
			}
			var as *InvalidError
			if !errors.As(err, &as) || as != ie {
				t.Fatalf("errors.As(%v, *InvalidError) failed", err)
			}
			if ie.Reason == "" || !knownReasons[ie.Reason] {
				t.Fatalf("Decode(%q): reason %q, want one of the Reason constants", headersString(hs), ie.Reason)
			}
			if ie.Reason == ReasonDueTooFar || ie.Reason == ReasonKeyMissing {
				t.Fatalf("Decode(%q): reason %q is not Decode's to report", headersString(hs), ie.Reason)
			}
			if m != (Meta{}) {
				t.Fatalf("Decode(%q) returned %+v with its error, want the zero Meta", headersString(hs), m)
			}
			if ie.Reason == ReasonDueImplausible {
				checkImplausible(t, hs)
			}
			return
		}

		// Accepted: every header of ours appears once, and Meta says what
		// it says.
		seen := map[string]int{}
		for _, h := range hs {
			seen[h.Key]++
		}
		for key := range headerBits {
			if seen[key] > 1 {
				t.Fatalf("Decode(%q) accepted %d %s headers", headersString(hs), seen[key], key)
			}
		}
		v, ok := Header(hs, HeaderDue)
		if !ok {
			t.Fatalf("Decode(%q) accepted a record without %s", headersString(hs), HeaderDue)
		}
		checkMillis(t, HeaderDue, v, m.Due)
		if ms := m.Due.UnixMilli(); ms < MinDueMillis || ms > MaxDueMillis {
			t.Fatalf("Decode(%q) accepted a due time of %d ms, outside %d to %d", headersString(hs), ms, MinDueMillis, MaxDueMillis)
		}
		if v, ok := Header(hs, HeaderScheduled); ok {
			checkMillis(t, HeaderScheduled, v, m.Scheduled)
		} else if !m.Scheduled.IsZero() {
			t.Fatalf("no %s, but Scheduled is %v", HeaderScheduled, m.Scheduled)
		}
		if v, ok := Header(hs, HeaderForwarded); ok {
			checkMillis(t, HeaderForwarded, v, m.Forwarded)
		} else if !m.Forwarded.IsZero() {
			t.Fatalf("no %s, but Forwarded is %v", HeaderForwarded, m.Forwarded)
		}
		if v, ok := Header(hs, HeaderVersion); ok && string(v) != "1" {
			t.Fatalf("Decode accepted %s %q", HeaderVersion, v)
		}
		if v, _ := Header(hs, HeaderTarget); m.Target != string(v) || m.Target != "" && ValidTopic(m.Target) != nil {
			t.Fatalf("%s %q: Target %q", HeaderTarget, v, m.Target)
		}
		if v, _ := Header(hs, HeaderKind); m.Kind != string(v) || len(m.Kind) > maxKindLen || !printable([]byte(m.Kind)) {
			t.Fatalf("%s %q: Kind %q", HeaderKind, v, m.Kind)
		}
		if v, _ := Header(hs, HeaderPath); m.Path != string(v) || len(m.Path) > maxPathLen || !printable([]byte(m.Path)) {
			t.Fatalf("%s %q: Path %q", HeaderPath, v, m.Path)
		}
		if m.Hops < 0 || m.Hops > maxCount || m.Attempt < 0 || m.Attempt > maxCount {
			t.Fatalf("Hops %d, Attempt %d: want 0 to %d", m.Hops, m.Attempt, maxCount)
		}

	})
}

// checkMillis checks that a time header was read as decimal digits and
// round-trips through FormatMillis. Leading zeros are accepted (see
// TestDecode), so the comparison is with the header without them.
func checkMillis(t *testing.T, key string, v []byte, got time.Time) {
	t.Helper()
	if len(v) == 0 || !allDigits(v) {
		t.Fatalf("Decode accepted %s %q, want digits only", key, v)
	}
	canonical := bytes.TrimLeft(v, "0")
	if len(canonical) == 0 {
		canonical = []byte("0")
	}
	if f := FormatMillis(got); !bytes.Equal(f, canonical) {
		t.Fatalf("%s %q decoded to %v; FormatMillis gives %q, want %q", key, v, got, f, canonical)
	}
}

// checkImplausible checks that a record refused as due_implausible has a due
// time of digits that, read as a number, is outside MinDueMillis to
// MaxDueMillis.
func checkImplausible(t *testing.T, hs []kgo.RecordHeader) {
	t.Helper()
	v, ok := Header(hs, HeaderDue)
	if !ok || len(v) == 0 || len(v) > maxMillisLen || !allDigits(v) {
		t.Fatalf("Decode(%q): due_implausible for a due time that is not 1 to 20 digits", headersString(hs))
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err == nil && n >= uint64(MinDueMillis) && n <= uint64(MaxDueMillis) {
		t.Fatalf("Decode(%q): due_implausible for %d ms, within %d to %d", headersString(hs), n, MinDueMillis, MaxDueMillis)
	}
}

// FuzzDecodeCancellation: any record of the cancellations topic decodes to a
// cancellation or an *InvalidError, never a panic; a decoded one names its
// task and, built again, decodes to the same (a tombstone has no due
// time).
func FuzzDecodeCancellation(f *testing.F) {
	f.Add([]byte("order-1"), []byte{0, 13, 0, '1', '7', '6', '7', '2', '2', '5', '6', '0', '0', '0', '0', '0'}, false)
	f.Add([]byte(""), []byte{2, 1, 0, '2'}, true)
	f.Fuzz(func(t *testing.T, key, headers []byte, tombstone bool) {
		r := &kgo.Record{Key: key, Value: []byte{}, Timestamp: time.UnixMilli(1_767_225_600_000), Headers: decodeFuzzHeaders(headers)}
		if tombstone {
			r.Value = nil
		}
		c, err := DecodeCancellation(r)
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *InvalidError", err)
			}
			return
		}
		if c.ID != string(key) || c.Withdrawn != tombstone {
			t.Fatalf("decoded %+v from key %q", c, key)
		}
		if !c.Due.IsZero() && PlausibleDue(c.Due) != nil {
			t.Fatalf("decoded %+v: its due time is not plausible", c)
		}
		again, err := BuildCancellation("p.", c)
		if err != nil {
			t.Fatalf("build %+v: %v", c, err)
		}
		c2, err := DecodeCancellation(again)
		if err != nil || c2.ID != c.ID || c2.Withdrawn != c.Withdrawn || (!c.Withdrawn && c2.Due.UnixMilli() != c.Due.UnixMilli()) {
			t.Fatalf("round trip of %+v: %+v, %v", c, c2, err)
		}
	})
}
