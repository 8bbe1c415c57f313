package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/report"
	"github.com/hourglass/hourglass/internal/term"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

func TestMain(m *testing.M) { chtest.Main(m, "report", nil) }

var t0 = time.Date(2024, 5, 14, 12, 0, 0, 0, time.UTC)

// ev is an attempt closed at t0+at, late by late ms, from cancel record
// offset off.
func ev(task, kind, out, path string, at time.Duration, late, off int64) outcome.Event {
	closed := t0.Add(at).UnixMilli()
	return outcome.Event{V: outcome.Version, TaskID: task, Kind: kind, Outcome: outcome.Outcome(out), Path: path, Attempt: 1,
		DueMs: closed - late, DeadlineMs: closed - late, ClosedMs: closed, LatenessMs: late, Instance: "i1",
		Topic: "hourglass.cancel", Partition: 0, Offset: off}
}

// seeded returns a store holding a window's attempts: 12 closes by tier 1m
// (lateness 1..12 ms), a close by tier 30m replayed as already_closed, a
// retry and a failure of task f, and a late not_found.
func seeded(t *testing.T) *chstore.Store {
	t.Helper()
	var evs []outcome.Event
	for i := range int64(12) {
		evs = append(evs, ev("c"+string(rune('a'+i)), "order-timeout", "closed", "1m", time.Duration(i)*10*time.Second, i+1, i))
	}
	first := ev("x", "order-timeout", "closed", "30m*2,5m", 3*time.Minute, 40, 100)
	replay := first
	replay.Outcome, replay.ClosedMs, replay.LatenessMs = "already_closed", first.ClosedMs+5000, 5040
	retry := ev("f", "reminder", "retry", "5m", 4*time.Minute, 7, 101)
	failed := ev("f", "reminder", "failed", "5m", 5*time.Minute, 9000, 102)
	failed.Attempt, failed.Error = 2, "orders: connection refused"
	nf := ev("n", "reminder", "not_found", "5m,1m", 6*time.Minute+500*time.Millisecond, 2500, 103)
	nf.Detail = "no such order"
	evs = append(evs, first, replay, retry, failed, nf, first) // first again: a recorder replay
	s := chtest.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Insert(ctx, evs); err != nil {
		t.Fatal(err)
	}
	return s
}

func build(t *testing.T, s *chstore.Store, o report.Options) *report.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o.From.IsZero() {
		o.From, o.To = t0, t0.Add(10*time.Minute)
	}
	o.Now = t0.Add(time.Hour)
	r, err := report.Build(ctx, s, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBuild(t *testing.T) {
	s := seeded(t)
	r := build(t, s, report.Options{})
	wantSummary := report.Summary{
		Attempts: 16, Tasks: 15, Final: 14, Retried: 1, Failed: 1, Late: 1, DuplicateRows: 2,
		// Final lateness: 1..12, 40, 2500 (14 values).
		Lateness: report.Quantiles{Count: 14, P50: 8, P90: 40, P99: 2500, P999: 2500, Max: 2500},
	}
	if r.Summary != wantSummary {
		t.Errorf("summary\n got %+v\nwant %+v", r.Summary, wantSummary)
	}
	wantOutcomes := []report.OutcomeCount{{"closed", 13}, {"not_found", 1}, {"retry", 1}, {"failed", 1}}
	if !reflect.DeepEqual(r.Outcomes, wantOutcomes) {
		t.Errorf("outcomes %+v, want %+v", r.Outcomes, wantOutcomes)
	}
	wantLateness := []report.Lateness{
		{Tier: "1m", Kind: "order-timeout", Quantiles: report.Quantiles{Count: 12, P50: 7, P90: 11, P99: 12, P999: 12, Max: 12}},
		{Tier: "30m", Kind: "order-timeout", Quantiles: report.Quantiles{Count: 1, P50: 40, P90: 40, P99: 40, P999: 40, Max: 40}},
		{Tier: "5m", Kind: "reminder", Quantiles: report.Quantiles{Count: 1, P50: 2500, P90: 2500, P99: 2500, P999: 2500, Max: 2500}},
	}
	if !reflect.DeepEqual(r.Lateness, wantLateness) {
		t.Errorf("lateness\n got %+v\nwant %+v", r.Lateness, wantLateness)
	}
	var late []string
	for _, a := range r.Late {
		late = append(late, a.TaskID+"/"+string(a.Outcome))
	}
	if want := []string{"n/not_found", "f/failed"}; !reflect.DeepEqual(late, want) {
		t.Errorf("late %v, want %v", late, want)
	}
	if len(r.Late) == 2 && (r.Late[1].Error != "orders: connection refused" || r.Late[1].Attempt != 2 || r.Late[0].Detail != "no such order") {
		t.Errorf("late attempts lost their error or detail: %+v", r.Late)
	}
	if r.BucketMs != 10_000 || len(r.Timeline) != 16 {
		t.Errorf("bucket %dms with %d buckets, want 10s (10 minutes in at most 60) and 16 buckets", r.BucketMs, len(r.Timeline))
	}
}

func TestBuildOptions(t *testing.T) {
	s := seeded(t)
	tests := []struct {
		name     string
		o        report.Options
		late     int
		buckets  int
		bucketMs int64
	}{
		{"threshold 0, limit 3", report.Options{LateThreshold: time.Millisecond, Limit: 3}, 3, 16, 10_000},
		{"minute buckets", report.Options{Bucket: time.Minute}, 2, 6, 60_000},
		{"empty window", report.Options{From: t0.Add(-time.Hour), To: t0}, 0, 0, 60_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := build(t, s, tt.o)
			if len(r.Late) != tt.late || len(r.Timeline) != tt.buckets || r.BucketMs != tt.bucketMs {
				t.Errorf("%d late, %d buckets of %dms; want %d, %d of %dms", len(r.Late), len(r.Timeline), r.BucketMs, tt.late, tt.buckets, tt.bucketMs)
			}
		})
	}
	if _, err := report.Build(context.Background(), s, report.Options{From: t0, To: t0}); err == nil {
		t.Error("empty window: no error")
	}
}

