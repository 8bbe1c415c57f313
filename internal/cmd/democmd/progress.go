package democmd

import (
	"fmt"
	"strconv"
	"time"
)

// progress is one line of the demo's progress, printed every second.
type progress struct {
	elapsed   time.Duration
	scheduled int // orders scheduled so far
	orders    int // orders to schedule in all
	closed    int
	paid      int // skipped as paid
	pending   int // scheduled without an outcome yet
	// p50, p99 and max are the lateness of the outcomes so far, in
	// milliseconds.
	p50, p99, max int64
}

// progressLayout lays out the columns of the progress lines and their
// header.
const progressLayout = "%7s  %19s  %9s  %9s  %9s  %7s  %7s  %7s"

// progressHeader names the columns of the progress lines; it is printed
// once, before the first. "paid" counts the orders skipped as paid.
var progressHeader = fmt.Sprintf(progressLayout, "time", "scheduled", "closed", "paid", "pending", "p50", "p99", "max")

// line is p laid out under progressHeader: 88 columns, up to 1,000,000
// orders (the most --orders allows) and lateness below 100 hours.
func (p progress) line() string {
	sched := thousands(int64(p.scheduled)) + "/" + thousands(int64(p.orders))
	return fmt.Sprintf(progressLayout,
		strconv.FormatFloat(p.elapsed.Seconds(), 'f', 0, 64)+"s", sched, thousands(int64(p.closed)), thousands(int64(p.paid)),
		thousands(int64(p.pending)), lateness(p.p50), lateness(p.p99), lateness(p.max))
}

// lateness formats milliseconds compactly: 12ms, 1.2s, 2m3s.
func lateness(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return strconv.FormatInt(ms, 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Truncate(100*time.Millisecond).Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// thousands formats n with a comma between groups of three digits:
// 1234567 is "1,234,567".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}
