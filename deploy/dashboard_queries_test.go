package deploy

// Tests that every query of the Prometheus dashboard is scoped to one
// release (cluster, namespace, job variables), and that both dashboards
// declare what they need (__requires).

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const clickhouseDashboardFile = "grafana/hourglass-clickhouse.json"

// scopeMatchers are the matchers every Hourglass selector of the Prometheus
// dashboard carries: the variables that keep releases apart.
var scopeMatchers = []string{`cluster=~"$cluster"`, `namespace=~"$namespace"`, `job=~"$job"`}

// selector matches an Hourglass series name and its matchers, if any.
var selector = regexp.MustCompile(`\b(hourglass_[a-z0-9_]+)(\{[^}]*\})?`)

// TestDashboardScope checks that the Prometheus dashboard has the cluster,
// namespace and job variables, that namespace takes one value (staging
// and production are never added together), and that every series
// selector of every query carries all three.
func TestDashboardScope(t *testing.T) {
	d := readDashboard(t)
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, name := range []string{"cluster", "namespace", "job"} {
		if !vars[name] {
			t.Errorf("%s: no variable %s", dashboardFile, name)
		}
	}
	if v := dashboardVar(t, dashboardFile, "namespace"); v.Multi || v.IncludeAll {
		t.Errorf("%s: variable namespace takes several values (multi %v, includeAll %v): releases would be added together", dashboardFile, v.Multi, v.IncludeAll)
	}
	selectors := 0
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			for _, m := range selector.FindAllStringSubmatch(tg.Expr, -1) {
				selectors++
				for _, want := range scopeMatchers {
					if !strings.Contains(m[2], want) {
						t.Errorf("%s: panel %q: %s%s has no %s", dashboardFile, p.Title, m[1], m[2], want)
					}
				}
			}
		}
	}
	if selectors < 20 {
		t.Errorf("%s: found only %d series selectors", dashboardFile, selectors)
	}
}

// templateVar is a dashboard variable, as far as the tests read it.
type templateVar struct {
	Name       string `json:"name"`
	Multi      bool   `json:"multi"`
	IncludeAll bool   `json:"includeAll"`
	AllValue   string `json:"allValue"`
}

// dashboardVar returns the variable name of a dashboard file.
func dashboardVar(t *testing.T, file, name string) templateVar {
	t.Helper()
	var d struct {
		Templating struct {
			List []templateVar `json:"list"`
		} `json:"templating"`
	}
	readJSON(t, file, &d)
	i := slices.IndexFunc(d.Templating.List, func(v templateVar) bool { return v.Name == name })
	if i < 0 {
		t.Fatalf("%s: no variable %s", file, name)
	}
	return d.Templating.List[i]
}

// TestDashboardRequires checks that both dashboards list Grafana, their
// data source plugin and every panel type they use in __requires, which
// Grafana's import checks before it creates the dashboard.
func TestDashboardRequires(t *testing.T) {
	for file, ds := range map[string]string{
		dashboardFile:           "prometheus",
		clickhouseDashboardFile: "grafana-clickhouse-datasource",
	} {
		var d struct {
			Requires []struct{ Type, ID string } `json:"__requires"`
			Panels   []struct {
				Type   string `json:"type"`
				Panels []struct {
					Type string `json:"type"`
				} `json:"panels"`
			} `json:"panels"`
		}
		readJSON(t, file, &d)
		has := map[string]bool{}
		for _, r := range d.Requires {
			has[r.Type+"/"+r.ID] = true
		}
		want := []string{"grafana/grafana", "datasource/" + ds}
		for _, p := range d.Panels {
			if p.Type != "row" {
				want = append(want, "panel/"+p.Type)
			}
			for _, q := range p.Panels {
				want = append(want, "panel/"+q.Type)
			}
		}
		for _, w := range want {
			if !has[w] {
				t.Errorf("%s: __requires has no %s", file, w)
			}
		}
	}
}

// readJSON decodes a JSON file into v.
func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
