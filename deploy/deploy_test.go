// Package deploy holds no code: its tests check the Prometheus rules in
// prometheus/ and the Grafana dashboard in grafana/ against promtool and
// against the series the README documents.
package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	rulesFile     = "prometheus/hourglass-rules.yaml"
	rulesTestFile = "prometheus/hourglass-rules.test.yaml"
	rulesReadme   = "prometheus/README.md"
	dashboardFile = "grafana/hourglass.json"
	readmeFile    = "../README.md"
)

// TestRulesValid checks the rules file with promtool and runs its unit tests.
// A missing promtool fails the test: scripts/deps.sh installs it.
func TestRulesValid(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		// Where scripts/deps.sh puts it when it is not installed.
		if abs, aerr := filepath.Abs("../.tools/bin/promtool"); aerr == nil {
			promtool, err = exec.LookPath(abs)
		}
	}
	if err != nil {
		t.Fatalf("promtool is not on PATH (%v): run scripts/deps.sh, which takes it out of Debian's prometheus package into .tools/bin", err)
	}
	for _, args := range [][]string{
		{"check", "rules", "hourglass-rules.yaml"},
		{"test", "rules", "hourglass-rules.test.yaml"},
	} {
		t.Run(strings.Join(args[:2], "_"), func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), promtool, args...)
			cmd.Dir = "prometheus"
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}

// ruleFile is the part of a Prometheus rules file the tests read.
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var rf ruleFile
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if len(rf.Groups) == 0 {
		t.Fatalf("%s: no rule groups", rulesFile)
	}
	return rf
}

