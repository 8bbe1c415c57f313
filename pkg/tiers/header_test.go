package tiers

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/testutil/headers"
)

var (
	hdrs          = headers.Of
	headersString = headers.String
	equalHeaders  = headers.Equal
)

func TestDecode(t *testing.T) {
	t.Parallel()

	const due = "1767225600000" // 2026-01-01T00:00:00Z
	dueTime := time.UnixMilli(1767225600000)

	tests := []struct {
		name       string
		headers    []kgo.RecordHeader
		want       Meta
		wantReason Reason // "" means no error
	}{
		{
			name:    "due only",
			headers: hdrs(HeaderDue, due),
			want:    Meta{Due: dueTime},
		},
		{
			name: "every header of ours",
			headers: hdrs(
				HeaderDue, due,
				HeaderVersion, "1",
				HeaderTarget, "orders.close",
				HeaderKind, "order-timeout",
				HeaderScheduled, "1767223800000",
				HeaderForwarded, "1767225600042",
				HeaderHops, "3",
				HeaderPath, "30m*2,5m",
				HeaderAttempt, "2",
				HeaderDeadline, "1767225500000",
			),
			want: Meta{
				Due:       dueTime,
				Target:    "orders.close",
				Kind:      "order-timeout",
				Scheduled: time.UnixMilli(1767223800000),
				Forwarded: time.UnixMilli(1767225600042),
				Hops:      3,
				Path:      "30m*2,5m",
				Attempt:   2,
				Deadline:  time.UnixMilli(1767225500000),
			},
		},
		{
			name:    "due last among other headers",
			headers: hdrs("traceparent", "00-abc-def-01", HeaderKind, "reminder", HeaderDue, due),
			want:    Meta{Due: dueTime, Kind: "reminder"},
		},
		{name: "due long past", headers: hdrs(HeaderDue, "946684800000"), want: Meta{Due: time.UnixMilli(946684800000)}},
		{name: "due in the year 9999", headers: hdrs(HeaderDue, "253402300799999"), want: Meta{Due: time.UnixMilli(253402300799999)}},
		// Leading zeros are decimal ASCII too; the value is unambiguous.
		{name: "due with leading zeros", headers: hdrs(HeaderDue, "00"+due), want: Meta{Due: dueTime}},
		// Padded to the width of an int64 (19) or a uint64 (20): the time it
		// says, not due_not_a_number.
		{name: "due padded to 19 digits", headers: hdrs(HeaderDue, "000000"+due), want: Meta{Due: dueTime}},
		{name: "due padded to 20 digits", headers: hdrs(HeaderDue, "0000000"+due), want: Meta{Due: dueTime}},
		{name: "scheduled padded to 20 digits", headers: hdrs(HeaderDue, due, HeaderScheduled, "0000000"+due), want: Meta{Due: dueTime, Scheduled: dueTime}},
		{
			name:    "headers that are not ours are ignored",
			headers: hdrs(HeaderDue, due, "due", "abc", "Hourglass-Due", "x", "x-hourglass-due", "-1", "content-type", "application/json"),
			want:    Meta{Due: dueTime},
		},
		{
			name:    "unknown headers of ours are ignored, even twice and malformed",
			headers: hdrs(HeaderDue, due, "hourglass-foo", "\x00", "hourglass-foo", "bar", "hourglass-", ""),
			want:    Meta{Due: dueTime},
		},
		{
			name:    "dead-letter headers are not read",
			headers: hdrs(HeaderDue, due, HeaderReason, "due_empty: x", HeaderReason, "again", HeaderSource, "t[0]@1", HeaderDeadAt, "soon"),
			want:    Meta{Due: dueTime},
		},
		{name: "empty kind is the default kind", headers: hdrs(HeaderDue, due, HeaderKind, ""), want: Meta{Due: dueTime}},
		{name: "kind with non-ASCII", headers: hdrs(HeaderDue, due, HeaderKind, "Bestellung schließen"), want: Meta{Due: dueTime, Kind: "Bestellung schließen"}},
		{name: "longest kind", headers: hdrs(HeaderDue, due, HeaderKind, strings.Repeat("k", 128)), want: Meta{Due: dueTime, Kind: strings.Repeat("k", 128)}},
		{name: "longest path", headers: hdrs(HeaderDue, due, HeaderPath, strings.Repeat("p", 1024)), want: Meta{Due: dueTime, Path: strings.Repeat("p", 1024)}},
		{name: "largest count", headers: hdrs(HeaderDue, due, HeaderHops, "1000000"), want: Meta{Due: dueTime, Hops: 1000000}},

		// Due.
		{name: "no headers", headers: nil, wantReason: ReasonDueMissing},
		{name: "missing due", headers: hdrs(HeaderTarget, "orders.close", "x-due", due), wantReason: ReasonDueMissing},
		{name: "due in another case", headers: hdrs("Hourglass-Due", due), wantReason: ReasonDueMissing},
		{name: "empty due", headers: hdrs(HeaderDue, ""), wantReason: ReasonDueEmpty},
		{name: "due abc", headers: hdrs(HeaderDue, "abc"), wantReason: ReasonDueNotNumber},
		{name: "due with leading space", headers: hdrs(HeaderDue, " 5"), wantReason: ReasonDueNotNumber},
		{name: "due with trailing newline", headers: hdrs(HeaderDue, "5\n"), wantReason: ReasonDueNotNumber},
		{name: "due with plus sign", headers: hdrs(HeaderDue, "+5"), wantReason: ReasonDueNotNumber},
		{name: "due with fraction", headers: hdrs(HeaderDue, "1.5"), wantReason: ReasonDueNotNumber},
		{name: "due in hex", headers: hdrs(HeaderDue, "0x10"), wantReason: ReasonDueNotNumber},
		{name: "due in RFC 3339", headers: hdrs(HeaderDue, "2026-01-01T00:00:00Z"), wantReason: ReasonDueNotNumber},
		{name: "due in seconds with exponent", headers: hdrs(HeaderDue, "1.7e12"), wantReason: ReasonDueNotNumber},
		{name: "due zero", headers: hdrs(HeaderDue, "0"), wantReason: ReasonDueImplausible},
		{name: "due in seconds", headers: hdrs(HeaderDue, "1767225600"), wantReason: ReasonDueImplausible},
		{name: "due in microseconds", headers: hdrs(HeaderDue, due+"000"), wantReason: ReasonDueImplausible},
		{name: "due with 18 digits", headers: hdrs(HeaderDue, "999999999999999999"), wantReason: ReasonDueImplausible},
		{name: "due with 19 digits", headers: hdrs(HeaderDue, "1000000000000000000"), wantReason: ReasonDueImplausible},
		{name: "due above the largest uint64", headers: hdrs(HeaderDue, "99999999999999999999"), wantReason: ReasonDueImplausible},
		{name: "due padded past 20 digits", headers: hdrs(HeaderDue, "00000000"+due), wantReason: ReasonDueNotNumber},
		{name: "due is a minus sign", headers: hdrs(HeaderDue, "-"), wantReason: ReasonDueNotNumber},
		{name: "due negative", headers: hdrs(HeaderDue, "-5"), wantReason: ReasonDueNegative},
		{name: "due negative and long", headers: hdrs(HeaderDue, "-99999999999999999999"), wantReason: ReasonDueNegative},
		{name: "duplicate due", headers: hdrs(HeaderDue, due, HeaderDue, due), wantReason: ReasonDuplicateHeader},
		{name: "duplicate due, second one invalid", headers: hdrs(HeaderDue, due, HeaderDue, "abc"), wantReason: ReasonDuplicateHeader},
		{name: "duplicate target", headers: hdrs(HeaderDue, due, HeaderTarget, "a", HeaderTarget, "b"), wantReason: ReasonDuplicateHeader},

		// Version.
		{name: "version 1", headers: hdrs(HeaderDue, due, HeaderVersion, "1"), want: Meta{Due: dueTime}},
		{name: "version 2", headers: hdrs(HeaderDue, due, HeaderVersion, "2"), wantReason: ReasonVersionUnsupported},
		{name: "version 01", headers: hdrs(HeaderDue, due, HeaderVersion, "01"), wantReason: ReasonVersionUnsupported},
		{name: "empty version", headers: hdrs(HeaderDue, due, HeaderVersion, ""), wantReason: ReasonVersionUnsupported},
		{name: "version before a missing due", headers: hdrs(HeaderVersion, "2"), wantReason: ReasonVersionUnsupported},

		// Target.
		{name: "target with spaces", headers: hdrs(HeaderDue, due, HeaderTarget, "orders close"), wantReason: ReasonTargetInvalid},
		{name: "target too long", headers: hdrs(HeaderDue, due, HeaderTarget, strings.Repeat("t", 250)), wantReason: ReasonTargetInvalid},
		{name: "empty target", headers: hdrs(HeaderDue, due, HeaderTarget, ""), wantReason: ReasonTargetInvalid},
		{name: "target dot dot", headers: hdrs(HeaderDue, due, HeaderTarget, ".."), wantReason: ReasonTargetInvalid},

		// Kind and path.
		{name: "kind with newline", headers: hdrs(HeaderDue, due, HeaderKind, "order\ntimeout"), wantReason: ReasonHeaderInvalid},
		{name: "kind with NUL", headers: hdrs(HeaderDue, due, HeaderKind, "order\x00"), wantReason: ReasonHeaderInvalid},
		{name: "kind with DEL", headers: hdrs(HeaderDue, due, HeaderKind, "order\x7f"), wantReason: ReasonHeaderInvalid},
		{name: "kind with escape", headers: hdrs(HeaderDue, due, HeaderKind, "\x1b[31mred"), wantReason: ReasonHeaderInvalid},
		{name: "kind not UTF-8", headers: hdrs(HeaderDue, due, HeaderKind, "order\xff"), wantReason: ReasonHeaderInvalid},
		{name: "kind too long", headers: hdrs(HeaderDue, due, HeaderKind, strings.Repeat("k", 129)), wantReason: ReasonHeaderInvalid},
		{name: "path too long", headers: hdrs(HeaderDue, due, HeaderPath, strings.Repeat("p", 1025)), wantReason: ReasonHeaderInvalid},
		{name: "path with tab", headers: hdrs(HeaderDue, due, HeaderPath, "30m\t5m"), wantReason: ReasonHeaderInvalid},

		// Times and counts.
		{name: "scheduled not a number", headers: hdrs(HeaderDue, due, HeaderScheduled, "yesterday"), wantReason: ReasonHeaderInvalid},
		{name: "scheduled negative", headers: hdrs(HeaderDue, due, HeaderScheduled, "-1"), wantReason: ReasonHeaderInvalid},
		{name: "empty forwarded", headers: hdrs(HeaderDue, due, HeaderForwarded, ""), wantReason: ReasonHeaderInvalid},
		{name: "hops negative", headers: hdrs(HeaderDue, due, HeaderHops, "-1"), wantReason: ReasonHeaderInvalid},
		{name: "hops above the limit", headers: hdrs(HeaderDue, due, HeaderHops, "1000001"), wantReason: ReasonHeaderInvalid},
		{name: "hops with 8 digits", headers: hdrs(HeaderDue, due, HeaderHops, "00000001"), wantReason: ReasonHeaderInvalid},
		{name: "attempt not a number", headers: hdrs(HeaderDue, due, HeaderAttempt, "two"), wantReason: ReasonHeaderInvalid},
		{name: "deadline not a number", headers: hdrs(HeaderDue, due, HeaderDeadline, "soon"), wantReason: ReasonHeaderInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Decode(tt.headers)
			if tt.wantReason != "" {
				var ie *InvalidError
				if !errors.As(err, &ie) {
					t.Fatalf("Decode(%s) = %+v, %v; want an *InvalidError with reason %s", headersString(tt.headers), got, err, tt.wantReason)
				}
				if ie.Reason != tt.wantReason {
					t.Errorf("Decode(%s): reason %s (%v), want %s", headersString(tt.headers), ie.Reason, err, tt.wantReason)
				}
				if ie.Detail == "" {
					t.Errorf("Decode(%s): empty Detail", headersString(tt.headers))
				}
				if want := string(ie.Reason) + ": " + ie.Detail; err.Error() != want {
					t.Errorf("Error() = %q, want %q", err.Error(), want)
				}
				if got != (Meta{}) {
					t.Errorf("Decode(%s) returned %+v with its error, want the zero Meta", headersString(tt.headers), got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%s): %v", headersString(tt.headers), err)
			}
			if !metaEqual(got, tt.want) {
				t.Errorf("Decode(%s)\n got %+v\nwant %+v", headersString(tt.headers), got, tt.want)
			}
		})
	}
}

