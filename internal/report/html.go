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
// SVG charts drawn here (an outcome bar chart and lateness over time), and
// no script, stylesheet, font or image from anywhere else. Strings from
// events are HTML-escaped, and written through cli.Quote first as in the
// text report: html/template leaves control and bidi characters as they
// are, and a bidi override would reorder a cell in the browser too.
func (r *Report) WriteHTML(w io.Writer) error {
	return page.Execute(w, htmlData{
		R:        r,
		Window:   r.To.Sub(r.From).Round(time.Second).String(),
		Outcomes: template.HTML(outcomeChart(r.Outcomes)),
		Timeline: template.HTML(timelineChart(r)),
	})
}

type htmlData struct {
	R        *Report
	Window   string
	Outcomes template.HTML // SVG, built with every text escaped
	Timeline template.HTML
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"q":       cli.Quote,
	"qo":      func(o outcome.Outcome) string { return cli.Quote(string(o)) },
	"ms":      ms,
	"bms":     bucketMs,
	"time":    func(t time.Time) string { return t.Format(timeLayout) },
	"attempt": func(t time.Time) string { return t.Format(attemptTime) },
	"tier":    func(t string) string { return cli.Quote(tierName(t)) },
	"none":    func(s string) string { return cli.Quote(orNone(s)) },
	"why": func(a Attempt) string {
		why := a.Error
		if why == "" {
			why = orNone(a.Detail)
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
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; margin: 24px auto; max-width: 1100px; padding: 0 16px; }
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
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.err { max-width: 360px; overflow-wrap: anywhere; color: #59636e; }
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
<div class="card"><div class="v">{{.Attempts}}</div><div class="k">attempts</div></div>
<div class="card"><div class="v">{{.Tasks}}</div><div class="k">tasks</div></div>
<div class="card"><div class="v">{{.Final}}</div><div class="k">final</div></div>
<div class="card"><div class="v">{{.Retried}}</div><div class="k">retried</div></div>
<div class="card{{if .Failed}} bad{{end}}"><div class="v">{{.Failed}}</div><div class="k">failed</div></div>
<div class="card{{if .Late}} bad{{end}}"><div class="v">{{.Late}}</div><div class="k">late (over {{ms $.R.LateThresholdMs}})</div></div>
<div class="card"><div class="v">{{ms .Lateness.P50}}</div><div class="k">lateness p50</div></div>
<div class="card"><div class="v">{{ms .Lateness.P99}}</div><div class="k">lateness p99</div></div>
<div class="card"><div class="v">{{ms .Lateness.Max}}</div><div class="k">lateness max</div></div>
<div class="card"><div class="v">{{.DuplicateRows}}</div><div class="k">duplicate rows ignored</div></div>
</div>
{{end}}
<h2>Outcomes</h2>
{{.Outcomes}}
{{if .R.Counts}}<table>
<tr><th>kind</th><th>outcome</th><th>attempts</th><th>duplicate rows</th></tr>
{{range .R.Counts}}<tr><td>{{q .Kind}}</td><td>{{qo .Outcome}}</td><td class="n">{{.Attempts}}</td><td class="n">{{.DuplicateRows}}</td></tr>
{{end}}</table>{{end}}
<h2>Lateness over time</h2>
{{.Timeline}}
<h2>Lateness of final attempts by first tier and kind</h2>
{{if .R.Lateness}}<table>
<tr><th>first tier</th><th>kind</th><th>count</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>
{{range .R.Lateness}}<tr><td>{{tier .Tier}}</td><td>{{q .Kind}}</td><td class="n">{{.Count}}</td><td class="n">{{ms .P50}}</td><td class="n">{{ms .P90}}</td><td class="n">{{ms .P99}}</td><td class="n">{{ms .P999}}</td><td class="n">{{ms .Max}}</td></tr>
{{end}}</table>{{else}}<p class="empty">No final attempts in this window.</p>{{end}}
<h2>Latest late (over {{ms .R.LateThresholdMs}}) or failed attempts</h2>
{{if .R.Late}}<table>
<tr><th>closed (UTC)</th><th>task</th><th>kind</th><th>outcome</th><th>lateness</th><th>attempt</th><th>path</th><th>error or detail</th></tr>
{{range .R.Late}}<tr><td>{{attempt .Closed}}</td><td>{{q .TaskID}}</td><td>{{q .Kind}}</td><td>{{qo .Outcome}}</td><td class="n">{{ms .LatenessMs}}</td><td class="n">{{.Attempt}}</td><td>{{none .Path}}</td><td class="err">{{why .}}</td></tr>
{{end}}</table>{{else}}<p class="empty">None.</p>{{end}}
<h2>Timeline ({{ms .R.BucketMs}} buckets)</h2>
{{if .R.Timeline}}<table>
<tr><th>start (UTC)</th><th>final</th><th>p50</th><th>p99</th><th>max</th><th>failed</th><th>retried</th></tr>
{{range .R.Timeline}}<tr><td>{{time .Start}}</td><td class="n">{{.Count}}</td><td class="n">{{bms .Count .P50}}</td><td class="n">{{bms .Count .P99}}</td><td class="n">{{bms .Count .Max}}</td><td class="n">{{.Failed}}</td><td class="n">{{.Retried}}</td></tr>
{{end}}</table>{{else}}<p class="empty">No attempts in this window.</p>{{end}}
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
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" rx="3" fill="%s"><title>%s: %d</title></rect>`,
			label, y, math.Max(w, 1), barH, color, html.EscapeString(cli.Quote(string(c.Outcome))), c.Attempts)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%d</text>`, float64(label)+math.Max(w, 1)+6, y+barH/2+4, c.Attempts)
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

// Geometry of the lateness chart, in SVG units: its size and the margins
// around the plot.
const tlWidth, tlHeight, tlLeft, tlRight, tlTop, tlBottom = 900, 320, 70, 40, 16, 44

// timelineChart draws p50, p99 and max lateness per bucket over the window.
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
	yMax, yStep := niceScale(float64(most))
	bucket := max(r.BucketMs, 1)
	c := &timeline{from: r.From.UnixMilli(), to: r.To.UnixMilli(), yMax: yMax}

	fmt.Fprintf(&c.b, `<svg class="chart" id="lateness-chart" role="img" aria-label="lateness over time" viewBox="0 0 %d %d" width="%d" height="%d">`, tlWidth, tlHeight, tlWidth, tlHeight)
	c.yAxis(yStep)
	c.xAxis(axisLayout(r.To.Sub(r.From)))
	c.series(points, bucket)
	c.legend(bucket)
	c.b.WriteString(`</svg>`)
	return c.b.String()
}

// timeline is the lateness chart being drawn: x spans the window [from,
// to) in Unix milliseconds, y spans 0 to yMax milliseconds of lateness.
type timeline struct {
	b        strings.Builder
	from, to int64
	yMax     float64
}

// x is the horizontal position of the time ms (Unix milliseconds).
func (c *timeline) x(ms int64) float64 {
	plotW := float64(tlWidth - tlLeft - tlRight)
	return float64(tlLeft) + plotW*float64(ms-c.from)/float64(c.to-c.from)
}

// y is the vertical position of the lateness v (milliseconds).
func (c *timeline) y(v int64) float64 {
	plotH := float64(tlHeight - tlTop - tlBottom)
	return float64(tlTop) + plotH*(1-float64(v)/c.yMax)
}

// yAxis draws the grid and the y axis labels, one every step.
func (c *timeline) yAxis(step float64) {
	for v := 0.0; v <= c.yMax+step/2; v += step {
		yy := c.y(int64(v))
		fmt.Fprintf(&c.b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eaeef2"/>`, tlLeft, yy, tlWidth-tlRight, yy)
		fmt.Fprintf(&c.b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, tlLeft-6, yy+4, html.EscapeString(ms(int64(v))))
	}
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
		fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d0d7de"/>`, xx, tlHeight-tlBottom, xx, tlHeight-tlBottom+4)
		fmt.Fprintf(&c.b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, xx, tlHeight-tlBottom+16, html.EscapeString(time.UnixMilli(t).UTC().Format(layout)))
	}
	fmt.Fprintf(&c.b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#8c959f"/>`, tlLeft, tlHeight-tlBottom, tlWidth-tlRight, tlHeight-tlBottom)
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
			fmt.Fprintf(&c.b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"><title>%s %s: %s (%d final)</title></circle>`,
				xy[0], xy[1], s.color, html.EscapeString(k.Start.Format(timeLayout)), s.name, html.EscapeString(ms(s.value(k))), k.Count)
		}
	}
}

// legend names the series and the bucket size.
func (c *timeline) legend(bucket int64) {
	for i, s := range timelineSeries {
		lx := tlLeft + 10 + i*80
		fmt.Fprintf(&c.b, `<rect x="%d" y="%d" width="12" height="3" fill="%s"/><text x="%d" y="%d">%s</text>`, lx, tlHeight-14, s.color, lx+16, tlHeight-10, s.name)
	}
	fmt.Fprintf(&c.b, `<text x="%d" y="%d" text-anchor="end">bucket %s, UTC</text>`, tlWidth-tlRight, tlHeight-10, html.EscapeString(ms(bucket)))
}

// niceScale returns an axis maximum of at least v and its step: 1, 2 or 5
// times a power of ten, in 4 to 5 steps. Zero gets a scale of 1 ms.
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
	step = math.Max(step, 1) // whole milliseconds
	return math.Ceil(v/step) * step, step
}
