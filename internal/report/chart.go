package report

// The SVG charts of the HTML report, drawn as text: the outcome bars, and
// lateness and failed or retried attempts over time (type timeline).

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/term"
)

// outcomeColors are the bar colors of the outcomes; others are purple.
var outcomeColors = map[outcome.Outcome]string{
	"closed": "#1a7f37", "already_closed": "#4ac26b", "skipped": "#8c959f", "not_found": "#bf8700",
	"retry": "#0969da", "failed": "#cf222e",
}

// outcomeChart draws a horizontal bar per outcome.
func outcomeChart(counts []OutcomeCount) string {
	if len(counts) == 0 {
		return `<p class="empty">No attempts in this window.</p>`
	}
	const width, label, right, barH, gap = 720, 120, 70, 22, 8
	height := len(counts)*(barH+gap) + gap
	var most int64
	for _, c := range counts {
		most = max(most, c.Attempts)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="outcome-chart" role="img" aria-label="attempts by outcome" viewBox="0 0 %d %d" width="%d" height="%d">`, width, height, width, height)
	for i, c := range counts {
		y := gap + i*(barH+gap)
		w := float64(width-label-right) * float64(c.Attempts) / float64(most)
		color, ok := outcomeColors[c.Outcome]
		if !ok {
			color = "#8250df"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, label-8, y+barH/2+4, html.EscapeString(term.Quote(string(c.Outcome))))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" rx="3" fill="%s"><title>%s: %s</title></rect>`,
			label, y, math.Max(w, 1), barH, color, html.EscapeString(term.Quote(string(c.Outcome))), thousands(c.Attempts))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`, float64(label)+math.Max(w, 1)+6, y+barH/2+4, thousands(c.Attempts))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// series of the lateness chart.
var timelineSeries = []struct {
	name, color string
	value       func(Bucket) int64
}{
	{"max", "#cf222e", func(b Bucket) int64 { return b.Max }},
	{"p99", "#bf8700", func(b Bucket) int64 { return b.P99 }},
	{"p50", "#0969da", func(b Bucket) int64 { return b.P50 }},
}

// Geometry of the charts over time, in SVG units: their width, the
// heights of the lateness chart and of the failed and retried chart, and
// the margins around the plot (tlLeft the least left one: it grows with
// the y axis labels, see fitLeft).
const tlWidth, tlHeight, faHeight, tlLeft, tlRight, tlTop, tlBottom = 900, 320, 220, 70, 40, 16, 44

// labelCharWidth is the width of a character of an axis label (11px
// system-ui, whose digits are about 6.2 units wide), rounded up so that a
// label never reaches the edge; labelGap is the space between a label and
// the plot, and labelEdge the space left of the widest label.
const labelCharWidth, labelGap, labelEdge = 7, 6, 4

// timelineChart draws p50, p99 and max lateness per bucket over the window
// on a logarithmic axis (see logScale), so that one spike of minutes does
// not flatten percentiles of milliseconds to the floor.
func timelineChart(r *Report) string {
	var points []Bucket
	for _, k := range r.Timeline {
		if k.Count > 0 {
			points = append(points, k)
		}
	}
	if len(points) == 0 {
		return `<p class="empty">No final attempts in this window.</p>`
	}
	var most int64
	for _, k := range points {
		most = max(most, k.Max)
	}
	bucket := max(r.BucketMs, 1)
	c := newLatenessChart(r.From, r.To, most)
	c.fitLeft(c.logTicks())

	fmt.Fprintf(&c.b, `<svg class="chart" id="lateness-chart" role="img" aria-label="lateness over time, logarithmic axis" viewBox="0 0 %d %d" width="%d" height="%d">`, tlWidth, c.height, tlWidth, c.height)
	c.axis(c.logTicks())
	c.xAxis(axisLayout(r.To.Sub(r.From)))
	c.series(points, bucket)
	c.peak(points, bucket)
	c.legend(bucket, "log scale")
	c.b.WriteString(`</svg>`)
	return c.b.String()
}

// newLatenessChart returns the lateness chart of the window [from, to)
// whose largest lateness is most milliseconds.
func newLatenessChart(from, to time.Time, most int64) *timeline {
	return &timeline{from: from.UnixMilli(), to: to.UnixMilli(), height: tlHeight, yMax: float64(logTop(most)), log: true}
}

// logTop is the top of the logarithmic lateness axis for a largest value
// of most milliseconds: the power of ten at or above it, at least 10 ms.
func logTop(most int64) int64 {
	top := int64(10)
	for top < most {
		top *= 10
	}
	return top
}

// failureChart draws the failed and retried attempts per bucket over the
// window as stacked bars, failed at the bottom.
func failureChart(r *Report) string {
	var points []Bucket
	var most int64
	for _, k := range r.Timeline {
		if k.Failed+k.Retried > 0 {
			points = append(points, k)
			most = max(most, k.Failed+k.Retried)
		}
	}
	if len(points) == 0 {
		return `<p class="empty">No failed or retried attempts in this window.</p>`
	}
	yMax, yStep := niceScale(float64(most))
	bucket := max(r.BucketMs, 1)
	c := &timeline{from: r.From.UnixMilli(), to: r.To.UnixMilli(), height: faHeight, yMax: yMax}
	ticks := c.linearTicks(yStep, thousands)
	c.fitLeft(ticks)

	fmt.Fprintf(&c.b, `<svg class="chart" id="failure-chart" role="img" aria-label="failed and retried attempts over time" viewBox="0 0 %d %d" width="%d" height="%d">`, tlWidth, c.height, tlWidth, c.height)
	c.axis(ticks)
	c.xAxis(axisLayout(r.To.Sub(r.From)))
	w := math.Max(c.x(r.From.UnixMilli()+bucket)-c.x(r.From.UnixMilli())-2, 2)
	for _, k := range points {
		x := c.x(k.Start.UnixMilli()+bucket/2) - w/2
		var below int64 // attempts stacked below this bar
		for _, s := range failureSeries {
			v := s.value(k)
			if v == 0 {
				continue
			}
			top, base := c.y(below+v), c.y(below)
			fmt.Fprintf(&c.b, `<rect class="bar-%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`,
				s.name, x, top, w, base-top, s.color, html.EscapeString(k.Start.Format(timeLayout)), s.name, thousands(v))
			below += v
		}
	}
	for i, s := range failureSeries {
		lx := c.plotLeft() + 10 + i*80
		fmt.Fprintf(&c.b, `<rect x="%d" y="%d" width="12" height="8" fill="%s"/><text x="%d" y="%d">%s</text>`, lx, c.height-17, s.color, lx+16, c.height-10, s.name)
	}
	fmt.Fprintf(&c.b, `<text x="%d" y="%d" text-anchor="end">attempts per %s bucket, UTC</text>`, tlWidth-tlRight, c.height-10, html.EscapeString(ms(bucket)))
	c.b.WriteString(`</svg>`)
	return c.b.String()
}

