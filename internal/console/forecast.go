package console

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/hourglass/hourglass/internal/report"
)

// Size of the forecast chart, in CSS pixels.
const (
	chartWidth  = 1100
	chartHeight = 160
	chartLeft   = 48 // room for the count labels
	chartBottom = 20 // room for the time labels
)

// forecast is what falls due: the report's forecast (package report), the
// totals by kind and target, and its chart.
type forecast struct {
	*report.Forecast
	// Groups are the totals by kind and target, most first, at most
	// Config.MaxRows.
	Groups []forecastGroup
	// Rows are the report's minutes by kind and target, at most
	// Config.MaxRows, soonest first.
	Rows      []report.Due
	Truncated bool
	Chart     chart
}

type forecastGroup struct {
	Kind, Target string
	Due          int64
}

// newForecast shows f, the report's forecast, with at most maxRows rows in
// each table.
func newForecast(f *report.Forecast, maxRows int) *forecast {
	out := &forecast{Forecast: f, Rows: f.Due}
	groups := map[[2]string]int64{}
	for _, d := range f.Due {
		groups[[2]string{d.Kind, d.Target}] += d.Count
	}
	for k, n := range groups {
		out.Groups = append(out.Groups, forecastGroup{Kind: k[0], Target: k[1], Due: n})
	}
	slices.SortFunc(out.Groups, func(a, b forecastGroup) int {
		return cmp.Or(cmp.Compare(b.Due, a.Due), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Target, b.Target))
	})
	if len(out.Groups) > maxRows {
		out.Groups, out.Truncated = out.Groups[:maxRows], true
	}
	if len(out.Rows) > maxRows {
		out.Rows, out.Truncated = out.Rows[:maxRows], true
	}
	perMinute := make(map[int64]int64, len(f.Minutes))
	for _, m := range f.Minutes {
		perMinute[m.Start.UnixMilli()] = m.Count
	}
	out.Chart = minuteChart(f.From, f.To, perMinute, f.Peak.Count)
	return out
}

// chart is an SVG bar chart of the deadlines due per minute.
type chart struct {
	Width, Height int
	Bars          []bar
	XLabels       []label
	YLabels       []label
	Baseline      float64
	Left          int
}

type bar struct {
	X, Y, W, H float64
	Title      string
}

type label struct {
	X, Y float64
	Text string
}

// minuteChart draws the deadlines due in each minute of [from, to).
func minuteChart(from, to time.Time, perMinute map[int64]int64, peak int64) chart {
	c := chart{Width: chartWidth, Height: chartHeight, Left: chartLeft}
	minutes := max(1, int(to.Sub(from)/time.Minute))
	plotW := float64(chartWidth - chartLeft - 8)
	plotH := float64(chartHeight - chartBottom - 8)
	c.Baseline = 8 + plotH
	step := plotW / float64(minutes)
	top := max(peak, 1)
	for i := range minutes {
		m := from.Add(time.Duration(i) * time.Minute)
		n := perMinute[m.UnixMilli()]
		x := float64(chartLeft) + float64(i)*step
		if n > 0 {
			h := max(1, plotH*float64(n)/float64(top))
			c.Bars = append(c.Bars, bar{X: x, Y: c.Baseline - h, W: max(1, step-1), H: h,
				Title: fmt.Sprintf("%s: %d due", m.UTC().Format("15:04"), n)})
		}
		if i%labelEvery(minutes) == 0 {
			c.XLabels = append(c.XLabels, label{X: x, Y: float64(chartHeight - 4), Text: m.UTC().Format("15:04")})
		}
	}
	c.YLabels = []label{{X: chartLeft - 6, Y: c.Baseline, Text: "0"}, {X: chartLeft - 6, Y: 16, Text: thousands(top)}}
	return c
}

// labelEvery is how many minutes apart the time labels are: about a dozen
// labels.
func labelEvery(minutes int) int {
	for _, e := range []int{5, 10, 15, 30, 60, 120, 240, 360, 720} {
		if minutes/e <= 12 {
			return e
		}
	}
	return 1440
}
