package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/report"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

// due is a deadline of task id of kind and target, due at at, from
// offset off of a delay topic.
func due(id, kind, target string, at time.Time, off int64) chstore.Deadline {
	sched := at.Add(-time.Hour).UnixMilli()
	return chstore.Deadline{TaskID: id, Kind: kind, Target: target, DueMs: at.UnixMilli(), ScheduledMs: sched, RecordMs: sched,
		Topic: "hourglass.delay.30m", Partition: int32(off % 3), Offset: off}
}

// jsonReport builds the report of s up to to with the forecast, and
// returns it as its JSON decodes.
func jsonReport(t *testing.T, s *chstore.Store, to time.Time, forecast time.Duration) report.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := report.Build(ctx, s, report.Options{From: to.Add(-time.Hour), To: to, Now: to, Forecast: forecast})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	return back
}

// TestForecast checks the report's forecast against a known schedule: a
// burst of deadlines due at one instant is counted in its minute, by kind
// and target, with the peak and the overdue deadlines before the report's
// end, and drops as outcomes close the deadlines.
func TestForecast(t *testing.T) {
	s := chtest.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := t0.Add(30*time.Minute + 20*time.Second) // the report's end, within a minute
	const burst = 300
	at := t0.Add(2 * time.Hour) // the burst's instant
	var rows chstore.IndexRows
	for i := range burst {
		rows.Deadlines = append(rows.Deadlines, due(fmt.Sprint("b", i), "order-timeout", "", at, int64(i)))
	}
	for i := range 4 { // overdue, 5 minutes before the end
		rows.Deadlines = append(rows.Deadlines, due(fmt.Sprint("o", i), "order-timeout", "", now.Add(-5*time.Minute), int64(1000+i)))
	}
	for i := range 7 { // reminders, a minute later each
		rows.Deadlines = append(rows.Deadlines, due(fmt.Sprint("r", i), "reminder", "hourglass.sms", at.Add(time.Duration(i+1)*time.Minute), int64(2000+i)))
	}
	rows.Deadlines = append(rows.Deadlines,
		due("past", "order-timeout", "", now.Add(-11*time.Minute), 3000), // before the lookback
		due("far", "order-timeout", "", now.Add(6*time.Hour), 3001),      // past the forecast
	)
	if err := s.InsertIndex(ctx, &rows); err != nil {
		t.Fatal(err)
	}

	r := jsonReport(t, s, now, 0)
	f := r.Forecast
	if f == nil {
		t.Fatal("JSON report has no forecast")
	}
	if !f.From.Equal(now.Add(-report.ForecastLookback)) || !f.To.Equal(now.Add(report.DefaultForecast)) {
		t.Errorf("forecast window [%v, %v), want 10 minutes before the end to 6 hours after it", f.From, f.To)
	}
	burstMinute := report.Minute{Start: at, Count: burst}
	wantMinutes := []report.Minute{{Start: now.Add(-5 * time.Minute).Truncate(time.Minute), Count: 4}, burstMinute}
	for i := range 7 {
		wantMinutes = append(wantMinutes, report.Minute{Start: at.Add(time.Duration(i+1) * time.Minute), Count: 1})
	}
	if !reflect.DeepEqual(f.Minutes, wantMinutes) {
		t.Errorf("minutes %+v,\nwant %+v", f.Minutes, wantMinutes)
	}
	if f.Total != burst+4+7 || f.Overdue != 4 || f.Peak != burstMinute {
		t.Errorf("total %d, overdue %d, peak %+v; want %d, 4, %+v", f.Total, f.Overdue, f.Peak, burst+11, burstMinute)
	}
	wantKinds := []report.DueCount{{Name: "order-timeout", Count: burst + 4}, {Name: "reminder", Count: 7}}
	wantTargets := []report.DueCount{{Name: "", Count: burst + 4}, {Name: "hourglass.sms", Count: 7}}
	if !reflect.DeepEqual(f.ByKind, wantKinds) || !reflect.DeepEqual(f.ByTarget, wantTargets) {
		t.Errorf("by kind %+v, by target %+v; want %+v, %+v", f.ByKind, f.ByTarget, wantKinds, wantTargets)
	}
	if len(f.Due) != 9 || f.Due[1] != (report.Due{Minute: at, Kind: "order-timeout", Count: burst}) {
		t.Errorf("due %+v, want 9 rows, the burst second", f.Due)
	}

	// Closes end 120 of the burst and the overdue ones; a retry ends none.
	var evs []outcome.Event
	closeEv := func(id string, o outcome.Outcome, dueAt time.Time, off int64) outcome.Event {
		closed := dueAt.Add(50 * time.Millisecond).UnixMilli()
		return outcome.Event{V: outcome.Version, TaskID: id, Kind: "order-timeout", Outcome: o, Attempt: 1, DueMs: dueAt.UnixMilli(),
			DeadlineMs: dueAt.UnixMilli(), ClosedMs: closed, LatenessMs: 50, Topic: "hourglass.cancel", Offset: off}
	}
	for i := range 120 {
		evs = append(evs, closeEv(fmt.Sprint("b", i), outcome.Closed, at, int64(i)))
	}
	evs = append(evs, closeEv("b120", outcome.Retry, at, 120))
	for i := range 4 {
		evs = append(evs, closeEv(fmt.Sprint("o", i), outcome.Closed, now.Add(-5*time.Minute), int64(200+i)))
	}
	if err := s.Insert(ctx, evs); err != nil {
		t.Fatal(err)
	}
	f = jsonReport(t, s, now, 0).Forecast
	if want := (report.Minute{Start: at, Count: burst - 120}); f == nil || len(f.Minutes) != 8 || f.Minutes[0] != want || f.Peak != want || f.Overdue != 0 {
		t.Errorf("after closes: forecast %+v, want the burst's minute first with %d and nothing overdue", f, burst-120)
	}

	// A shorter forecast leaves the burst out; a negative one leaves the
	// forecast out of the report.
	if f := jsonReport(t, s, now, time.Hour).Forecast; f == nil || f.Total != 0 || len(f.Minutes) != 0 || !f.Peak.Start.IsZero() {
		t.Errorf("forecast of an hour: %+v, want none due", f)
	}
	r = jsonReport(t, s, now, -1)
	if r.Forecast != nil {
		t.Errorf("forecast -1: %+v, want none", r.Forecast)
	}
	if _, err := report.Build(ctx, s, report.Options{From: t0, To: now, Forecast: report.MaxForecast + time.Minute}); err == nil ||
		!strings.Contains(err.Error(), "forecast") {
		t.Errorf("forecast longer than %v: %v, want an error", report.MaxForecast, err)
	}
}

