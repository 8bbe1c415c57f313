package tiers

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultTiers is the tier ladder used when none is configured: 1m, 5m and
// 30m, and rungs a few times apart up to 270 days, so that a deadline up to a
// year away visits at most 22 delay topics, and most delays one to five
// (see Walk).
const DefaultTiers = "1m,2m,5m,10m,30m,1h,3h,12h,24h,72h,168h,720h,2160h,6480h"

// MaxTiers bounds the number of tiers in a table; every tier is a topic that
// the router consumes.
const MaxTiers = 64

// Table is an ordered set of tier durations, smallest first. The zero Table
// has no tiers; build one with Parse or New.
type Table struct {
	ds []time.Duration
}

// DefaultTable returns the table of DefaultTiers.
func DefaultTable() Table {
	t, err := Parse(DefaultTiers)
	if err != nil {
		panic(err)
	}
	return t
}

// Parse parses a comma-separated list of Go durations ("1m,5m,30m",
// "500ms,2s", "1h30m"). Order does not matter; duplicates, non-positive
// durations and durations finer than a millisecond are errors.
func Parse(s string) (Table, error) {
	if strings.TrimSpace(s) == "" {
		return Table{}, errors.New("no tiers: want a comma-separated list of durations such as 1m,5m,30m")
	}
	var ds []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		d, err := time.ParseDuration(f)
		if err != nil {
			return Table{}, fmt.Errorf("tier %q: not a duration (want e.g. 30s, 5m, 1h30m)", f)
		}
		ds = append(ds, d)
	}
	return New(ds...)
}

// New builds a table from durations in any order.
func New(ds ...time.Duration) (Table, error) {
	if len(ds) == 0 {
		return Table{}, errors.New("no tiers")
	}
	if len(ds) > MaxTiers {
		return Table{}, fmt.Errorf("%d tiers: at most %d are allowed", len(ds), MaxTiers)
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	for i, d := range sorted {
		switch {
		case d <= 0:
			return Table{}, fmt.Errorf("tier %v: must be positive", d)
		case d%time.Millisecond != 0:
			return Table{}, fmt.Errorf("tier %v: must be a whole number of milliseconds", d)
		case i > 0 && d == sorted[i-1]:
			return Table{}, fmt.Errorf("tier %s: listed twice", Name(d))
		}
	}
	return Table{ds: sorted}, nil
}

// Durations returns the tiers, smallest first.
func (t Table) Durations() []time.Duration { return slices.Clone(t.ds) }

// Len returns the number of tiers.
func (t Table) Len() int { return len(t.ds) }

// Smallest returns the smallest tier, or 0 for the zero Table.
func (t Table) Smallest() time.Duration {
	if len(t.ds) == 0 {
		return 0
	}
	return t.ds[0]
}

// Largest returns the largest tier, or 0 for the zero Table.
func (t Table) Largest() time.Duration {
	if len(t.ds) == 0 {
		return 0
	}
	return t.ds[len(t.ds)-1]
}

// For returns the tier for a record that has delay left to wait: the largest
// tier not longer than delay, or the smallest tier when delay is shorter than
// every tier (including delays that are zero or negative).
func (t Table) For(delay time.Duration) time.Duration {
	i, found := slices.BinarySearch(t.ds, delay)
	switch {
	case found:
		return t.ds[i]
	case i == 0:
		return t.Smallest()
	default:
		return t.ds[i-1]
	}
}

// Tolerance is how far short of a tier a delay may fall and still be
// scheduled (or hopped) into that tier. A delay computed as "now + 30m" a
// moment before the record is built is 29m59.999s by then; without the
// tolerance it would go to the next smaller tier and hop back up through
// every tier below. A record is never early for it: it becomes ready at its
// due time or when its tier wait ends, whichever comes first. The cost is at
// most Tolerance of waiting behind a neighbour whose tier wait ends later.
const Tolerance = 10 * time.Millisecond

// Pick returns the tier a record with delay left goes to: For(delay +
// Tolerance).
func (t Table) Pick(delay time.Duration) time.Duration {
	if delay > math.MaxInt64-Tolerance {
		return t.Largest()
	}
	return t.For(delay + Tolerance)
}

// Walk returns the tiers a record with delay left to wait visits, in order,
// when each hop happens as its tier's wait ends: Pick(delay) first, then
// Pick of what is left, until less than the smallest tier is left (the
// router holds that in its timer). Its length is the number of produces
// into delay topics the record costs. Walk takes a step per visit: it is
// for tests, tools and docs, not for a record's path.
func (t Table) Walk(delay time.Duration) []time.Duration {
	if len(t.ds) == 0 {
		return nil
	}
	var visits []time.Duration
	for left := delay; ; {
		d := t.Pick(left)
		visits = append(visits, d)
		if left -= d; left < t.Smallest() {
			return visits
		}
	}
}

// Contains reports whether d is one of the tiers.
func (t Table) Contains(d time.Duration) bool {
	_, found := slices.BinarySearch(t.ds, d)
	return found
}

// String returns the table in the syntax Parse accepts: "1m,5m,30m".
func (t Table) String() string {
	names := make([]string, len(t.ds))
	for i, d := range t.ds {
		names[i] = Name(d)
	}
	return strings.Join(names, ",")
}

// Name formats a tier in Go duration syntax with zero units dropped:
// 1m, 30m, 1h30m, 500ms, 1s500ms. time.ParseDuration parses it back.
func Name(d time.Duration) string {
	if d <= 0 {
		return d.String()
	}
	units := [...]struct {
		u    time.Duration
		name string
	}{
		{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"},
		{time.Millisecond, "ms"}, {time.Microsecond, "us"}, {time.Nanosecond, "ns"},
	}
	b := make([]byte, 0, 16)
	for _, u := range units {
		if n := d / u.u; n > 0 {
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, u.name...)
			d -= n * u.u
		}
	}
	return string(b)
}
