package tiers

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDecodeDue: hourglass-due is read as unix milliseconds from 2000 to
// 9999; a due time written in another unit is due_implausible, and its
// detail names the unit it looks like and the value in milliseconds.
func TestDecodeDue(t *testing.T) {
	t.Parallel()

	const ms = "1767225600000" // 2026-01-01T00:00:00Z
	tests := []struct {
		name       string
		value      string
		wantMillis int64
		wantReason Reason // "" means no error
		wantDetail string
	}{
		{name: "milliseconds", value: ms, wantMillis: 1767225600000},
		{name: "first instant of 2000", value: "946684800000", wantMillis: MinDueMillis},
		{name: "last instant of 9999", value: "253402300799999", wantMillis: MaxDueMillis},
		{name: "padded to 20 digits", value: "0000000" + ms, wantMillis: 1767225600000},
		{
			name: "seconds", value: "1767225600", wantReason: ReasonDueImplausible,
			wantDetail: "header hourglass-due: 1767225600 in unix milliseconds is 1970-01-21T10:53:45.6Z, before 2000; " +
				"it looks like unix seconds (2026-01-01T00:00:00Z), which is 1767225600000 in milliseconds",
		},
		{
			name: "seconds plus a delay, as $(( $(date +%s) + 5 )) writes it", value: "1767225605", wantReason: ReasonDueImplausible,
			wantDetail: "header hourglass-due: 1767225605 in unix milliseconds is 1970-01-21T10:53:45.605Z, before 2000; " +
				"it looks like unix seconds (2026-01-01T00:00:05Z), which is 1767225605000 in milliseconds",
		},
		{
			name: "seconds padded with zeros", value: "0001767225600", wantReason: ReasonDueImplausible,
			wantDetail: "header hourglass-due: 1767225600 in unix milliseconds is 1970-01-21T10:53:45.6Z, before 2000; " +
				"it looks like unix seconds (2026-01-01T00:00:00Z), which is 1767225600000 in milliseconds",
		},
		{
			name: "microseconds", value: ms + "000", wantReason: ReasonDueImplausible,
			wantDetail: "header hourglass-due: 1767225600000000 in unix milliseconds is after the year 9999; " +
				"it looks like unix microseconds (2026-01-01T00:00:00Z), which is 1767225600000 in milliseconds",
		},
		{
			name: "nanoseconds", value: ms + "000000", wantReason: ReasonDueImplausible,
			wantDetail: "header hourglass-due: 1767225600000000000 in unix milliseconds is after the year 9999; " +
				"it looks like unix nanoseconds (2026-01-01T00:00:00Z), which is 1767225600000 in milliseconds",
		},
		{
			name: "the last instant before 2000", value: "946684799999", wantReason: ReasonDueImplausible,
			wantDetail: "header hourglass-due: 946684799999 in unix milliseconds is 1999-12-31T23:59:59.999Z, before 2000",
		},
		{
			name: "zero", value: "0", wantReason: ReasonDueImplausible,
			wantDetail: "header hourglass-due: 0 in unix milliseconds is 1970-01-01T00:00:00Z, before 2000",
		},
		{
			name: "after 9999, no unit fits", value: "253402300800000", wantReason: ReasonDueImplausible,
			wantDetail: "header hourglass-due: 253402300800000 in unix milliseconds is after the year 9999",
		},
		{
			name: "above the largest uint64", value: "99999999999999999999", wantReason: ReasonDueImplausible,
			wantDetail: "header hourglass-due: 99999999999999999999 in unix milliseconds is after the year 9999",
		},
		{name: "more than 20 digits", value: "0" + ms + "00000000", wantReason: ReasonDueNotNumber,
			wantDetail: `header hourglass-due is "0176722560000000000000"; want unix milliseconds as decimal digits`},
		{name: "negative", value: "-" + ms, wantReason: ReasonDueNegative, wantDetail: `header hourglass-due is "-1767225600000", before 1970`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Decode(hdrs(HeaderDue, tt.value))
			if tt.wantReason == "" {
				if err != nil || m.Due.UnixMilli() != tt.wantMillis {
					t.Fatalf("Decode(due %s) = %d ms, %v; want %d ms", tt.value, m.Due.UnixMilli(), err, tt.wantMillis)
				}
				if err := PlausibleDue(m.Due); err != nil {
					t.Errorf("PlausibleDue(%v) = %v, want nil", m.Due, err)
				}
				return
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Reason != tt.wantReason || ie.Detail != tt.wantDetail {
				t.Errorf("Decode(due %s) error %v\nwant %s: %s", tt.value, err, tt.wantReason, tt.wantDetail)
			}
			// A cancellation's hourglass-due is read by the same rule.
			r := &kgo.Record{Key: []byte("order-1"), Value: []byte{}, Timestamp: testNow, Headers: hdrs(HeaderDue, tt.value)}
			if _, cerr := DecodeCancellation(r); cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("DecodeCancellation(due %s) error %v, want %v", tt.value, cerr, err)
			}
		})
	}
}

// TestPlausibleDue: the rule on a time.Time, as BuildRecord and
// BuildCancellation apply it.
func TestPlausibleDue(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		due        time.Time
		wantDetail string // "" means plausible
	}{
		{name: "now", due: testNow},
		{name: "long past", due: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "the end of 9999", due: time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)},
		{name: "1999", due: time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
			wantDetail: "due time 946684799999 in unix milliseconds is 1999-12-31T23:59:59.999Z, before 2000"},
		{name: "10000", due: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
			wantDetail: "due time 253402300800000 in unix milliseconds is after the year 9999"},
		{name: "before 1970", due: time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC),
			wantDetail: "due time -14182980000 in unix milliseconds is 1969-07-20T20:17:00Z, before 2000"},
		{name: "seconds taken for milliseconds", due: time.UnixMilli(testNow.Unix()),
			wantDetail: "due time 1767268800 in unix milliseconds is 1970-01-21T10:54:28.8Z, before 2000; " +
				"it looks like unix seconds (2026-01-01T12:00:00Z), which is 1767268800000 in milliseconds"},
	}
	for _, tt := range tests {
		err := PlausibleDue(tt.due)
		if tt.wantDetail == "" {
			if err != nil {
				t.Errorf("%s: PlausibleDue(%v) = %v, want nil", tt.name, tt.due, err)
			}
			continue
		}
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Reason != ReasonDueImplausible || ie.Detail != tt.wantDetail {
			t.Errorf("%s: PlausibleDue(%v) = %v\nwant due_implausible: %s", tt.name, tt.due, err, tt.wantDetail)
		}
	}
}