func TestAutoBucket(t *testing.T) {
	tests := []struct {
		window, want time.Duration
	}{
		{time.Second, time.Second},
		{time.Minute, time.Second},
		{10 * time.Minute, 10 * time.Second},
		{time.Hour, time.Minute},
		{61 * time.Minute, 2 * time.Minute},
		{24 * time.Hour, 30 * time.Minute},
		{7 * 24 * time.Hour, 3 * time.Hour},
		{90 * 24 * time.Hour, 48 * time.Hour},
	}
	for _, tt := range tests {
		if got := report.AutoBucket(tt.window); got != tt.want {
			t.Errorf("AutoBucket(%v) = %v, want %v", tt.window, got, tt.want)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := build(t, seeded(t), report.Options{})
	var buf bytes.Buffer
	if err := r.Render(&buf, report.FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, r) {
		t.Errorf("round trip changed the report\n got %+v\nwant %+v", back, *r)
	}
	// Stable names that tools depend on.
	for _, key := range []string{`"summary"`, `"attempts"`, `"p99_ms"`, `"late_threshold_ms"`, `"timeline"`, `"task_id"`, `"lateness_ms"`, `"duplicate_rows"`} {
		if !bytes.Contains(buf.Bytes(), []byte(key)) {
			t.Errorf("JSON has no %s", key)
		}
	}
}

func TestText(t *testing.T) {
	r := build(t, seeded(t), report.Options{})
	var buf bytes.Buffer
	if err := r.Render(&buf, report.FormatText); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Attempts 16 (tasks 15): final 14, retried 1, failed 1; late (over 1s) 1; duplicate rows ignored 2",
		"Lateness of final attempts: p50 8ms, p90 40ms, p99 2.5s, p99.9 2.5s, max 2.5s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text has no line %q:\n%s", want, out)
		}
	}
	// Columns are aligned: the header's columns start where the rows' do.
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "  TIER") {
			h := strings.Index(l, "KIND")
			if r := lines[i+1]; len(r) <= h || r[h-1] != ' ' || r[h] == ' ' {
				t.Errorf("row %q is not aligned under header %q", r, l)
			}
		}
	}
	if err := r.Render(&buf, "yaml"); err == nil {
		t.Error("unknown format: no error")
	}
}

func TestHTML(t *testing.T) {
	s := seeded(t)
	for _, o := range []report.Options{{}, {From: t0.Add(-time.Hour), To: t0}} {
		r := build(t, s, o)
		var buf bytes.Buffer
		if err := r.Render(&buf, report.FormatHTML); err != nil {
			t.Fatal(err)
		}
		page := buf.String()
		if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.HasSuffix(strings.TrimSpace(page), "</html>") {
			t.Errorf("not one HTML document:\n%.200s", page)
		}
		// Self-contained: nothing fetched from elsewhere.
		for _, bad := range []string{"http://", "https://", "<script", "<link", "src=", "url(", "@import"} {
			if strings.Contains(page, bad) {
				t.Errorf("page contains %q", bad)
			}
		}
		if len(r.Timeline) > 0 {
			for _, want := range []string{`<svg class="chart" id="outcome-chart"`, `<svg class="chart" id="lateness-chart"`, `<polyline class="series-p99"`, "<rect", "<style>"} {
				if !strings.Contains(page, want) {
					t.Errorf("page has no %s", want)
				}
			}
			if n := strings.Count(page, "<rect x=\"120\""); n != len(r.Outcomes) {
				t.Errorf("%d outcome bars, want %d", n, len(r.Outcomes))
			}
		} else if !strings.Contains(page, "No attempts in this window.") {
			t.Error("empty window: page does not say so")
		}
	}
}

