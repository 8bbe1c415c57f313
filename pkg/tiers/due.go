package tiers

import (
	"fmt"
	"time"
)

// The due times a record may name, in unix milliseconds: 2000 to 9999. Any
// date of those years written in seconds falls below (1970 as milliseconds),
// and in microseconds or nanoseconds above, so a unit mistake never fires;
// a due time after 2000 but in the past fires at once, as a backlog needs.
const (
	// MinDueMillis is 2000-01-01T00:00:00Z.
	MinDueMillis int64 = 946_684_800_000
	// MaxDueMillis is 9999-12-31T23:59:59.999Z, the last instant RFC 3339
	// can write.
	MaxDueMillis int64 = 253_402_300_799_999
)

// PlausibleDue returns an *InvalidError with ReasonDueImplausible when due is
// outside MinDueMillis to MaxDueMillis, and nil otherwise. Its detail names
// the value and, when the value read in seconds, microseconds or nanoseconds
// is a plausible due time, that unit and the value in milliseconds. Decode
// and DecodeCancellation apply it to hourglass-due; BuildRecord and
// BuildCancellation refuse such a due time.
func PlausibleDue(due time.Time) error {
	ms := due.UnixMilli()
	switch {
	case ms >= MinDueMillis && ms <= MaxDueMillis:
		return nil
	case ms < 0:
		return invalid(ReasonDueImplausible, "due time %d in unix milliseconds is %s, before 2000", ms, formatMillis(ms))
	}
	return invalid(ReasonDueImplausible, "due time %s", implausible(uint64(ms)))
}

// implausible says why ms, outside MinDueMillis to MaxDueMillis, is not a due
// time in unix milliseconds, and which unit it looks like. It takes a uint64
// so that a header of up to 20 digits (nanoseconds included) is judged, not
// overflowed.
func implausible(ms uint64) string {
	if ms < uint64(MinDueMillis) {
		why := fmt.Sprintf("%d in unix milliseconds is %s, before 2000", ms, formatMillis(int64(ms)))
		if s := ms * 1000; inDueRange(s) { // ms < MinDueMillis: no overflow
			why += fmt.Sprintf("; it looks like unix seconds (%s), which is %d in milliseconds", formatMillis(int64(s)), s)
		}
		return why
	}
	why := fmt.Sprintf("%d in unix milliseconds is after the year 9999", ms)
	for _, u := range []struct {
		name string
		per  uint64
	}{{"microseconds", 1_000}, {"nanoseconds", 1_000_000}} {
		if m := ms / u.per; inDueRange(m) {
			why += fmt.Sprintf("; it looks like unix %s (%s), which is %d in milliseconds", u.name, formatMillis(int64(m)), m)
		}
	}
	return why
}

func inDueRange(ms uint64) bool { return ms >= uint64(MinDueMillis) && ms <= uint64(MaxDueMillis) }

// formatMillis formats unix milliseconds as RFC 3339 in UTC.
func formatMillis(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
