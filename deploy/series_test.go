package deploy

// Tests that the series the rules and the dashboard use are the ones
// docs/metrics.md documents.

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// series is what docs/metrics.md documents: name -> type
// (counter, gauge, histogram; empty for the franz-go client series).
type series map[string]string

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	tableRow   = regexp.MustCompile("^\\|\\s*`(hourglass_[a-z0-9_]+)`\\s*\\|\\s*([a-z]*)\\s*\\|")
)

// documentedSeries reads the series listed in docs/metrics.md: table rows
// "| `name` | type | ... |", and the franz-go row "`hourglass_kafka_*`"
// whose suffixes are backticked on the same line.
func documentedSeries(t *testing.T) series {
	t.Helper()
	b, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	docs := series{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if m := tableRow.FindStringSubmatch(line); m != nil {
			docs[m[1]] = m[2]
			continue
		}
		if !strings.Contains(line, "`hourglass_kafka_*`") {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(line, -1) {
			if s := m[1]; s != "hourglass_kafka_*" && s != "node_id" {
				docs["hourglass_kafka_"+s] = ""
			}
		}
	}
	if len(docs) < 10 {
		t.Fatalf("%s: found only %d series (%v); has its layout changed?", metricsDoc, len(docs), docs)
	}
	return docs
}

// check reports whether name is documented: as it is, or as the _bucket,
// _count or _sum series of a documented histogram.
func (s series) check(name string) bool {
	if _, ok := s[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && s[base] == "histogram" {
			return true
		}
	}
	return false
}

// promUp is the series Prometheus writes for every target it scrapes: 1
// when the scrape worked, 0 when it did not.
const promUp = "up"

var (
	// promQLString matches PromQL string literals, whose contents are not
	// metric names (label values, label_replace arguments).
	promQLString = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	// word matches a run of identifier characters; runs that start with a
	// digit (durations such as 5m, subquery steps 15m:1m) are skipped.
	word = regexp.MustCompile(`[a-zA-Z0-9_:]+`)
)

// metricNames returns the Hourglass metric names, recording-rule names
// (those holding a ':') and Prometheus' own up that a PromQL expression
// uses.
func metricNames(expr string) []string {
	expr = promQLString.ReplaceAllString(expr, `""`)
	var names []string
	for line := range strings.SplitSeq(expr, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i] // a comment; strings are gone, so no '#' is in one
		}
		for _, w := range word.FindAllString(line, -1) {
			if w[0] >= '0' && w[0] <= '9' {
				continue
			}
			if strings.HasPrefix(w, "hourglass_") || strings.Contains(w, ":") || w == promUp {
				names = append(names, w)
			}
		}
	}
	return names
}

// proseNames returns the Hourglass series names an annotation mentions.
func proseNames(text string) []string {
	var names []string
	for _, w := range word.FindAllString(text, -1) {
		if strings.Contains(w, "hourglass_") {
			names = append(names, w)
		}
	}
	return names
}

// TestSeriesExist checks that every series the rules and the dashboard
// query, or the alerts' annotations name, is one docs/metrics.md documents, and
// that every recording rule used is defined in the rules file.
func TestSeriesExist(t *testing.T) {
	docs := documentedSeries(t)
	rf := readRules(t)
	c := seriesCheck{t: t, docs: docs, recorded: map[string]bool{}, used: map[string]bool{}}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				c.recorded[r.Record] = true
			}
		}
	}

	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			where := rulesFile + ": " + r.Record + r.Alert
			c.expr(where, r.Expr)
			for k, v := range r.Annotations {
				for _, n := range proseNames(v) {
					c.name(where+" annotation "+k, n)
				}
			}
		}
	}

	d := readDashboard(t)
	targets := 0
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			targets++
			c.expr(dashboardFile+": panel "+p.Title, tg.Expr)
		}
	}
	if targets == 0 {
		t.Errorf("%s: no queries found", dashboardFile)
	}
	if len(c.used) < 10 {
		t.Errorf("found only %d distinct names in the rules and the dashboard: %v", len(c.used), c.used)
	}
}

// seriesCheck checks the names that rules and panels use.
type seriesCheck struct {
	t        *testing.T
	docs     series
	recorded map[string]bool // recording rules defined in rulesFile
	used     map[string]bool // names expressions use
}

// expr checks the names a PromQL expression uses, and that it uses one.
func (c seriesCheck) expr(where, expr string) {
	c.t.Helper()
	names := metricNames(expr)
	if len(names) == 0 {
		c.t.Errorf("%s: expression uses no Hourglass series: %q", where, expr)
	}
	for _, n := range names {
		c.name(where, n)
		c.used[n] = true
	}
}

// name checks that a recording rule is defined, and a series documented.
func (c seriesCheck) name(where, name string) {
	c.t.Helper()
	if name == promUp {
		return // Prometheus' own, for every target
	}
	if strings.Contains(name, ":") {
		if !c.recorded[name] {
			c.t.Errorf("%s: recording rule %s is not defined in %s", where, name, rulesFile)
		}
		return
	}
	if !c.docs.check(name) {
		c.t.Errorf("%s: series %s is not documented in %s", where, name, metricsDoc)
	}
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{
			expr: `sum by (kind) (rate(hourglass_canceller_closes_total{outcome="failed"}[5m]))`,
			want: []string{"hourglass_canceller_closes_total"},
		},
		{
			expr: `deriv(group:hourglass_consumer_lag_records:sum{group=~".*canceller.*"}[15m:1m]) > 0`,
			want: []string{"group:hourglass_consumer_lag_records:sum"},
		},
		{
			expr: `label_replace(increase(hourglass_router_early_forwards_total[$__rate_interval]), "s", "hourglass_x", "", "") # hourglass_y`,
			want: []string{"hourglass_router_early_forwards_total"},
		},
		{
			expr: `up{job=~".*router.*"} == 0 unless on (job) group by (job) (hourglass_consumer_lag_records)`,
			want: []string{"up", "hourglass_consumer_lag_records"},
		},
		{
			expr: "histogram_quantile(0.99, sum by (le) (rate(hourglass_router_forward_lateness_seconds_bucket[5m])))",
			want: []string{"hourglass_router_forward_lateness_seconds_bucket"},
		},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}