// TestHTMLEscapes: text from events cannot inject markup.
func TestHTMLEscapes(t *testing.T) {
	s := chtest.Open(t)
	e := ev("<script>alert(1)</script>", "k<b>", "failed", "1m", time.Minute, 5000, 1)
	e.Error = `"><img src=x onerror=alert(1)>`
	if err := s.Insert(context.Background(), []outcome.Event{e}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := build(t, s, report.Options{}).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`<script|<img|<b>`).MatchString(buf.String()) {
		t.Errorf("event text was not escaped:\n%s", buf.String())
	}
}

// hostile is text a producer can put in an event: a screen clear, a carriage
// return and a newline that would fake a row, a bidi override and a C1
// control sequence introducer.
const hostile = "k\x1b[2J\rFAKE\n\u202eevil\u009b1m"

// rawControls returns the runes of s that a terminal may act on: anything
// not graphic but the newlines that end lines.
func rawControls(s string) []rune {
	var bad []rune
	for _, r := range s {
		if r != '\n' && !unicode.IsGraphic(r) {
			bad = append(bad, r)
		}
	}
	return bad
}

// TestTerminalEscapes: text from events reaches no output as raw control
// characters; the text and HTML reports show it as a Go literal, the JSON
// report as escapes that decode to the original.
func TestTerminalEscapes(t *testing.T) {
	s := chtest.Open(t)
	e := ev(hostile, hostile, "failed", hostile, time.Minute, 5000, 1)
	e.Error = hostile
	if err := s.Insert(context.Background(), []outcome.Event{e}); err != nil {
		t.Fatal(err)
	}
	r := build(t, s, report.Options{})
	if len(r.Late) != 1 || r.Late[0].TaskID != hostile {
		t.Fatalf("late attempts %+v, want the hostile one", r.Late)
	}
	for _, format := range report.Formats {
		var buf bytes.Buffer
		if err := r.Render(&buf, format); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if bad := rawControls(out); len(bad) > 0 {
			t.Errorf("%s: raw control characters %q in:\n%s", format, bad, out)
		}
		switch format {
		case report.FormatText:
			if n := strings.Count(out, term.Quote(hostile)); n < 4 { // task, kind, path, error; and in the tables by kind
				t.Errorf("text: %d quoted hostile strings, want at least 4:\n%s", n, out)
			}
		case report.FormatHTML:
			if !strings.Contains(out, html.EscapeString(term.Quote(hostile))) {
				t.Errorf("html: no quoted hostile task id:\n%s", out)
			}
		case report.FormatJSON:
			var back report.Report
			if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back.Late) != 1 || back.Late[0].TaskID != hostile {
				t.Errorf("json: does not decode to the hostile task id (%v):\n%s", err, out)
			}
		}
	}
}

// TestOutOfRangeTimes: an attempt whose due time is beyond what JSON's
// RFC 3339 can write (a hostile event on the outcomes topic; the recorder
// stores it as it is) does not make the JSON report fail, and the good
// attempts around it are reported.
func TestOutOfRangeTimes(t *testing.T) {
	s := chtest.Open(t)
	good := ev("good", "order-timeout", "failed", "1m", time.Minute, 5, 1)
	for i, due := range []int64{math.MaxInt64, math.MinInt64, 253402300800000 /* year 10000 */, -62167219200001 /* year -1 */} {
		bad := ev("bad", "order-timeout", "failed", "1m", 2*time.Minute, 5, int64(10+i))
		bad.DueMs = due
		if err := s.Insert(context.Background(), []outcome.Event{good, bad}); err != nil {
			t.Fatal(err)
		}
	}
	r := build(t, s, report.Options{})
	var buf bytes.Buffer
	if err := r.Render(&buf, report.FormatJSON); err != nil {
		t.Fatalf("json: %v", err)
	}
	var back report.Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Summary.Failed != 5 || len(back.Late) != 5 {
		t.Errorf("%d failed, %d listed; want 5 and 5", back.Summary.Failed, len(back.Late))
	}
}

// TestHugeLateness: a lateness beyond time.Duration's 292 years (a
// hostile event) is written as a duration of that size, not wrapped
// around to a negative or small one.
func TestHugeLateness(t *testing.T) {
	s := chtest.Open(t)
	huge := ev("huge", "order-timeout", "closed", "1m", time.Minute, math.MaxInt64/2, 1)
	if err := s.Insert(context.Background(), []outcome.Event{huge}); err != nil {
		t.Fatal(err)
	}
	r := build(t, s, report.Options{})
	for _, format := range []string{report.FormatText, report.FormatHTML} {
		var buf bytes.Buffer
		if err := r.Render(&buf, format); err != nil {
			t.Fatal(err)
		}
		want := "1281023894007h36m27.903s" // 2^62-1 ms
		if out := buf.String(); !strings.Contains(out, want) || strings.Contains(out, "-1ms") {
			t.Errorf("%s report of a lateness of %d ms has no %s, or has -1ms:\n%s", format, int64(math.MaxInt64/2), want, out)
		}
	}
}