func metaEqual(a, b Meta) bool {
	return a.Due.Equal(b.Due) && a.Scheduled.Equal(b.Scheduled) && a.Forwarded.Equal(b.Forwarded) &&
		a.Target == b.Target && a.Kind == b.Kind && a.Path == b.Path && a.Hops == b.Hops && a.Attempt == b.Attempt &&
		a.Deadline.Equal(b.Deadline)
}

// TestDecodeClipsDetail checks that a hostile value does not end up whole in
// the error (which becomes a dead-letter header and a log line).
func TestDecodeClipsDetail(t *testing.T) {
	t.Parallel()

	long := strings.Repeat("x", 10_000)
	for _, key := range []string{HeaderDue, HeaderVersion, HeaderScheduled, HeaderHops} {
		_, err := Decode(hdrs(HeaderDue, "1767225600000", key, long))
		if key == HeaderDue {
			_, err = Decode(hdrs(key, long))
		}
		if err == nil {
			t.Fatalf("%s of 10000 bytes: no error", key)
		}
		if len(err.Error()) > 200 {
			t.Errorf("%s of 10000 bytes: error is %d bytes long: %.80q...", key, len(err.Error()), err)
		}
	}
	// A clipped value stays valid UTF-8 even when the cut splits a rune.
	_, err := Decode(hdrs(HeaderDue, strings.Repeat("é", 100)))
	if err == nil || !strings.HasSuffix(err.Error(), `..."; want unix milliseconds as decimal digits`) {
		t.Errorf("due of 100 runes: error %v, want a clipped value", err)
	}
	if !strings.Contains(err.Error(), "ééé") || strings.ContainsRune(err.Error(), '\uFFFD') {
		t.Errorf("due of 100 runes: error %q, want the start of the value and no replacement characters", err)
	}
}

