package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/report"
)

// longTask is a task id of the length real order ids reach.
const longTask = "order-2024-05-14-7f3a9c1e-5b2d-4e8f-9a61-0c3d2e1f4b5a"

// spikeBucket is the bucket of fixture whose max lateness is a spike of
// ten minutes, 10,000 times its p99.
const spikeBucket = 37

// fixture is an hour of a busy pipeline with one spike, built by hand:
// minute buckets of thousands of final attempts with lateness of
// milliseconds, one bucket whose max is ten minutes, and failed and retried
// attempts in some buckets.
func fixture() *report.Report {
	from := time.Date(2024, 5, 14, 12, 0, 0, 0, time.UTC)
	r := &report.Report{
		Generated: from.Add(65 * time.Minute), From: from, To: from.Add(time.Hour), Database: "hourglass",
		LateThresholdMs: 1000, BucketMs: 60_000, Limit: 20,
		Summary: report.Summary{
			Attempts: 1_234_567, Tasks: 1_230_001, Final: 1_229_100, Retried: 4_321, Failed: 1_146, Late: 12, DuplicateRows: 2_048,
			Lateness: report.Quantiles{Count: 1_229_100, P50: 4, P90: 21, P99: 63, P999: 410, Max: 600_000},
		},
		Outcomes: []report.OutcomeCount{{"closed", 1_000_200}, {"skipped", 228_000}, {"not_found", 900}, {"retry", 4_321}, {"failed", 1_146}},
		Counts: []report.Count{
			{Kind: "order-timeout", Outcome: "closed", Attempts: 1_000_200, DuplicateRows: 2_000},
			{Kind: "order-timeout", Outcome: "skipped", Attempts: 228_000, DuplicateRows: 48},
			{Kind: "reminder", Outcome: "not_found", Attempts: 900},
			{Kind: "reminder", Outcome: "retry", Attempts: 4_321},
			{Kind: "reminder", Outcome: "failed", Attempts: 1_146},
		},
		Lateness: []report.Lateness{
			{Tier: "1m", Kind: "order-timeout", Quantiles: report.Quantiles{Count: 900_000, P50: 3, P90: 18, P99: 55, P999: 300, Max: 600_000}},
			{Tier: "30m", Kind: "order-timeout", Quantiles: report.Quantiles{Count: 328_200, P50: 6, P90: 25, P99: 80, P999: 520, Max: 2_400}},
			{Tier: "5m", Kind: "reminder", Quantiles: report.Quantiles{Count: 900, P50: 9, P90: 40, P99: 130, P999: 900, Max: 1_900}},
		},
	}
	for i := range 60 {
		b := report.Bucket{
			Start: from.Add(time.Duration(i) * time.Minute), Count: int64(18_000 + 1_500*(i%7)),
			P50: int64(2 + i%5), P99: int64(40 + 10*(i%6)), Max: int64(200 + 70*(i%9)),
		}
		if i == spikeBucket {
			b.Max = 600_000
		}
		if i%4 == 1 {
			b.Retried = int64(20 + 9*(i%11))
		}
		if i >= 40 && i < 46 {
			b.Failed, b.Retried = int64(150+30*(i-40)), b.Retried+int64(400)
		}
		r.Timeline = append(r.Timeline, b)
	}
	for i := range 12 {
		a := report.Attempt{
			TaskID: fmt.Sprintf("%s-%02d", longTask, i), Kind: "order-timeout", Outcome: "closed", Attempt: 1, Path: "30m*2,5m,1m",
			Due: from.Add(time.Duration(59-i) * time.Minute), LatenessMs: int64(1_500 + 700*i), Instance: "canceller-0",
			Topic: "hourglass.cancel", Partition: int32(i % 3), Offset: int64(1_000_000 + i),
		}
		if i%3 == 0 {
			a.Outcome, a.Attempt, a.Error = "failed", 5, "orders: dial tcp 10.0.3.17:5432: connect: connection refused (after 5 attempts, giving up)"
		}
		a.Closed = a.Due.Add(time.Duration(a.LatenessMs) * time.Millisecond)
		r.Late = append(r.Late, a)
	}
	r.Late[4].Due, r.Late[4].LatenessMs = r.Late[4].Closed.Add(-10*time.Minute), 600_000 // the spike
	r.Forecast = forecastFixture(r.To)
	return r
}

// burstMinute is the minute of forecastFixture's burst.
var burstMinute = time.Date(2024, 5, 14, 14, 30, 0, 0, time.UTC)