// TestForecastText: the text report lists the forecast's totals, kinds,
// targets and minutes, the router's default kind and target named so.
func TestForecastText(t *testing.T) {
	r := fixture()
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Open deadlines due from 2024-05-14 12:50:00 to 2024-05-14 19:00:00 UTC\n",
		"  total 54,020, overdue 20; peak 12,150 due in the minute of 2024-05-14 14:30\n",
		"  order-timeout  30,020\n",
		"  (default)      30,020\n",
		"  2024-05-14 14:30  order-timeout  (default)      12,150\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text has no %q:\n%s", want, out)
		}
	}
}

var dueBarRE = regexp.MustCompile(`<rect class="due" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="(#[0-9a-f]{6})"><title>([^<]*)</title>`)

// TestHTMLForecastChart: the forecast chart draws a bar per minute and
// kind, heights following the counts, the most frequent kind in the first
// color; it marks the report's end and labels the peak.
func TestHTMLForecastChart(t *testing.T) {
	r := fixture()
	page := renderHTML(t, r)
	chart := svg(t, page, "forecast-chart")
	bars := dueBarRE.FindAllStringSubmatch(chart, -1)
	if len(bars) != len(r.Forecast.Due) {
		t.Fatalf("%d bars, want one per row of the forecast (%d)", len(bars), len(r.Forecast.Due))
	}
	// Height per deadline, from the tallest bar; a bar is at least half a
	// unit high, and heights are written to a tenth.
	perUnit := 0.0
	for _, b := range bars {
		h, _ := strconv.ParseFloat(b[4], 64)
		perUnit = max(perUnit, h/float64(r.Forecast.Peak.Count))
	}
	var peakX float64
	for i, b := range bars {
		h, _ := strconv.ParseFloat(b[4], 64)
		n := r.Forecast.Due[i].Count
		if want := map[string]string{"order-timeout": "#8250df", "reminder": "#0969da"}[r.Forecast.Due[i].Kind]; b[5] != want {
			t.Errorf("bar %d of kind %s: fill %s, want %s", i, r.Forecast.Due[i].Kind, b[5], want)
		}
		if d := h - perUnit*float64(n); d > 0.5 || d < -0.1 {
			t.Errorf("bar %q: %.1f units high, want %.1f for %d deadlines", b[0], h, perUnit*float64(n), n)
		}
		if r.Forecast.Due[i].Minute.Equal(burstMinute) {
			peakX, _ = strconv.ParseFloat(b[1], 64)
			if !strings.Contains(b[6], "12,150 due") {
				t.Errorf("the burst's bar says %q", b[6])
			}
		}
	}
	if tall := perUnit * 12_150; tall < 140 {
		t.Errorf("the burst's bar is %.1f units high, want most of the 180-unit plot", tall)
	}
	if peakX == 0 {
		t.Error("no bar at the burst's minute")
	}
	for _, want := range []string{`<line class="now"`, ">peak 12,150 at 14:30<", ">order-timeout<", ">reminder<", "due per minute, UTC"} {
		if !strings.Contains(chart, want) {
			t.Errorf("forecast chart has no %s", want)
		}
	}
	for _, want := range []string{`<div class="v">54,020</div><div class="k">due`, `<div class="card bad"><div class="v">20</div><div class="k">overdue`,
		`<td class="id">(default)</td><td class="n">30,020</td>`, `<td class="id">hourglass.sms</td><td class="n">24,000</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page has no %s", want)
		}
	}

	r.Forecast = &report.Forecast{From: r.Forecast.From, To: r.Forecast.To}
	if page := renderHTML(t, r); strings.Contains(page, `id="forecast-chart"`) || !strings.Contains(page, "No open deadlines due in this window.") {
		t.Error("no deadlines due: want no chart and a sentence saying so")
	}
	r.Forecast = nil
	if page := renderHTML(t, r); strings.Contains(page, "Open deadlines due") {
		t.Error("a report without a forecast has a forecast section")
	}
}