func TestFormatMillis(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in   time.Time
		want string
	}{
		{in: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), want: "1767225600000"},
		{in: time.Date(2026, 1, 1, 1, 0, 0, 0, time.FixedZone("CET", 3600)), want: "1767225600000"},
		{in: time.Date(2026, 1, 1, 0, 0, 0, 999_999, time.UTC), want: "1767225600000"}, // truncated, not rounded
		{in: time.Date(2026, 1, 1, 0, 0, 0, 1_000_000, time.UTC), want: "1767225600001"},
		{in: time.UnixMilli(MinDueMillis), want: "946684800000"},
	}
	for _, tt := range tests {
		got := string(FormatMillis(tt.in))
		if got != tt.want {
			t.Errorf("FormatMillis(%v) = %q, want %q", tt.in, got, tt.want)
		}
		m, err := Decode(hdrs(HeaderDue, got))
		if err != nil || m.Due.UnixMilli() != tt.in.UnixMilli() {
			t.Errorf("Decode(FormatMillis(%v)) = %v, %v; want %d ms", tt.in, m.Due, err, tt.in.UnixMilli())
		}
	}
}

func TestHeader(t *testing.T) {
	t.Parallel()

	hs := hdrs("x-trace", "t", HeaderDue, "5", HeaderDue, "6", HeaderPath, "")
	tests := []struct {
		key    string
		want   string
		wantOK bool
	}{
		{key: HeaderDue, want: "5", wantOK: true},
		{key: HeaderPath, want: "", wantOK: true},
		{key: "x-trace", want: "t", wantOK: true},
		{key: HeaderTarget},
		{key: "Hourglass-Due"},
	}
	for _, tt := range tests {
		got, ok := Header(hs, tt.key)
		if string(got) != tt.want || ok != tt.wantOK {
			t.Errorf("Header(%s) = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestDecodeRecord(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		record     *kgo.Record
		want       Meta
		wantReason Reason // "" means no error
	}{
		{name: "valid", record: &kgo.Record{Key: []byte("order-1"), Headers: hdrs(HeaderDue, "1767225600000")}, want: Meta{Due: time.UnixMilli(1767225600000)}},
		{name: "no key", record: &kgo.Record{Headers: hdrs(HeaderDue, "5")}, wantReason: ReasonKeyMissing},
		{name: "empty key", record: &kgo.Record{Key: []byte{}, Headers: hdrs(HeaderDue, "5")}, wantReason: ReasonKeyMissing},
		{name: "no key and no due: the key is checked first", record: &kgo.Record{}, wantReason: ReasonKeyMissing},
		{name: "bad headers", record: &kgo.Record{Key: []byte("order-1"), Headers: hdrs(HeaderDue, "-5")}, wantReason: ReasonDueNegative},
	}
	for _, tt := range tests {
		got, err := DecodeRecord(tt.record)
		if tt.wantReason == "" {
			if err != nil || !metaEqual(got, tt.want) {
				t.Errorf("%s: DecodeRecord = %+v, %v; want %+v, nil", tt.name, got, err, tt.want)
			}
			continue
		}
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Reason != tt.wantReason {
			t.Errorf("%s: DecodeRecord = %+v, %v; want an *InvalidError with reason %s", tt.name, got, err, tt.wantReason)
		}
	}
}