// forecastFixture is the forecast of a report up to now: 20 deadlines
// overdue, 150 order timeouts a minute for two hours with a burst of
// 12,000 more at burstMinute, then an hour of 400 reminders a minute to
// another target.
func forecastFixture(now time.Time) *report.Forecast {
	f := &report.Forecast{From: now.Add(-report.ForecastLookback), To: now.Add(report.DefaultForecast), Total: 54_020, Overdue: 20,
		Peak:     report.Minute{Start: burstMinute, Count: 12_150},
		ByKind:   []report.DueCount{{Name: "order-timeout", Count: 30_020}, {Name: "reminder", Count: 24_000}},
		ByTarget: []report.DueCount{{Name: "", Count: 30_020}, {Name: "hourglass.sms", Count: 24_000}},
	}
	add := func(m time.Time, kind, target string, n int64) {
		f.Due = append(f.Due, report.Due{Minute: m, Kind: kind, Target: target, Count: n})
		f.Minutes = append(f.Minutes, report.Minute{Start: m, Count: n})
	}
	add(now.Add(-5*time.Minute), "order-timeout", "", 20)
	for i := range 120 {
		m, n := now.Add(time.Duration(i)*time.Minute), int64(150)
		if m.Equal(burstMinute) {
			n += 12_000
		}
		add(m, "order-timeout", "", n)
	}
	for i := range 60 {
		add(now.Add(2*time.Hour+time.Duration(i)*time.Minute), "reminder", "hourglass.sms", 400)
	}
	return f
}

func renderHTML(t *testing.T, r *report.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// svg returns the SVG element of page with the id.
func svg(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `<svg class="chart" id="`+id+`"`)
	if i < 0 {
		t.Fatalf("page has no chart %s", id)
	}
	j := strings.Index(page[i:], "</svg>")
	return page[i : i+j]
}

var dotRE = regexp.MustCompile(`<circle class="dot-(\w+)" cx="[\d.]+" cy="([\d.]+)"`)

// dots returns the y positions of the dots of each series of the lateness
// chart, in bucket order.
func dots(t *testing.T, chart string) map[string][]float64 {
	t.Helper()
	ys := map[string][]float64{}
	for _, m := range dotRE.FindAllStringSubmatch(chart, -1) {
		y, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		ys[m[1]] = append(ys[m[1]], y)
	}
	return ys
}

// TestHTMLLatenessSpike: a spike of ten minutes in one bucket does not
// flatten p50 and p99 of milliseconds to the floor: in every bucket they
// stand well apart from each other and from the floor (a linear axis up to
// ten minutes would put both within a pixel of it).
func TestHTMLLatenessSpike(t *testing.T) {
	r := fixture()
	chart := svg(t, renderHTML(t, r), "lateness-chart")
	ys := dots(t, chart)
	if len(ys["p50"]) != 60 || len(ys["p99"]) != 60 || len(ys["max"]) != 60 {
		t.Fatalf("dots per series %d p50, %d p99, %d max; want 60 each", len(ys["p50"]), len(ys["p99"]), len(ys["max"]))
	}
	floor := regexp.MustCompile(`<line x1="70" y1="([\d.]+)"[^>]*/><text[^>]*>0</text>`).FindStringSubmatch(chart)
	if floor == nil {
		t.Fatalf("lateness chart has no grid line at 0:\n%s", chart)
	}
	y0, _ := strconv.ParseFloat(floor[1], 64)
	const visible = 20.0 // SVG units; the plot is 260 high
	for i := range 60 {
		p50, p99, mx := ys["p50"][i], ys["p99"][i], ys["max"][i]
		if y0-p50 < visible || p50-p99 < visible || mx > p99 {
			t.Errorf("bucket %d: floor %.1f, p50 %.1f, p99 %.1f, max %.1f: want p50 and p99 each %.0f above the one below, max not below p99",
				i, y0, p50, p99, mx, visible)
		}
	}
	if top := ys["max"][spikeBucket]; top > 16+26 {
		t.Errorf("the spike is at y %.1f, want it in the top tenth of the plot (16 to 276)", top)
	}
	for _, want := range []string{">1ms<", ">10ms<", ">100ms<", ">1s<", ">10s<", ">100s<", ">1,000s<", "log scale"} {
		if !strings.Contains(chart, want) {
			t.Errorf("lateness chart has no %q", want)
		}
	}
}

var barRE = regexp.MustCompile(`<rect class="bar-(\w+)" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"[^>]*><title>([^<]*)</title>`)

// TestHTMLFailureChart: failed and retried attempts are drawn per bucket as
// stacked bars whose heights follow the counts.
func TestHTMLFailureChart(t *testing.T) {
	r := fixture()
	chart := svg(t, renderHTML(t, r), "failure-chart")
	bars := barRE.FindAllStringSubmatch(chart, -1)
	want := map[string]int{}
	var most int64
	for _, k := range r.Timeline {
		if k.Failed > 0 {
			want["failed"]++
		}
		if k.Retried > 0 {
			want["retried"]++
		}
		most = max(most, k.Failed+k.Retried)
	}
	got := map[string]int{}
	perUnit := 0.0 // height of one attempt
	for _, b := range bars {
		got[b[1]]++
		h, _ := strconv.ParseFloat(b[5], 64)
		n, _ := strconv.ParseInt(strings.ReplaceAll(b[6][strings.LastIndex(b[6], " ")+1:], ",", ""), 10, 64)
		if n <= 0 || h <= 0 {
			t.Errorf("bar %q: height %v for %d attempts", b[0], h, n)
			continue
		}
		if perUnit == 0 {
			perUnit = h / float64(n)
		} else if d := h/float64(n) - perUnit; d > 0.01*perUnit || d < -0.01*perUnit {
			t.Errorf("bar %q: %.3f units per attempt, want %.3f like the others", b[0], h/float64(n), perUnit)
		}
	}
	if got["failed"] != want["failed"] || got["retried"] != want["retried"] {
		t.Errorf("bars %v, want %v", got, want)
	}
	if !strings.Contains(chart, "failed") || !strings.Contains(chart, "retried") {
		t.Error("failure chart has no legend")
	}
	if tall := perUnit * float64(most); tall < 120 {
		t.Errorf("the tallest stack is %.1f units high, want most of the 160-unit plot", tall)
	}

	for i := range r.Timeline {
		r.Timeline[i].Failed, r.Timeline[i].Retried = 0, 0
	}
	if page := renderHTML(t, r); strings.Contains(page, `id="failure-chart"`) || !strings.Contains(page, "No failed or retried attempts in this window.") {
		t.Error("no failed or retried attempts: want no chart and a sentence saying so")
	}
}