// failureSeries are the stacked bars of the failed and retried chart, from
// the bottom.
var failureSeries = []struct {
	name, color string
	value       func(Bucket) int64
}{
	{"failed", "#cf222e", func(b Bucket) int64 { return b.Failed }},
	{"retried", "#0969da", func(b Bucket) int64 { return b.Retried }},
}

// timeline is a chart over time being drawn: x spans the window [from,
// to) in Unix milliseconds, y spans 0 to yMax, linearly or, when log is
// set, on logScale.
type timeline struct {
	b        strings.Builder
	from, to int64
	height   int
	yMax     float64
	log      bool
	left     int // the left margin; zero is tlLeft
}

// tick is a y axis label and the value it stands at.
type tick struct {
	v     int64
	label string
}

// fitLeft widens the left margin from tlLeft to what the widest label of
// ticks needs, so that a label of a large value ("10,000,000s") is not cut
// at the chart's edge. Call it before drawing.
func (c *timeline) fitLeft(ticks []tick) {
	c.left = tlLeft
	for _, t := range ticks {
		c.left = max(c.left, labelEdge+labelCharWidth*utf8.RuneCountInString(t.label)+labelGap)
	}
}

// plotLeft is the x of the plot's left edge.
func (c *timeline) plotLeft() int {
	if c.left == 0 {
		return tlLeft
	}
	return c.left
}

