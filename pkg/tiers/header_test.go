package tiers

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// hdrs builds record headers from key, value pairs.
func hdrs(kv ...string) []kgo.RecordHeader {
	if len(kv)%2 != 0 {
		panic("hdrs: odd number of arguments")
	}
	var out []kgo.RecordHeader
	for i := 0; i < len(kv); i += 2 {
		out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}

// headersString formats headers for failure messages.
func headersString(hs []kgo.RecordHeader) string {
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(h.Key + "=" + string(h.Value))
	}
	return b.String()
}

func equalHeaders(a, b []kgo.RecordHeader) bool {
	return slices.EqualFunc(a, b, func(x, y kgo.RecordHeader) bool {
		return x.Key == y.Key && string(x.Value) == string(y.Value)
	})
}

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
		{name: "due zero is 1970", headers: hdrs(HeaderDue, "0"), want: Meta{Due: time.UnixMilli(0)}},
		{name: "due with 18 digits", headers: hdrs(HeaderDue, "999999999999999999"), want: Meta{Due: time.UnixMilli(999999999999999999)}},
		// Leading zeros are decimal ASCII too; the value is unambiguous.
		{name: "due with leading zeros", headers: hdrs(HeaderDue, "007"), want: Meta{Due: time.UnixMilli(7)}},
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
		{name: "due with 19 digits", headers: hdrs(HeaderDue, "1000000000000000000"), wantReason: ReasonDueNotNumber},
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
		_, err := Decode(hdrs(HeaderDue, "1", key, long))
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

