package deploy

// Tests of the due load panels of the ClickHouse dashboard: their queries
// are chstore.Store.Forecast's, run on a real ClickHouse against a known
// schedule of deadlines, cancellations and outcomes.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

// Titles of the due load panels.
const (
	forecastPanel = "Due load forecast"
	mostDuePanel  = "Most due in one minute (next hours)"
)

var updateDashboard = flag.Bool("update-dashboard", false, "rewrite the due load panels' queries in the ClickHouse dashboard, and the alert's in docs/operations.md, from chstore.OpenDeadlinesQuery")

// isForecastPanel reports whether p is a due load panel, which reads the
// deadline index rather than the attempts.
func isForecastPanel(p chPanel) bool {
	_, ok := forecastHeaders[p.Title]
	return ok && len(p.Targets) == 1
}

// forecastPanels returns the due load panels of the ClickHouse dashboard.
func forecastPanels(t *testing.T) (series, most chPanel) {
	t.Helper()
	var d struct {
		Panels []chPanel `json:"panels"`
	}
	readJSON(t, clickhouseDashboardFile, &d)
	found := map[string]chPanel{}
	for _, p := range d.Panels {
		if isForecastPanel(p) {
			found[p.Title] = p
		}
	}
	series, ok1 := found[forecastPanel]
	most, ok2 := found[mostDuePanel]
	if !ok1 || !ok2 || len(found) != 2 {
		t.Fatalf("%s: due load panels %v, want %q and %q", clickhouseDashboardFile, found, forecastPanel, mostDuePanel)
	}
	return series, most
}

// forecastWindows are the bounds of the window of each due load panel,
// in unix milliseconds: the panel's time range for the series, and 10
// minutes ago to 6 hours ahead, whatever the range, for the stat an alert
// runs.
var forecastWindows = map[string][2]string{
	forecastPanel: {"toUnixTimestamp($__fromTime) * 1000", "toUnixTimestamp($__toTime) * 1000"},
	mostDuePanel:  {"(toUnixTimestamp(now()) - 600) * 1000", "(toUnixTimestamp(now()) + 21600) * 1000"},
}

// forecastHeaders are the comments that start each due load panel's query.
var forecastHeaders = map[string]string{
	forecastPanel: `-- The open deadlines of the deadline index due in the window, per minute
-- and kind: chstore.OpenDeadlinesQuery (internal/chstore/index.go), which
-- chstore.Store.Forecast and hourglass report count too. A deadline is open
-- until an outcome ends it (closed, failed, cancelled, ...), its
-- cancellation covers it or it is dead-lettered, and counts once however
-- often it was recorded.
-- Window: the panel's time range (now to 6 hours ahead).
`,
	mostDuePanel: `-- The most open deadlines of the deadline index due in one minute:
-- chstore.OpenDeadlinesQuery (internal/chstore/index.go), which
-- chstore.Store.Forecast and hourglass report count too.
-- Window: 10 minutes ago (the overdue) to 6 hours ahead, whatever the
-- dashboard's range, so that an alert rule can run this query as it is.
`,
}

// forecastSQL is the query the due load panel title runs: its header, and
// chstore.OpenDeadlinesQuery over its window, counted per minute (and kind,
// for the series; the busiest minute, for the stat).
func forecastSQL(title string) string {
	w := forecastWindows[title]
	open := chstore.OpenDeadlinesQuery("${database}", w[0], w[1])
	if title == mostDuePanel {
		return forecastHeaders[title] + "SELECT toInt64(max(deadlines)) AS most_due FROM (\nSELECT intDiv(due, 60000) AS minute, count() AS deadlines\nFROM (\n" +
			open + "\n)\nGROUP BY minute\n)"
	}
	return forecastHeaders[title] + "SELECT toDateTime(intDiv(due, 60000) * 60) AS time, if(kind = '', '(default)', kind) AS kind_name, toInt64(count()) AS deadlines\nFROM (\n" +
		open + "\n)\nGROUP BY time, kind ORDER BY time, kind_name"
}

// alertSQL is the query docs/operations.md gives for the due load alert:
// the stat panel's, without its comments, for the database hourglass.
func alertSQL() string {
	var lines []string
	for _, l := range strings.Split(forecastSQL(mostDuePanel), "\n") {
		if !strings.HasPrefix(l, "--") {
			lines = append(lines, l)
		}
	}
	return strings.ReplaceAll(strings.Join(lines, "\n"), "${database}", "hourglass")
}

