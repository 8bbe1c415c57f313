package schedulecmd

import (
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/record"
)

// TestRelativeSubMillisecond: an acknowledgement before the due time is
// reported as before it, however close: rounded to the millisecond, one
// less than half a millisecond before read "0s after the due time" while
// the command exited 0 (in time).
func TestRelativeSubMillisecond(t *testing.T) {
	due := time.UnixMilli(1_800_000_000_000)
	for _, tc := range []struct {
		acked time.Time
		want  string
	}{
		{due.Add(-400 * time.Microsecond), "before the due time"},
		{due.Add(-2 * time.Millisecond), "2ms before the due time"},
		{due, "0s after the due time"},
		{due.Add(400 * time.Microsecond), "after the due time"},
	} {
		if got := relative(tc.acked, due); !strings.Contains(got, tc.want) {
			t.Errorf("acknowledged %v from the due time: %q, want it to say %q", tc.acked.Sub(due), got, tc.want)
		}
	}
}

// TestParseTimeMilliseconds: a time is read to the millisecond, the
// precision of hourglass-due, so that what the command judges and prints
// is the due time of the deadline the record names.
func TestParseTimeMilliseconds(t *testing.T) {
	got, err := record.ParseDue("2026-05-14T12:30:00.000600Z")
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 5, 14, 12, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("parseTime: %v, want %v", got, want)
	}
}