// dashboard is the part of a Grafana dashboard the tests read. Panels of
// schemaVersion 39 are flat, rows included; a collapsed row holds its
// panels in its own panels field.
type dashboard struct {
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource json.RawMessage          `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("%s: not valid JSON", dashboardFile)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels returns the dashboard's panels, those inside collapsed rows too.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// series is what the README's Metrics section documents: name -> type
// (counter, gauge, histogram; empty for the franz-go client series).
type series map[string]string

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	tableRow   = regexp.MustCompile("^\\|\\s*`(hourglass_[a-z0-9_]+)`\\s*\\|\\s*([a-z]*)\\s*\\|")
)

// documentedSeries reads the series listed in the README's "## Metrics"
// section: table rows "| `name` | type | ... |", and the franz-go row
// "`hourglass_kafka_*`" whose suffixes are backticked on the same line.
func documentedSeries(t *testing.T) series {
	t.Helper()
	b, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n## Metrics\n")
	if start < 0 {
		t.Fatalf("%s: no \"## Metrics\" section", readmeFile)
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	docs := series{}
	for line := range strings.SplitSeq(section, "\n") {
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
		t.Fatalf("%s: found only %d series in the Metrics section (%v); has its layout changed?", readmeFile, len(docs), docs)
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

var (
	// promQLString matches PromQL string literals, whose contents are not
	// metric names (label values, label_replace arguments).
	promQLString = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	// word matches a run of identifier characters; runs that start with a
	// digit (durations such as 5m, subquery steps 15m:1m) are skipped.
	word = regexp.MustCompile(`[a-zA-Z0-9_:]+`)
)

// metricNames returns the Hourglass metric names and recording-rule names
// (those holding a ':') that a PromQL expression uses.
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
			if strings.HasPrefix(w, "hourglass_") || strings.Contains(w, ":") {
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
// query, or the alerts' annotations name, is one the README documents, and
// that every recording rule used is defined in the rules file.
func TestSeriesExist(t *testing.T) {
	docs := documentedSeries(t)
	rf := readRules(t)

	recorded := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	checkName := func(where, name string) {
		t.Helper()
		if strings.Contains(name, ":") {
			if !recorded[name] {
				t.Errorf("%s: recording rule %s is not defined in %s", where, name, rulesFile)
			}
			return
		}
		if !docs.check(name) {
			t.Errorf("%s: series %s is not documented in the Metrics section of %s", where, name, readmeFile)
		}
	}

	used := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			where := rulesFile + ": " + r.Record + r.Alert
			names := metricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s: expression uses no Hourglass series: %q", where, r.Expr)
			}
			for _, n := range names {
				checkName(where, n)
				used[n] = true
			}
			for k, v := range r.Annotations {
				for _, n := range proseNames(v) {
					checkName(where+" annotation "+k, n)
				}
			}
		}
	}

	d := readDashboard(t)
	targets := 0
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			targets++
			where := dashboardFile + ": panel " + p.Title
			names := metricNames(tg.Expr)
			if len(names) == 0 {
				t.Errorf("%s: expression uses no Hourglass series: %q", where, tg.Expr)
			}
			for _, n := range names {
				checkName(where, n)
				used[n] = true
			}
		}
	}
	if targets == 0 {
		t.Errorf("%s: no queries found", dashboardFile)
	}
	if len(used) < 10 {
		t.Errorf("found only %d distinct names in the rules and the dashboard: %v", len(used), used)
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
			expr: "histogram_quantile(0.99, sum by (le) (rate(hourglass_router_forward_lateness_seconds_bucket[5m])))",
			want: []string{"hourglass_router_forward_lateness_seconds_bucket"},
		},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

// TestAlerts checks what an operator needs of every alert: a severity, a
// summary and a description, and an entry in prometheus/README.md.
func TestAlerts(t *testing.T) {
	rf := readRules(t)
	readme, err := os.ReadFile(rulesReadme)
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts = append(alerts, r.Alert)
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
			if !bytes.Contains(readme, []byte(r.Alert)) {
				t.Errorf("%s: not described in %s", r.Alert, rulesReadme)
			}
		}
	}
	for _, want := range []string{
		"HourglassEarlyFire", "HourglassCloseFailureRatio", "HourglassDeadLettersGrowing", "HourglassRouterBehind",
		"HourglassCloseLateness", "HourglassCancellerLag", "HourglassCancellerLagGrowing",
	} {
		if !slices.Contains(alerts, want) {
			t.Errorf("alert %s is missing from %s", want, rulesFile)
		}
	}
}

// TestDashboard checks the dashboard's shape: schemaVersion 39, the
// datasource variable used by every panel, unique panel ids and a grid
// without overlaps.
func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.SchemaVersion != 39 {
		t.Errorf("schemaVersion %d, want 39", d.SchemaVersion)
	}
	hasDS := false
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
			hasDS = true
		}
	}
	if !hasDS {
		t.Errorf("no templating variable datasource of type datasource, query prometheus")
	}

	ids := map[int]string{}
	for _, p := range allPanels(d.Panels) {
		if p.ID <= 0 {
			t.Errorf("panel %q: id %d", p.Title, p.ID)
		}
		if other, ok := ids[p.ID]; ok {
			t.Errorf("panel id %d used by %q and %q", p.ID, other, p.Title)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		var ds struct{ Type, UID string }
		if err := json.Unmarshal(p.Datasource, &ds); err != nil || ds.Type != "prometheus" || ds.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %s, want {type: prometheus, uid: ${datasource}}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no queries", p.Title)
		}
	}

	// Panels on the top level share one grid (those of collapsed rows are
	// laid out when the row opens, so they are left out here).
	taken := map[cell]string{}
	for _, p := range d.Panels {
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
			continue
		}
		if other, x, y, ok := place(taken, p.Title, g.X, g.Y, g.W, g.H); ok {
			t.Errorf("panel %q overlaps %q at x=%d y=%d", p.Title, other, x, y)
		}
	}
}

type cell struct{ x, y int }

// place marks the cells of a panel as taken, and reports the first cell that
// another panel already took.
func place(taken map[cell]string, title string, x0, y0, w, h int) (string, int, int, bool) {
	for x := x0; x < x0+w; x++ {
		for y := y0; y < y0+h; y++ {
			if other, ok := taken[cell{x, y}]; ok {
				return other, x, y, true
			}
			taken[cell{x, y}] = title
		}
	}
	return "", 0, 0, false
}