func TestCheckDue(t *testing.T) {
	t.Parallel()

	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		due        time.Time
		maxDelay   time.Duration
		wantReason Reason // "" means no error
	}{
		{name: "past due", due: now.Add(-time.Hour), maxDelay: time.Hour},
		{name: "long past due", due: time.UnixMilli(0), maxDelay: time.Hour},
		{name: "now", due: now, maxDelay: time.Hour},
		{name: "within", due: now.Add(59 * time.Minute), maxDelay: time.Hour},
		{name: "exactly the maximum", due: now.Add(time.Hour), maxDelay: time.Hour},
		{name: "one millisecond over", due: now.Add(time.Hour + time.Millisecond), maxDelay: time.Hour, wantReason: ReasonDueTooFar},
		{name: "year 9999", due: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), maxDelay: 400 * 24 * time.Hour, wantReason: ReasonDueTooFar},
		{name: "18-digit due", due: time.UnixMilli(999999999999999999), maxDelay: 400 * 24 * time.Hour, wantReason: ReasonDueTooFar},
		{name: "maxDelay 0 disables", due: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), maxDelay: 0},
		{name: "negative maxDelay disables", due: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), maxDelay: -time.Hour},
	}
	for _, tt := range tests {
		err := CheckDue(tt.due, now, tt.maxDelay)
		if tt.wantReason == "" {
			if err != nil {
				t.Errorf("%s: CheckDue(%v, %v, %v) = %v, want nil", tt.name, tt.due, now, tt.maxDelay, err)
			}
			continue
		}
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Reason != tt.wantReason {
			t.Errorf("%s: CheckDue(%v, %v, %v) = %v, want an *InvalidError with reason %s", tt.name, tt.due, now, tt.maxDelay, err, tt.wantReason)
		}
	}

	err := CheckDue(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), now, 24*time.Hour)
	if want := "due_too_far: due 9999-01-01T00:00:00Z is more than the maximum delay 24h0m0s away"; err == nil || err.Error() != want {
		t.Errorf("CheckDue error = %v, want %q", err, want)
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
		{in: time.UnixMilli(0), want: "0"},
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

func TestSetHeader(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		in    []kgo.RecordHeader
		key   string
		value string
		want  []kgo.RecordHeader
	}{
		{
			name: "append to none",
			in:   nil, key: HeaderHops, value: "1",
			want: hdrs(HeaderHops, "1"),
		},
		{
			name: "append",
			in:   hdrs(HeaderDue, "5", "x-trace", "t"), key: HeaderHops, value: "1",
			want: hdrs(HeaderDue, "5", "x-trace", "t", HeaderHops, "1"),
		},
		{
			name: "replace in place",
			in:   hdrs(HeaderDue, "5", HeaderHops, "1", "x-trace", "t"), key: HeaderHops, value: "2",
			want: hdrs(HeaderDue, "5", HeaderHops, "2", "x-trace", "t"),
		},
		{
			name: "replace the first and drop the others",
			in:   hdrs(HeaderHops, "1", "x-trace", "t", HeaderHops, "7", HeaderHops, "9"), key: HeaderHops, value: "2",
			want: hdrs(HeaderHops, "2", "x-trace", "t"),
		},
		{
			name: "keys are case sensitive",
			in:   hdrs("Hourglass-Hops", "1"), key: HeaderHops, value: "2",
			want: hdrs("Hourglass-Hops", "1", HeaderHops, "2"),
		},
		{
			name: "empty value",
			in:   hdrs(HeaderPath, "30m"), key: HeaderPath, value: "",
			want: hdrs(HeaderPath, ""),
		},
	}
	for _, tt := range tests {
		orig := slices.Clone(tt.in)
		got := SetHeader(tt.in, tt.key, []byte(tt.value))
		if !equalHeaders(got, tt.want) {
			t.Errorf("%s: SetHeader(%s, %s, %q) = %s, want %s", tt.name, headersString(orig), tt.key, tt.value, headersString(got), headersString(tt.want))
		}
		// The input is left as it was: a record being forwarded may share
		// its header slice with the record still held for retry.
		if !equalHeaders(tt.in, orig) {
			t.Errorf("%s: SetHeader changed its input to %s, want %s", tt.name, headersString(tt.in), headersString(orig))
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

func TestAppendPath(t *testing.T) {
	t.Parallel()

	const (
		m1  = time.Minute
		m5  = 5 * time.Minute
		m30 = 30 * time.Minute
	)
	tests := []struct {
		path string
		tier time.Duration
		want string
	}{
		{path: "", tier: m30, want: "30m"},
		{path: "30m", tier: m30, want: "30m*2"},
		{path: "30m*2", tier: m30, want: "30m*3"},
		{path: "30m*9", tier: m30, want: "30m*10"},
		{path: "30m*2", tier: m5, want: "30m*2,5m"},
		{path: "30m*2,5m", tier: m1, want: "30m*2,5m,1m"},
		{path: "30m*2,5m,1m", tier: m1, want: "30m*2,5m,1m*2"},
		{path: "30m,5m", tier: m30, want: "30m,5m,30m"},
		{path: "", tier: 90 * time.Minute, want: "1h30m"},
		{path: "1h30m", tier: 90 * time.Minute, want: "1h30m*2"},
		{path: "", tier: 1500 * time.Millisecond, want: "1s500ms"},
		// Paths written by someone else: a count that is not a number
		// counts as one.
		{path: "30m*x", tier: m30, want: "30m*2"},
		{path: "30m*", tier: m30, want: "30m*2"},
		// A cut path stays cut.
		{path: "30m,...", tier: m5, want: "30m,..."},
	}
	for _, tt := range tests {
		if got := AppendPath(tt.path, tt.tier); got != tt.want {
			t.Errorf("AppendPath(%q, %v) = %q, want %q", tt.path, tt.tier, got, tt.want)
		}
	}
}

// TestAppendPathLimit checks the length cap: a path that would grow past
// its limit keeps its older part, ends with "...", and still decodes.
func TestAppendPathLimit(t *testing.T) {
	t.Parallel()

	// Alternate tiers so that every hop adds an entry. 1m,30m lands a
	// path exactly where the cut mark did not fit before (1021 bytes).
	seqs := [][]time.Duration{
		{time.Minute, 30 * time.Minute},
		{time.Minute, 5 * time.Minute},
		{30 * time.Minute, 5 * time.Minute, time.Minute},
		{1500 * time.Millisecond, 90 * time.Minute},
	}
	for _, seq := range seqs {
		path := ""
		cut := -1
		for i := 0; i < 1000; i++ {
			path = AppendPath(path, seq[i%len(seq)])
			if _, err := Decode(hdrs(HeaderDue, "1", HeaderPath, path)); err != nil {
				t.Fatalf("tiers %v, hop %d: path of %d bytes does not decode: %v", seq, i, len(path), err)
			}
			if cut < 0 && strings.HasSuffix(path, "...") {
				cut = i
			}
		}
		if cut < 0 {
			t.Fatalf("tiers %v: path of %d bytes after 1000 hops was not cut", seq, len(path))
		}
		if !strings.HasSuffix(path, ",...") || len(path) > 1024 {
			t.Errorf("tiers %v: cut path is %d bytes, ends %q; want at most 1024 bytes ending with \",...\"", seq, len(path), path[len(path)-10:])
		}
		if want := Name(seq[0]) + "," + Name(seq[1%len(seq)]); !strings.HasPrefix(path, want) {
			t.Errorf("tiers %v: cut path starts %q, want the older part %q kept", seq, path[:20], want)
		}
	}

	// A run whose count grows a digit at the limit is cut too. Both paths
	// are 1020 bytes, the longest AppendPath leaves uncut.
	for _, tt := range []struct {
		path string
		want string
	}{
		{path: "30m,30m," + strings.Repeat("5m,", 336) + "1m*9", want: "30m,30m," + strings.Repeat("5m,", 336) + "1m*9,..."},
		{path: "30m," + strings.Repeat("5m,", 337) + "1m*99", want: "30m," + strings.Repeat("5m,", 337) + "1m*99,..."},
		{path: "30m," + strings.Repeat("5m,", 337) + "1m*98", want: "30m," + strings.Repeat("5m,", 337) + "1m*99"},
	} {
		if len(tt.path) != 1020 {
			t.Fatalf("test path is %d bytes, want 1020", len(tt.path))
		}
		got := AppendPath(tt.path, time.Minute)
		if got != tt.want {
			t.Errorf("AppendPath(<%d bytes ending %q>, 1m) = <%d bytes ending %q>, want <%d bytes ending %q>",
				len(tt.path), tt.path[len(tt.path)-8:], len(got), got[max(0, len(got)-8):], len(tt.want), tt.want[len(tt.want)-8:])
		}
	}

	// A path from elsewhere at the decoder's limit is cut to make room for
	// the mark, on a rune boundary.
	for _, long := range []string{strings.Repeat("p", 1024), strings.Repeat("ä", 512), "x" + strings.Repeat("ä", 511) + "y"} {
		got := AppendPath(long, time.Minute)
		if len(got) > 1024 || !strings.HasSuffix(got, ",...") || !printable([]byte(got)) {
			t.Errorf("AppendPath(<%d bytes>, 1m) = <%d bytes ending %q>, want at most 1024 printable bytes ending with \",...\"", len(long), len(got), got[max(0, len(got)-8):])
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
		{name: "valid", record: &kgo.Record{Key: []byte("order-1"), Headers: hdrs(HeaderDue, "5")}, want: Meta{Due: time.UnixMilli(5)}},
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
