package democmd

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestThousands(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {12345, "12,345"}, {999999, "999,999"},
		{1000000, "1,000,000"}, {-1234, "-1,234"}, {-12, "-12"},
	} {
		if got := thousands(tt.n); got != tt.want {
			t.Errorf("thousands(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestLateness(t *testing.T) {
	for _, tt := range []struct {
		ms   int64
		want string
	}{
		{0, "0ms"}, {12, "12ms"}, {999, "999ms"}, {1000, "1.0s"}, {1299, "1.2s"}, {59_999, "59.9s"},
		{60_000, "1m0s"}, {123_456, "2m3s"}, {3_599_000, "59m59s"},
	} {
		if got := lateness(tt.ms); got != tt.want {
			t.Errorf("lateness(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

// TestProgressWidth: the progress line fits in 100 columns at the most
// orders --orders allows, and its columns line up with the header's.
func TestProgressWidth(t *testing.T) {
	lines := []progress{
		{elapsed: 2 * time.Second, scheduled: 100, orders: 300, closed: 60, paid: 20, pending: 20, p50: 0, p99: 1, max: 4},
		{elapsed: 20_000 * time.Second, scheduled: 1_000_000, orders: 1_000_000, closed: 1_000_000, paid: 1_000_000,
			pending: 1_000_000, p50: 999, p99: 59_999, max: 3_599_999},
	}
	header := progressHeader
	if w := utf8.RuneCountInString(header); w > 100 {
		t.Errorf("header is %d columns wide, want at most 100", w)
	}
	for _, p := range lines {
		l := p.line()
		if w := utf8.RuneCountInString(l); w > 100 {
			t.Errorf("progress line is %d columns wide, want at most 100:\n%s", w, l)
		}
		if len(l) != len(header) {
			t.Errorf("line and header differ in width (%d, %d):\n%s\n%s", len(l), len(header), header, l)
		}
		// Each column is right-aligned under its name.
		for _, name := range []string{"scheduled", "closed", "paid", "pending", "p50", "p99", "max"} {
			end := strings.Index(header, name) + len(name)
			if l[end-1] == ' ' || (end < len(l) && l[end] != ' ') {
				t.Errorf("column %s does not end at column %d:\n%s\n%s", name, end, header, l)
			}
		}
	}
	t.Logf("\n%s\n%s", header, lines[1].line())
}