// replaceJSONString replaces the JSON string from by to in b, once.
func replaceJSONString(t *testing.T, b []byte, from, to string) []byte {
	t.Helper()
	enc := func(v string) []byte {
		var buf bytes.Buffer
		e := json.NewEncoder(&buf)
		e.SetEscapeHTML(false)
		if err := e.Encode(v); err != nil {
			t.Fatal(err)
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	o := enc(from)
	if bytes.Count(b, o) != 1 {
		t.Fatalf("the query to replace is in %s %d times, want once", clickhouseDashboardFile, bytes.Count(b, o))
	}
	return bytes.Replace(b, o, enc(to), 1)
}

// TestClickHouseDashboardForecastShape checks the due load panels: both
// run the same forecast query, the outcomes that end a deadline are those
// of outcome.Ends, the forecast covers the next hours in its own time
// range, and the stat has thresholds an alert can follow.
func TestClickHouseDashboardForecastShape(t *testing.T) {
	series, most := forecastPanels(t)
	if *updateDashboard {
		b, err := os.ReadFile(clickhouseDashboardFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []chPanel{series, most} {
			b = replaceJSONString(t, b, p.Targets[0].RawSQL, forecastSQL(p.Title))
		}
		if err := os.WriteFile(clickhouseDashboardFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
		series, most = forecastPanels(t)
	}
	for _, p := range []chPanel{series, most} {
		if got, want := p.Targets[0].RawSQL, forecastSQL(p.Title); got != want {
			t.Errorf("panel %q does not run chstore.OpenDeadlinesQuery over its window (go test ./deploy -run TestClickHouseDashboardForecastShape -update-dashboard rewrites it):\n%s\nwant:\n%s", p.Title, got, want)
		}
	}
	var ended []string
	for _, o := range outcome.All {
		if o.Ends() {
			ended = append(ended, "'"+string(o)+"'")
		}
	}
	for _, p := range []chPanel{series, most} {
		m := regexp.MustCompile(`outcome IN \(([^)]*)\)`).FindStringSubmatch(p.Targets[0].RawSQL)
		if len(m) != 2 || !slices.Equal(strings.Split(m[1], ", "), ended) {
			t.Errorf("panel %q: outcomes that end a deadline %v, want %v (outcome.Ends)", p.Title, m, ended)
		}
	}
	if series.Type != "timeseries" || series.TimeFrom != "+6h" {
		t.Errorf("panel %q: type %s, time range %q; want a timeseries of now to now+6h (timeFrom +6h)", series.Title, series.Type, series.TimeFrom)
	}
	steps := most.FieldConfig.Defaults.Thresholds.Steps
	if most.Type != "stat" || len(steps) < 2 || steps[len(steps)-1].Color != "red" || steps[len(steps)-1].Value == nil {
		t.Errorf("panel %q: type %s, thresholds %+v; want a stat with a red threshold", most.Title, most.Type, steps)
	}
}

// TestClickHouseDashboardForecast runs the due load panels' queries, with
// Grafana's macros expanded as the plugin expands them, against a known
// schedule: the series per minute and kind are chstore.Store.Forecast's
// rows summed over targets, and the stat is the busiest minute of the
// forecast from 10 minutes before now to 6 hours after it.
func TestClickHouseDashboardForecast(t *testing.T) {
	series, most := forecastPanels(t)
	s := chtest.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Date(2024, 5, 14, 12, 0, 30, 0, time.UTC)
	at := now.Add(2*time.Hour + 29*time.Second) // the burst
	deadline := func(id, kind, target string, due time.Time, off int64) chstore.Deadline {
		sched := now.Add(-time.Hour).UnixMilli()
		return chstore.Deadline{TaskID: id, Kind: kind, Target: target, DueMs: due.UnixMilli(), ScheduledMs: sched, RecordMs: sched,
			Topic: "hourglass.delay.30m", Partition: int32(off % 3), Offset: off}
	}
	var rows chstore.IndexRows
	const burst = 400
	for i := range burst {
		rows.Deadlines = append(rows.Deadlines, deadline(fmt.Sprint("b", i), "order-timeout", "", at, int64(i)))
	}
	for i := range 30 { // reminders to another target, one a minute; then overdue ones
		rows.Deadlines = append(rows.Deadlines, deadline(fmt.Sprint("r", i), "reminder", "hourglass.sms", now.Add(time.Duration(i)*time.Minute), int64(1000+i)))
	}
	for i := range 5 {
		rows.Deadlines = append(rows.Deadlines, deadline(fmt.Sprint("o", i), "", "", now.Add(-4*time.Minute), int64(2000+i)))
	}
	// Cancellations: c0 covers its deadline, c1 is withdrawn.
	for i := range 2 {
		id := fmt.Sprint("c", i)
		rows.Deadlines = append(rows.Deadlines, deadline(id, "order-timeout", "", at, int64(3000+i)))
		rows.Cancels = append(rows.Cancels, chstore.Cancel{TaskID: id, AtMs: now.Add(-time.Minute).UnixMilli(), Withdrawn: i == 1,
			Topic: "hourglass.cancellations", Offset: int64(i)})
	}
	for range 2 { // a replayed batch
		if err := s.InsertIndex(ctx, &rows); err != nil {
			t.Fatal(err)
		}
	}
	// Outcomes end 150 of the burst; a retry ends nothing.
	var evs []outcome.Event
	for i := range 151 {
		o := outcome.Closed
		if i == 150 {
			o = outcome.Retry
		}
		evs = append(evs, outcome.Event{V: outcome.Version, TaskID: fmt.Sprint("b", i), Kind: "order-timeout", Outcome: o, Attempt: 1,
			DueMs: at.UnixMilli(), DeadlineMs: at.UnixMilli(), ClosedMs: at.UnixMilli() + 30, Topic: "hourglass.cancel", Offset: int64(i)})
	}
	if err := s.Insert(ctx, evs); err != nil {
		t.Fatal(err)
	}

	expand := func(sql string, from, to time.Time) string {
		return strings.NewReplacer(
			"${database}", "`"+s.Config().Database+"`",
			"$__fromTime", fmt.Sprintf("toDateTime(%d)", from.Unix()),
			"$__toTime", fmt.Sprintf("toDateTime(%d)", to.Unix()),
			"now()", fmt.Sprintf("toDateTime(%d)", now.Unix()),
		).Replace(sql)
	}
	query := func(p chPanel, from, to time.Time, scan func(func(...any) error) error) {
		t.Helper()
		sql := expand(p.Targets[0].RawSQL, from, to)
		if strings.Contains(sql, "$") {
			t.Fatalf("panel %q: a macro is left after expansion:\n%s", p.Title, sql)
		}
		r, err := s.Conn().Query(ctx, sql)
		if err != nil {
			t.Fatalf("panel %q: %v\n%s", p.Title, err, sql)
		}
		defer r.Close()
		for r.Next() {
			if err := scan(r.Scan); err != nil {
				t.Fatalf("panel %q: %v", p.Title, err)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatalf("panel %q: %v", p.Title, err)
		}
	}

	// The series over the panel's range, now to 6 hours ahead.
	from, to := now, now.Add(6*time.Hour)
	type point struct {
		minute time.Time
		kind   string
		n      int64
	}
	var got []point
	query(series, from, to, func(scan func(...any) error) error {
		var p point
		if err := scan(&p.minute, &p.kind, &p.n); err != nil {
			return err
		}
		p.minute = p.minute.UTC()
		got = append(got, p)
		return nil
	})
	due, err := s.Forecast(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	var want []point
	for _, d := range due {
		kind := d.Kind
		if kind == "" {
			kind = "(default)"
		}
		if n := len(want); n > 0 && want[n-1].minute.Equal(d.Minute) && want[n-1].kind == kind {
			want[n-1].n += d.Count
			continue
		}
		want = append(want, point{d.Minute, kind, d.Count})
	}
	burstPoint := point{at.Truncate(time.Minute), "order-timeout", burst - 150 + 1} // c1's cancellation was withdrawn
	if !slices.Equal(got, want) || !slices.Contains(got, burstPoint) || len(got) != 31 {
		t.Errorf("panel %q:\n got %v\nwant %v (chstore.Forecast), with %v and 31 points", series.Title, got, want, burstPoint)
	}

	// The stat: the busiest minute from 10 minutes ago, overdue ones too.
	var mostDue []int64
	query(most, time.Time{}, time.Time{}, func(scan func(...any) error) error {
		var n int64
		err := scan(&n)
		mostDue = append(mostDue, n)
		return err
	})
	due, err = s.Forecast(ctx, now.Add(-10*time.Minute), now.Add(6*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	perMinute := map[time.Time]int64{}
	var wantMost int64
	for _, d := range due {
		perMinute[d.Minute] += d.Count
		wantMost = max(wantMost, perMinute[d.Minute])
	}
	if !slices.Equal(mostDue, []int64{wantMost}) || wantMost != burstPoint.n {
		t.Errorf("panel %q: %v, want [%d] (chstore.Forecast's busiest minute, the burst's %d)", most.Title, mostDue, wantMost, burstPoint.n)
	}
	if perMinute[now.Add(-4*time.Minute).Truncate(time.Minute)] != 5 {
		t.Errorf("forecast from 10 minutes ago: %v, want the 5 overdue deadlines", perMinute)
	}
}

// TestForecastAlertDocumented checks that the query docs/operations.md
// gives for the due load alert is the stat panel's, without its comments,
// for the database hourglass.
func TestForecastAlertDocumented(t *testing.T) {
	const docs = "../docs/operations.md"
	b, err := os.ReadFile(docs)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "## Due load")
	if i < 0 {
		t.Fatal("docs/operations.md has no section Due load")
	}
	j := strings.Index(doc[i:], "```sql\n")
	if j < 0 {
		t.Fatal("docs/operations.md, Due load: no sql block")
	}
	start := i + j + len("```sql\n")
	block, _, found := strings.Cut(doc[start:], "```")
	if !found {
		t.Fatal("docs/operations.md, Due load: the sql block does not end")
	}
	want := alertSQL()
	if *updateDashboard {
		doc = doc[:start] + want + "\n" + doc[start+len(block):]
		if err := os.WriteFile(docs, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		block = want + "\n"
	}
	if strings.TrimSpace(block) != strings.TrimSpace(want) {
		t.Errorf("docs/operations.md, Due load: the alert's query is not the stat panel's (go test ./deploy -run TestForecastAlertDocumented -update-dashboard rewrites it):\n%s\nwant:\n%s", block, want)
	}
}