// x is the horizontal position of the time ms (Unix milliseconds).
func (c *timeline) x(ms int64) float64 {
	left := c.plotLeft()
	plotW := float64(tlWidth - left - tlRight)
	return float64(left) + plotW*float64(ms-c.from)/float64(c.to-c.from)
}

// logScale maps v in [0, top] to [0, 1] by log10(1+v): 0 stays at the
// floor, and each power of ten takes the same height.
func logScale(v, top float64) float64 { return math.Log10(1+v) / math.Log10(1+top) }

// y is the vertical position of the value v.
func (c *timeline) y(v int64) float64 {
	plotH := float64(c.height - tlTop - tlBottom)
	f := float64(v) / c.yMax
	if c.log {
		f = logScale(float64(v), c.yMax)
	}
	return float64(tlTop) + plotH*(1-min(f, 1))
}

// linearTicks are the y axis labels of a linear chart, one every step,
// labelled by label.
func (c *timeline) linearTicks(step float64, label func(int64) string) []tick {
	var ticks []tick
	for v := 0.0; v <= c.yMax+step/2; v += step {
		ticks = append(ticks, tick{int64(v), label(int64(v))})
	}
	return ticks
}

// logTicks are the y axis labels of the logarithmic lateness axis: 0 and
// every power of ten of milliseconds up to yMax.
func (c *timeline) logTicks() []tick {
	ticks := []tick{{0, "0"}}
	for v := int64(1); float64(v) <= c.yMax; v *= 10 {
		ticks = append(ticks, tick{v, tickMs(v)})
	}
	return ticks
}

// axis draws the grid and the y axis labels of ticks.
func (c *timeline) axis(ticks []tick) {
	for _, t := range ticks {
		c.gridLine(t.v, t.label)
	}
}

// tickMs labels a power of ten of milliseconds: 1ms, 10ms, 100ms, 1s,
// 10s, 100s, 1000s.
func tickMs(v int64) string {
	if v < 1000 {
		return fmt.Sprintf("%dms", v)
	}
	return thousands(v/1000) + "s"
}

