package console

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// Size of the forecast chart, in CSS pixels.
const (
	chartWidth  = 1100
	chartHeight = 160
	chartLeft   = 48 // room for the count labels
	chartBottom = 20 // room for the time labels
)

// forecast is what falls due over the next Config.Forecast.
type forecast struct {
	From, To time.Time
	Err      string
	Total    int64
	Peak     int64 // the most due in one minute
	PeakAt   time.Time
	// Groups are the totals by kind and target, most first.
	Groups []forecastGroup
	// Rows are the minutes, kinds and targets with deadlines, at most
	// Config.MaxRows, soonest first.
	Rows      []forecastRow
	Truncated bool
	Chart     chart
}

type forecastGroup struct {
	Kind, Target string
	Due          int64
}

type forecastRow struct {
	Minute       time.Time
	Kind, Target string
	Due          int64
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

// buildForecast returns the forecast of the minutes from now's to
// Config.Forecast later.
func (s *Server) buildForecast(ctx context.Context, now time.Time) *forecast {
	from := now.Truncate(time.Minute)
	f := &forecast{From: from, To: from.Add(s.cfg.Forecast)}
	due, err := s.store.Forecast(ctx, f.From, f.To)
	if err != nil {
		s.log.Warn("overview: forecast", "err", err)
		f.Err = err.Error()
		return f
	}
	perMinute := map[int64]int64{}
	groups := map[[2]string]int64{}
	for _, d := range due {
		f.Total += d.Count
		perMinute[d.Minute.UnixMilli()] += d.Count
		groups[[2]string{d.Kind, d.Target}] += d.Count
		if len(f.Rows) < s.cfg.MaxRows {
			f.Rows = append(f.Rows, forecastRow{Minute: d.Minute, Kind: d.Kind, Target: d.Target, Due: d.Count})
		} else {
			f.Truncated = true
		}
	}
	for k, n := range groups {
		f.Groups = append(f.Groups, forecastGroup{Kind: k[0], Target: k[1], Due: n})
	}
	slices.SortFunc(f.Groups, func(a, b forecastGroup) int {
		return cmp.Or(cmp.Compare(b.Due, a.Due), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Target, b.Target))
	})
	if len(f.Groups) > s.cfg.MaxRows {
		f.Groups, f.Truncated = f.Groups[:s.cfg.MaxRows], true
	}
	for m, n := range perMinute {
		if n > f.Peak || (n == f.Peak && time.UnixMilli(m).Before(f.PeakAt)) {
			f.Peak, f.PeakAt = n, time.UnixMilli(m).UTC()
		}
	}
	f.Chart = minuteChart(f.From, f.To, perMinute, f.Peak)
	return f
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