// TestThousands: counts in text and HTML have thousands separators; JSON
// keeps plain numbers.
func TestThousands(t *testing.T) {
	r := fixture()
	page := renderHTML(t, r)
	for _, want := range []string{
		`<div class="v">1,234,567</div><div class="k">attempts`, `<td class="n">1,000,200</td><td class="n">2,000</td>`,
		`<td class="n">900,000</td>`, `<text x="`, `>1,000,200</text>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("html has no %s", want)
		}
	}
	if regexp.MustCompile(`>\d{4,}<`).MatchString(page) {
		t.Errorf("html has a number of four digits or more without separators: %s", regexp.MustCompile(`>\d{4,}<`).FindString(page))
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Attempts 1,234,567 (tasks 1,230,001): final 1,229,100, retried 4,321, failed 1,146; late (over 1s) 12; duplicate rows ignored 2,048",
		"  closed     1,000,200\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text has no %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"attempts": 1234567`) {
		t.Errorf("json attempts is not a plain number:\n%.400s", js.String())
	}
	var back report.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Summary != r.Summary {
		t.Errorf("json does not round-trip the summary (%v): %+v", err, back.Summary)
	}
}

// TestHTMLNoWrap: ids and times are in cells that do not wrap.
func TestHTMLNoWrap(t *testing.T) {
	page := renderHTML(t, fixture())
	if !regexp.MustCompile(`td\.id, td\.t \{ white-space: nowrap; \}`).MatchString(page) {
		t.Error("no white-space: nowrap for td.id and td.t")
	}
	for _, want := range []string{`<td class="id">` + longTask + `-00</td>`, `<td class="t">2024-05-14 12:59:01.500</td>`, `<div class="scroll"><table>`} {
		if !strings.Contains(page, want) {
			t.Errorf("html has no %s", want)
		}
	}
}

var yLabelRE = regexp.MustCompile(`<line x1="(\d+)" y1="[\d.]+" x2="\d+" y2="[\d.]+" stroke="#eaeef2"/><text x="(\d+)" y="[\d.]+" text-anchor="end">([^<]*)</text>`)

// TestHTMLLargeAxisLabels: the y axis labels of large values (a lateness of
// 50 days, 10,000,000s at the top of the log axis; failures in the
// hundreds of millions) fit left of the plot: the left margin grows with
// them instead of cutting them at the chart's edge.
func TestHTMLLargeAxisLabels(t *testing.T) {
	r := fixture()
	r.Timeline[spikeBucket].Max = 50 * 24 * 3600 * 1000
	r.Timeline[41].Failed = 123_456_789
	page := renderHTML(t, r)
	for _, tc := range []struct{ id, widest string }{
		{"lateness-chart", "10,000,000s"},
		{"failure-chart", "150,000,000"},
	} {
		chart := svg(t, page, tc.id)
		labels := yLabelRE.FindAllStringSubmatch(chart, -1)
		if len(labels) < 3 {
			t.Fatalf("%s: %d y axis labels:\n%s", tc.id, len(labels), chart)
		}
		found := false
		for _, m := range labels {
			line, _ := strconv.Atoi(m[1])
			x, _ := strconv.Atoi(m[2])
			found = found || m[3] == tc.widest
			// 11px system-ui digits are about 6.2 units wide; commas and
			// the unit fit in the rounding.
			if width := 6.2 * float64(len(m[3])); float64(x)-width < 0 || x >= line {
				t.Errorf("%s: label %q ends at x %d, %.0f units wide, left of the plot at %d: want it inside the chart", tc.id, m[3], x, width, line)
			}
		}
		if !found {
			t.Errorf("%s: no label %q among %v", tc.id, tc.widest, labels)
		}
	}
	// The usual labels keep the usual margin.
	if chart := svg(t, renderHTML(t, fixture()), "lateness-chart"); !strings.Contains(chart, `<line x1="70" `) {
		t.Errorf("lateness chart of the fixture does not start at x 70")
	}
}
