package report

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/outcome"
)

// WriteHTML writes r as one self-contained HTML page: inline CSS, inline
// SVG charts drawn here (an outcome bar chart, lateness over time on a
// logarithmic axis with its peak labelled, failed and retried attempts
// over time), and no script, stylesheet, font or image from anywhere else.
// Counts have thousands separators; ids and times do not wrap (a table too
// wide scrolls sideways), and the error or detail of a late or failed
// attempt takes a row of its own under it. Strings from events are
// HTML-escaped, and written through cli.Quote first as in the text report:
// html/template leaves control and bidi characters as they are, and a bidi
// override would reorder a cell in the browser too.
func (r *Report) WriteHTML(w io.Writer) error {
	return page.Execute(w, htmlData{
		R:        r,
		Window:   r.To.Sub(r.From).Round(time.Second).String(),
		Outcomes: template.HTML(outcomeChart(r.Outcomes)),
		Timeline: template.HTML(timelineChart(r)),
		Failures: template.HTML(failureChart(r)),
	})
}

type htmlData struct {
	R        *Report
	Window   string
	Outcomes template.HTML // SVG, built with every text escaped
	Timeline template.HTML
	Failures template.HTML
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"q":       cli.Quote,
	"qo":      func(o outcome.Outcome) string { return cli.Quote(string(o)) },
	"ms":      ms,
	"n":       thousands,
	"bms":     bucketMs,
	"time":    func(t time.Time) string { return t.Format(timeLayout) },
	"attempt": func(t time.Time) string { return t.Format(attemptTime) },
	"tier":    func(t string) string { return cli.Quote(tierName(t)) },
	"none":    func(s string) string { return cli.Quote(orNone(s)) },
	// why is the error of an attempt, else its detail, else "": it takes
	// a row of its own under the attempt, where it can wrap.
	"why": func(a Attempt) string {
		why := a.Error
		if why == "" {
			why = a.Detail
		}
		if why == "" {
			return ""
		}
		return cli.Quote(spaced(why)) // the browser shows white space as one space anyway
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Hourglass report {{time .R.From}} to {{time .R.To}} UTC</title>
<style>
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; margin: 24px auto; max-width: 1200px; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 32px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.sub { color: #59636e; margin-top: 0; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 16px 0; }
.card { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 14px; min-width: 90px; }
.card .v { font-size: 20px; font-weight: 600; }
.card .k { color: #59636e; font-size: 12px; }
.card.bad .v { color: #cf222e; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { padding: 4px 10px; border-bottom: 1px solid #eaeef2; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.id, td.t { white-space: nowrap; }
td.id { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; }
.scroll { overflow-x: auto; }
tr.has-why td { border-bottom: none; }
td.err { overflow-wrap: anywhere; color: #59636e; padding-top: 0; }
.empty { color: #59636e; font-style: italic; }
svg { max-width: 100%; height: auto; }
svg text { font: 11px system-ui, sans-serif; fill: #424a53; }
</style>
</head>
<body>
<h1>Hourglass report</h1>
<p class="sub">{{time .R.From}} to {{time .R.To}} UTC ({{.Window}}) &middot; database {{q .R.Database}} &middot; generated {{time .R.Generated}} UTC</p>
{{with .R.Summary}}
<div class="cards">
<div class="card"><div class="v">{{n .Attempts}}</div><div class="k">attempts</div></div>
<div class="card"><div class="v">{{n .Tasks}}</div><div class="k">tasks</div></div>
<div class="card"><div class="v">{{n .Final}}</div><div class="k">final</div></div>
<div class="card"><div class="v">{{n .Retried}}</div><div class="k">retried</div></div>
<div class="card{{if .Failed}} bad{{end}}"><div class="v">{{n .Failed}}</div><div class="k">failed</div></div>
<div class="card{{if .Late}} bad{{end}}"><div class="v">{{n .Late}}</div><div class="k">late (over {{ms $.R.LateThresholdMs}})</div></div>
<div class="card"><div class="v">{{ms .Lateness.P50}}</div><div class="k">lateness p50</div></div>
<div class="card"><div class="v">{{ms .Lateness.P99}}</div><div class="k">lateness p99</div></div>
<div class="card"><div class="v">{{ms .Lateness.Max}}</div><div class="k">lateness max</div></div>
<div class="card"><div class="v">{{n .DuplicateRows}}</div><div class="k">duplicate rows ignored</div></div>
</div>
{{end}}
<h2>Outcomes</h2>
{{.Outcomes}}
{{if .R.Counts}}<div class="scroll"><table>
<tr><th>kind</th><th>outcome</th><th>attempts</th><th>duplicate rows</th></tr>
{{range .R.Counts}}<tr><td class="id">{{q .Kind}}</td><td class="id">{{qo .Outcome}}</td><td class="n">{{n .Attempts}}</td><td class="n">{{n .DuplicateRows}}</td></tr>
{{end}}</table></div>{{end}}
<h2>Lateness over time</h2>
{{.Timeline}}
<h2>Failed and retried attempts over time</h2>
{{.Failures}}
<h2>Lateness of final attempts by first tier and kind</h2>
{{if .R.Lateness}}<div class="scroll"><table>
<tr><th>first tier</th><th>kind</th><th>count</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>
{{range .R.Lateness}}<tr><td class="id">{{tier .Tier}}</td><td class="id">{{q .Kind}}</td><td class="n">{{n .Count}}</td><td class="n">{{ms .P50}}</td><td class="n">{{ms .P90}}</td><td class="n">{{ms .P99}}</td><td class="n">{{ms .P999}}</td><td class="n">{{ms .Max}}</td></tr>
{{end}}</table></div>{{else}}<p class="empty">No final attempts in this window.</p>{{end}}
<h2>Latest late (over {{ms .R.LateThresholdMs}}) or failed attempts</h2>
{{if .R.Late}}<div class="scroll"><table>
<tr><th>closed (UTC)</th><th>task</th><th>kind</th><th>outcome</th><th>lateness</th><th>attempt</th><th>path</th></tr>
{{range .R.Late}}{{$why := why .}}<tr{{if $why}} class="has-why"{{end}}><td class="t">{{attempt .Closed}}</td><td class="id">{{q .TaskID}}</td><td class="id">{{q .Kind}}</td><td class="id">{{qo .Outcome}}</td><td class="n">{{ms .LatenessMs}}</td><td class="n">{{.Attempt}}</td><td class="id">{{none .Path}}</td></tr>
{{if $why}}<tr><td></td><td class="err" colspan="6">{{$why}}</td></tr>
{{end}}{{end}}</table></div>{{else}}<p class="empty">None.</p>{{end}}
<h2>Timeline ({{ms .R.BucketMs}} buckets)</h2>
{{if .R.Timeline}}<div class="scroll"><table>
<tr><th>start (UTC)</th><th>final</th><th>p50</th><th>p99</th><th>max</th><th>failed</th><th>retried</th></tr>
{{range .R.Timeline}}<tr><td class="t">{{time .Start}}</td><td class="n">{{n .Count}}</td><td class="n">{{bms .Count .P50}}</td><td class="n">{{bms .Count .P99}}</td><td class="n">{{bms .Count .Max}}</td><td class="n">{{n .Failed}}</td><td class="n">{{n .Retried}}</td></tr>
{{end}}</table></div>{{else}}<p class="empty">No attempts in this window.</p>{{end}}
</body>
</html>
`))

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
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, label-8, y+barH/2+4, html.EscapeString(cli.Quote(string(c.Outcome))))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" rx="3" fill="%s"><title>%s: %s</title></rect>`,
			label, y, math.Max(w, 1), barH, color, html.EscapeString(cli.Quote(string(c.Outcome))), thousands(c.Attempts))
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
// the margins around the plot.
const tlWidth, tlHeight, faHeight, tlLeft, tlRight, tlTop, tlBottom = 900, 320, 220, 70, 40, 16, 44

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

	fmt.Fprintf(&c.b, `<svg class="chart" id="lateness-chart" role="img" aria-label="lateness over time, logarithmic axis" viewBox="0 0 %d %d" width="%d" height="%d">`, tlWidth, c.height, tlWidth, c.height)
	c.logAxis()
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

	fmt.Fprintf(&c.b, `<svg class="chart" id="failure-chart" role="img" aria-label="failed and retried attempts over time" viewBox="0 0 %d %d" width="%d" height="%d">`, tlWidth, c.height, tlWidth, c.height)
	c.linearAxis(yStep, thousands)
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
		lx := tlLeft + 10 + i*80
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
}

// x is the horizontal position of the time ms (Unix milliseconds).
func (c *timeline) x(ms int64) float64 {
	plotW := float64(tlWidth - tlLeft - tlRight)
	return float64(tlLeft) + plotW*float64(ms-c.from)/float64(c.to-c.from)
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

// linearAxis draws the grid and the y axis labels of a linear chart, one
// every step, labelled by label.
func (c *timeline) linearAxis(step float64, label func(int64) string) {
	for v := 0.0; v <= c.yMax+step/2; v += step {
		c.gridLine(int64(v), label(int64(v)))
	}
}

// logAxis draws the grid and the y axis labels of the logarithmic
// lateness axis: 0 and every power of ten of milliseconds up to yMax.
func (c *timeline) logAxis() {
	c.gridLine(0, "0")
	for v := int64(1); float64(v) <= c.yMax; v *= 10 {
		c.gridLine(v, tickMs(v))
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
	fmt.Fprintf(&c.b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eaeef2"/>`, tlLeft, yy, tlWidth-tlRight, yy)
	fmt.Fprintf(&c.b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, tlLeft-6, yy+4, html.EscapeString(label))
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
	fmt.Fprintf(&c.b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8c959f"/>`, tlLeft, c.height-tlBottom, tlWidth-tlRight, c.height-tlBottom)
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
		lx := tlLeft + 10 + i*80
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