// gridLine draws a horizontal grid line at the value v, labelled.
func (c *timeline) gridLine(v int64, label string) {
	yy := c.y(v)
	left := c.plotLeft()
	fmt.Fprintf(&c.b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eaeef2"/>`, left, yy, tlWidth-tlRight, yy)
	fmt.Fprintf(&c.b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, left-labelGap, yy+4, html.EscapeString(label))
}

// axisLayout is the layout of the x axis labels of a window of span.
func axisLayout(span time.Duration) string {
	switch {
	case span > 48*time.Hour:
		return "Jan 2"
	case span > 24*time.Hour:
		return "Jan 2 15:04"
	case span <= 10*time.Minute:
		return "15:04:05"
	}
	return "15:04"
}

// xAxis draws the x axis with its ticks, labelled in layout.
func (c *timeline) xAxis(layout string) {
	const ticks = 6
	for i := 0; i <= ticks; i++ {
		t := c.from + (c.to-c.from)*int64(i)/ticks
		xx := c.x(t)
		fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d0d7de"/>`, xx, c.height-tlBottom, xx, c.height-tlBottom+4)
		fmt.Fprintf(&c.b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, xx, c.height-tlBottom+16, html.EscapeString(time.UnixMilli(t).UTC().Format(layout)))
	}
	fmt.Fprintf(&c.b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8c959f"/>`, c.plotLeft(), c.height-tlBottom, tlWidth-tlRight, c.height-tlBottom)
}

// series draws each of timelineSeries: a line through the middle of each
// bucket of points (bucket milliseconds long), and a dot per bucket.
func (c *timeline) series(points []Bucket, bucket int64) {
	for _, s := range timelineSeries {
		var pts []string
		for _, k := range points {
			mid := k.Start.UnixMilli() + bucket/2
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", c.x(mid), c.y(s.value(k))))
		}
		fmt.Fprintf(&c.b, `<polyline class="series-%s" fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, s.name, s.color, strings.Join(pts, " "))
		for i, k := range points {
			xy := strings.Split(pts[i], ",")
			fmt.Fprintf(&c.b, `<circle class="dot-%s" cx="%s" cy="%s" r="2.5" fill="%s"><title>%s %s: %s (%s final)</title></circle>`,
				s.name, xy[0], xy[1], s.color, html.EscapeString(k.Start.Format(timeLayout)), s.name, html.EscapeString(ms(s.value(k))), thousands(k.Count))
		}
	}
}

// peak labels the highest max lateness of points with its value, left of
// its dot in the right half of the chart, else right of it.
func (c *timeline) peak(points []Bucket, bucket int64) {
	top := points[0]
	for _, k := range points[1:] {
		if k.Max > top.Max {
			top = k
		}
	}
	x, y := c.x(top.Start.UnixMilli()+bucket/2), c.y(top.Max)
	anchor, dx := "start", 6.0
	if x > float64(tlWidth)/2 {
		anchor, dx = "end", -6
	}
	fmt.Fprintf(&c.b, `<text class="peak" x="%.1f" y="%.1f" text-anchor="%s" font-weight="600">max %s at %s</text>`,
		x+dx, math.Max(y+4, float64(tlTop)+10), anchor, html.EscapeString(ms(top.Max)), html.EscapeString(top.Start.Format("15:04:05")))
}

// legend names the series, the bucket size and the scale.
func (c *timeline) legend(bucket int64, scale string) {
	for i, s := range timelineSeries {
		lx := c.plotLeft() + 10 + i*80
		fmt.Fprintf(&c.b, `<rect x="%d" y="%d" width="12" height="3" fill="%s"/><text x="%d" y="%d">%s</text>`, lx, c.height-14, s.color, lx+16, c.height-10, s.name)
	}
	fmt.Fprintf(&c.b, `<text x="%d" y="%d" text-anchor="end">%s, bucket %s, UTC</text>`, tlWidth-tlRight, c.height-10, scale, html.EscapeString(ms(bucket)))
}

// niceScale returns an axis maximum of at least v and its step: 1, 2 or 5
// times a power of ten, in 4 to 5 steps. Zero gets a scale of 1.
func niceScale(v float64) (top, step float64) {
	if v <= 0 {
		return 1, 1
	}
	raw := v / 4
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * p; step >= raw {
			break
		}
	}
	step = math.Max(step, 1) // whole units
	return math.Ceil(v/step) * step, step
}

// kindColors are the colors of the kinds in the forecast chart, in the
// order of Forecast.ByKind (most due first); more kinds take them again.
var kindColors = []string{"#8250df", "#0969da", "#bf8700", "#1a7f37", "#cf222e", "#57606a"}

// fcHeight is the height of the forecast chart, in SVG units.
const fcHeight = 240

// forecastChart draws the open deadlines due per minute over the
// forecast's window as bars stacked by kind, the most frequent kind at the
// bottom, with a line at the report's To (now, for a report up to now)
// and the peak minute labelled.
func forecastChart(r *Report) string {
	f := r.Forecast
	if f == nil {
		return ""
	}
	if f.Total == 0 {
		return `<p class="empty">No open deadlines due in this window.</p>`
	}
	yMax, yStep := niceScale(float64(f.Peak.Count))
	c := &timeline{from: f.From.UnixMilli(), to: f.To.UnixMilli(), height: fcHeight, yMax: yMax}
	ticks := c.linearTicks(yStep, thousands)
	c.fitLeft(ticks)
	color := map[string]string{}
	for i, k := range f.ByKind {
		color[k.Name] = kindColors[i%len(kindColors)]
	}
	order := map[string]int{}
	for i, k := range f.ByKind {
		order[k.Name] = i
	}

	fmt.Fprintf(&c.b, `<svg class="chart" id="forecast-chart" role="img" aria-label="open deadlines due per minute, by kind" viewBox="0 0 %d %d" width="%d" height="%d">`, tlWidth, c.height, tlWidth, c.height)
	c.axis(ticks)
	c.xAxis(axisLayout(f.To.Sub(f.From)))
	const minute = int64(60_000)
	w := math.Max(c.x(c.from+minute)-c.x(c.from)-0.5, 1)
	// Each minute's rows, stacked in the order of ByKind.
	for i := 0; i < len(f.Due); {
		j := i
		for j < len(f.Due) && f.Due[j].Minute.Equal(f.Due[i].Minute) {
			j++
		}
		byKind := map[string]int64{}
		for _, d := range f.Due[i:j] {
			byKind[d.Kind] += d.Count
		}
		kinds := make([]string, 0, len(byKind))
		for k := range byKind {
			kinds = append(kinds, k)
		}
		slices.SortFunc(kinds, func(a, b string) int { return order[a] - order[b] })
		start := f.Due[i].Minute
		x := c.x(start.UnixMilli())
		var below int64
		for _, k := range kinds {
			v := byKind[k]
			top, base := c.y(below+v), c.y(below)
			fmt.Fprintf(&c.b, `<rect class="due" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s due</title></rect>`,
				x, top, w, math.Max(base-top, 0.5), color[k], html.EscapeString(start.Format(minuteLayout)), html.EscapeString(term.Quote(orDefault(k))), thousands(v))
			below += v
		}
		i = j
	}
	// The report's To: left of it, the deadlines are overdue.
	now := c.x(r.To.UnixMilli())
	fmt.Fprintf(&c.b, `<line class="now" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#1f2328" stroke-dasharray="4 3"/>`, now, tlTop, now, c.height-tlBottom)
	fmt.Fprintf(&c.b, `<text x="%.1f" y="%d">%s</text>`, now+4, tlTop+10, html.EscapeString(r.To.Format("15:04")))
	px, py := c.x(f.Peak.Start.UnixMilli()+minute/2), c.y(f.Peak.Count)
	anchor, dx := "start", 6.0
	if px > float64(tlWidth)/2 {
		anchor, dx = "end", -6
	}
	fmt.Fprintf(&c.b, `<text class="peak" x="%.1f" y="%.1f" text-anchor="%s" font-weight="600">peak %s at %s</text>`,
		px+dx, math.Max(py+4, float64(tlTop)+10), anchor, thousands(f.Peak.Count), html.EscapeString(f.Peak.Start.Format("15:04")))
	const legendMax = 4 // the legend names the most frequent kinds
	for i, k := range f.ByKind {
		lx := c.plotLeft() + 10 + i*130
		if i == legendMax {
			fmt.Fprintf(&c.b, `<text x="%d" y="%d">and %d more</text>`, lx, c.height-10, len(f.ByKind)-legendMax)
			break
		}
		fmt.Fprintf(&c.b, `<rect x="%d" y="%d" width="12" height="8" fill="%s"/><text x="%d" y="%d">%s</text>`,
			lx, c.height-17, color[k.Name], lx+16, c.height-10, html.EscapeString(shorten(term.Quote(orDefault(k.Name)), 18)))
	}
	fmt.Fprintf(&c.b, `<text x="%d" y="%d" text-anchor="end">due per minute, UTC</text>`, tlWidth-tlRight, c.height-10)
	c.b.WriteString(`</svg>`)
	return c.b.String()
}

// shorten cuts s to n runes, marking the cut.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
