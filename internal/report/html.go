package report

import (
	"html/template"
	"io"
	"time"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/term"
)

// WriteHTML writes r as one self-contained HTML page: inline CSS, inline
// SVG charts drawn here (an outcome bar chart, lateness over time on a
// logarithmic axis with its peak labelled, failed and retried attempts
// over time, and the forecast of open deadlines due per minute by kind),
// and no script, stylesheet, font or image from anywhere else.
// Counts have thousands separators; ids and times do not wrap (a table too
// wide scrolls sideways), and the error or detail of a late or failed
// attempt takes a row of its own under it. Strings from events are
// HTML-escaped, and written through term.Quote first as in the text report:
// html/template leaves control and bidi characters as they are, and a bidi
// override would reorder a cell in the browser too.
func (r *Report) WriteHTML(w io.Writer) error {
	return page.Execute(w, htmlData{
		R:        r,
		Window:   r.To.Sub(r.From).Round(time.Second).String(),
		Outcomes: template.HTML(outcomeChart(r.Outcomes)),
		Timeline: template.HTML(timelineChart(r)),
		Failures: template.HTML(failureChart(r)),
		Forecast: template.HTML(forecastChart(r)),
	})
}

type htmlData struct {
	R        *Report
	Window   string
	Outcomes template.HTML // SVG, built with every text escaped
	Timeline template.HTML
	Failures template.HTML
	Forecast template.HTML
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"q":       term.Quote,
	"qo":      func(o outcome.Outcome) string { return term.Quote(string(o)) },
	"ms":      ms,
	"n":       thousands,
	"bms":     bucketMs,
	"time":    func(t time.Time) string { return t.Format(timeLayout) },
	"attempt": func(t time.Time) string { return t.Format(attemptTime) },
	"tier":    func(t string) string { return term.Quote(tierName(t)) },
	"none":    func(s string) string { return term.Quote(orNone(s)) },
	"dflt":    func(s string) string { return term.Quote(orDefault(s)) },
	"minute":  func(t time.Time) string { return t.Format(minuteLayout) },
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
		return term.Quote(spaced(why)) // the browser shows white space as one space anyway
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
{{with .R.Forecast}}
<h2 id="forecast">Open deadlines due, {{time .From}} to {{time .To}} UTC</h2>
<div class="cards">
<div class="card"><div class="v">{{n .Total}}</div><div class="k">due</div></div>
<div class="card{{if .Overdue}} bad{{end}}"><div class="v">{{n .Overdue}}</div><div class="k">overdue</div></div>
<div class="card"><div class="v">{{n .Peak.Count}}</div><div class="k">most in one minute{{if .Peak.Count}} ({{minute .Peak.Start}}){{end}}</div></div>
</div>
{{$.Forecast}}
{{if .Total}}<div class="scroll"><table>
<tr><th>kind</th><th>due</th></tr>
{{range .ByKind}}<tr><td class="id">{{dflt .Name}}</td><td class="n">{{n .Count}}</td></tr>
{{end}}</table>
<table>
<tr><th>target</th><th>due</th></tr>
{{range .ByTarget}}<tr><td class="id">{{dflt .Name}}</td><td class="n">{{n .Count}}</td></tr>
{{end}}</table></div>{{end}}
{{end}}
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
