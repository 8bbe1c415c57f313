package report

import (
	"cmp"
	"slices"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
)

// newForecast sums the rows of chstore.Store.Forecast over [from, to) into
// a Forecast; the minutes that end by now are overdue.
func newForecast(from, to, now time.Time, rows []chstore.Due) *Forecast {
	f := &Forecast{From: from.UTC(), To: to.UTC(), Minutes: []Minute{}, ByKind: []DueCount{}, ByTarget: []DueCount{}, Due: []Due{}}
	kinds, targets := map[string]int64{}, map[string]int64{}
	for _, d := range rows {
		start := d.Minute.UTC()
		f.Due = append(f.Due, Due{Minute: start, Kind: d.Kind, Target: d.Target, Count: d.Count})
		if n := len(f.Minutes); n > 0 && f.Minutes[n-1].Start.Equal(start) {
			f.Minutes[n-1].Count += d.Count
		} else {
			f.Minutes = append(f.Minutes, Minute{Start: start, Count: d.Count})
		}
		f.Total += d.Count
		if !start.Add(time.Minute).After(now) {
			f.Overdue += d.Count
		}
		kinds[d.Kind] += d.Count
		targets[d.Target] += d.Count
	}
	for _, m := range f.Minutes {
		if m.Count > f.Peak.Count {
			f.Peak = m
		}
	}
	f.ByKind, f.ByTarget = mostFirst(kinds), mostFirst(targets)
	return f
}

// mostFirst lists counts by count, most first, then by name.
func mostFirst(counts map[string]int64) []DueCount {
	out := make([]DueCount, 0, len(counts))
	for name, n := range counts {
		out = append(out, DueCount{Name: name, Count: n})
	}
	slices.SortFunc(out, func(a, b DueCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name))
	})
	return out
}
