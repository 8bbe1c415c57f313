package record

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/testutil/headers"
	"github.com/hourglass/hourglass/pkg/tiers"
)

var (
	hdrs          = headers.Of
	headersString = headers.String
	equalHeaders  = headers.Equal
)

func TestCheckDue(t *testing.T) {
	t.Parallel()

	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		due        time.Time
		maxDelay   time.Duration
		wantReason tiers.Reason // "" means no error
	}{
		{name: "past due", due: now.Add(-time.Hour), maxDelay: time.Hour},
		{name: "long past due", due: time.UnixMilli(0), maxDelay: time.Hour},
		{name: "now", due: now, maxDelay: time.Hour},
		{name: "within", due: now.Add(59 * time.Minute), maxDelay: time.Hour},
		{name: "exactly the maximum", due: now.Add(time.Hour), maxDelay: time.Hour},
		{name: "one millisecond over", due: now.Add(time.Hour + time.Millisecond), maxDelay: time.Hour, wantReason: tiers.ReasonDueTooFar},
		{name: "year 9999", due: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), maxDelay: 400 * 24 * time.Hour, wantReason: tiers.ReasonDueTooFar},
		{name: "18-digit due", due: time.UnixMilli(999999999999999999), maxDelay: 400 * 24 * time.Hour, wantReason: tiers.ReasonDueTooFar},
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
		var ie *tiers.InvalidError
		if !errors.As(err, &ie) || ie.Reason != tt.wantReason {
			t.Errorf("%s: CheckDue(%v, %v, %v) = %v, want a *tiers.InvalidError with reason %s", tt.name, tt.due, now, tt.maxDelay, err, tt.wantReason)
		}
	}

	err := CheckDue(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), now, 24*time.Hour)
	if want := "due_too_far: due 9999-01-01T00:00:00Z is more than the maximum delay 24h0m0s away"; err == nil || err.Error() != want {
		t.Errorf("CheckDue error = %v, want %q", err, want)
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
			in:   nil, key: tiers.HeaderHops, value: "1",
			want: hdrs(tiers.HeaderHops, "1"),
		},
		{
			name: "append",
			in:   hdrs(tiers.HeaderDue, "5", "x-trace", "t"), key: tiers.HeaderHops, value: "1",
			want: hdrs(tiers.HeaderDue, "5", "x-trace", "t", tiers.HeaderHops, "1"),
		},
		{
			name: "replace in place",
			in:   hdrs(tiers.HeaderDue, "5", tiers.HeaderHops, "1", "x-trace", "t"), key: tiers.HeaderHops, value: "2",
			want: hdrs(tiers.HeaderDue, "5", tiers.HeaderHops, "2", "x-trace", "t"),
		},
		{
			name: "replace the first and drop the others",
			in:   hdrs(tiers.HeaderHops, "1", "x-trace", "t", tiers.HeaderHops, "7", tiers.HeaderHops, "9"), key: tiers.HeaderHops, value: "2",
			want: hdrs(tiers.HeaderHops, "2", "x-trace", "t"),
		},
		{
			name: "keys are case sensitive",
			in:   hdrs("Hourglass-Hops", "1"), key: tiers.HeaderHops, value: "2",
			want: hdrs("Hourglass-Hops", "1", tiers.HeaderHops, "2"),
		},
		{
			name: "empty value",
			in:   hdrs(tiers.HeaderPath, "30m"), key: tiers.HeaderPath, value: "",
			want: hdrs(tiers.HeaderPath, ""),
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
			if _, err := tiers.Decode(hdrs(tiers.HeaderDue, "1767225600000", tiers.HeaderPath, path)); err != nil {
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
		if want := tiers.Name(seq[0]) + "," + tiers.Name(seq[1%len(seq)]); !strings.HasPrefix(path, want) {
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
		_, err := tiers.Decode(hdrs(tiers.HeaderDue, "1767225600000", tiers.HeaderPath, got))
		if len(got) > 1024 || !strings.HasSuffix(got, ",...") || err != nil {
			t.Errorf("AppendPath(<%d bytes>, 1m) = <%d bytes ending %q> (%v), want at most 1024 bytes ending with \",...\" that decode", len(long), len(got), got[max(0, len(got)-8):], err)
		}
	}

	// maxPathBytes is the limit of tiers.Decode.
	if _, err := tiers.Decode(hdrs(tiers.HeaderDue, "1767225600000", tiers.HeaderPath, strings.Repeat("p", maxPathBytes))); err != nil {
		t.Errorf("a path of maxPathBytes does not decode: %v", err)
	}
	if _, err := tiers.Decode(hdrs(tiers.HeaderDue, "1767225600000", tiers.HeaderPath, strings.Repeat("p", maxPathBytes+1))); err == nil {
		t.Errorf("a path of maxPathBytes+1 decodes; maxPathBytes is not tiers.Decode's limit")
	}
}

// TestContract checks contract against tiers.Decode: Decode refuses a
// contract header given twice and ignores any other header.
func TestContract(t *testing.T) {
	for _, key := range []string{
		tiers.HeaderDue, tiers.HeaderTarget, tiers.HeaderVersion, tiers.HeaderKind, tiers.HeaderScheduled,
		tiers.HeaderHops, tiers.HeaderPath, tiers.HeaderForwarded, tiers.HeaderAttempt, tiers.HeaderDeadline,
		tiers.HeaderReason, tiers.HeaderSource, tiers.HeaderDeadAt, tiers.HeaderTruncated, "hourglass-other", "x-trace",
	} {
		hs := hdrs(key, "1", key, "1")
		if key == tiers.HeaderDue {
			hs = hdrs(key, "1767225600000", key, "1767225600000")
		} else {
			hs = append(hs, hdrs(tiers.HeaderDue, "1767225600000")...)
		}
		_, err := tiers.Decode(hs)
		if got := ReasonOf(err, "") == tiers.ReasonDuplicateHeader; got != contract[key] {
			t.Errorf("%s: in contract %v, but tiers.Decode of it twice: %v", key, contract[key], err)
		}
	}
}
