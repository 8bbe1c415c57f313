package deploy

// Tests that the ClickHouse dashboard groups the attempts once per refresh
// (one panel runs the query, the others show sections of its result), and
// that it shows every outcome.

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hourglass/hourglass/internal/outcome"
)

// dedupGrouping is how every query that takes each close attempt once
// groups the rows.
const dedupGrouping = "GROUP BY topic, `partition`, `offset`"

// chPanel is a panel of the ClickHouse dashboard, as far as the test reads
// it.
type chPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Datasource struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		RawSQL         string `json:"rawSql"`
		PanelID        int    `json:"panelId"`
		WithTransforms bool   `json:"withTransforms"`
	} `json:"targets"`
	Transformations []struct {
		ID      string          `json:"id"`
		Options json.RawMessage `json:"options"`
	} `json:"transformations"`
	TimeFrom    string `json:"timeFrom"`
	FieldConfig struct {
		Defaults struct {
			Thresholds struct {
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

// TestClickHouseDashboardOneScan checks that one query of the ClickHouse
// dashboard groups the attempts (the deduplication), and that every other
// panel but the recording delay (raw rows, no grouping) takes a section of
// its result through the Dashboard data source: filtered by a section the
// query makes, keeping only columns the query names. The due load panels
// read the deadline index, not the attempts (TestClickHouseDashboardForecast).
func TestClickHouseDashboardOneScan(t *testing.T) {
	var d struct {
		Panels []chPanel `json:"panels"`
	}
	readJSON(t, clickhouseDashboardFile, &d)
	var source *chPanel
	scans := 0
	for i, p := range d.Panels {
		for _, tg := range p.Targets {
			if n := strings.Count(tg.RawSQL, dedupGrouping); n > 0 {
				scans += n
				source = &d.Panels[i]
			}
		}
	}
	if scans != 1 || source == nil {
		t.Fatalf("%s: %d queries group the attempts (%s), want 1", clickhouseDashboardFile, scans, dedupGrouping)
	}
	sql := source.Targets[0].RawSQL
	sections := regexp.MustCompile(`ARRAY JOIN \[([^\]]*)\] AS section`).FindStringSubmatch(sql)
	if sections == nil {
		t.Fatalf("panel %q: the query has no ARRAY JOIN [...] AS section", source.Title)
	}
	columns := map[string]bool{"section": true}
	for _, m := range regexp.MustCompile(`\bAS (\w+)`).FindAllStringSubmatch(sql, -1) {
		columns[m[1]] = true
	}

	shown := 0
	for _, p := range d.Panels {
		if p.Type == "row" || p.ID == source.ID || isForecastPanel(p) {
			continue
		}
		if p.Title == "Recording delay (inserted minus closed)" {
			if p.Datasource.Type != "grafana-clickhouse-datasource" || strings.Contains(p.Targets[0].RawSQL, "argMin") {
				t.Errorf("panel %q: want its own query of the raw rows", p.Title)
			}
			continue
		}
		shown++
		if p.Datasource.UID != "-- Dashboard --" || len(p.Targets) != 1 || p.Targets[0].PanelID != source.ID ||
			p.Targets[0].Datasource.UID != "-- Dashboard --" || p.Targets[0].WithTransforms {
			t.Errorf("panel %q: want one target on the -- Dashboard -- data source, panelId %d, without its transformations", p.Title, source.ID)
		}
		checkSection(t, p, sections[1], columns)
	}
	checkSection(t, *source, sections[1], columns)
	if shown < 9 {
		t.Errorf("only %d panels show the source query's result, want the stats, series and tables (9 or more)", shown)
	}
}

// checkSection checks that p filters the source result by one of sections
// (the ARRAY JOIN list) and keeps only columns the source query names.
func checkSection(t *testing.T, p chPanel, sections string, columns map[string]bool) {
	t.Helper()
	var section string
	var fields []string
	for _, tr := range p.Transformations {
		switch tr.ID {
		case "filterByValue":
			var o struct {
				Filters []struct {
					FieldName string `json:"fieldName"`
					Config    struct {
						ID      string `json:"id"`
						Options struct {
							Value string `json:"value"`
						} `json:"options"`
					} `json:"config"`
				} `json:"filters"`
				Type string `json:"type"`
			}
			if err := json.Unmarshal(tr.Options, &o); err != nil || len(o.Filters) != 1 || o.Type != "include" ||
				o.Filters[0].FieldName != "section" || o.Filters[0].Config.ID != "equal" {
				t.Errorf("panel %q: filterByValue %s, want include section equal to one value", p.Title, tr.Options)
				continue
			}
			section = o.Filters[0].Config.Options.Value
		case "filterFieldsByName":
			var o struct {
				Include struct {
					Names []string `json:"names"`
				} `json:"include"`
			}
			if err := json.Unmarshal(tr.Options, &o); err != nil {
				t.Errorf("panel %q: %v", p.Title, err)
			}
			fields = o.Include.Names
		}
	}
	if section == "" || !strings.Contains(sections, "'"+section+"'") {
		t.Errorf("panel %q: filters on section %q, want one of %s", p.Title, section, sections)
	}
	if len(fields) == 0 {
		t.Errorf("panel %q: no filterFieldsByName: it would show every column of the result", p.Title)
	}
	for _, f := range fields {
		if !columns[f] {
			t.Errorf("panel %q: shows %s, which the source query does not name", p.Title, f)
		}
	}
	if slices.Contains(fields, "section") {
		t.Errorf("panel %q: shows the section column", p.Title)
	}
}

// TestClickHouseDashboardOutcomes checks that "Attempts by outcome" shows
// every outcome an event may carry (outcome.All): the source query counts
// each one in a column of its own, and the panel keeps that column. Its
// lateness figures cover the final outcomes (outcome.Final).
func TestClickHouseDashboardOutcomes(t *testing.T) {
	var d struct {
		Panels []chPanel `json:"panels"`
	}
	readJSON(t, clickhouseDashboardFile, &d)
	columns := map[string]string{} // outcome -> column of the source query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if !strings.Contains(tg.RawSQL, dedupGrouping) {
				continue
			}
			for _, m := range regexp.MustCompile(`countIf\(first_outcome = '([a-z_]+)'\) AS (\w+)`).FindAllStringSubmatch(tg.RawSQL, -1) {
				columns[m[1]] = m[2]
			}
		}
	}
	i := slices.IndexFunc(d.Panels, func(p chPanel) bool { return p.Title == "Attempts by outcome" })
	if i < 0 {
		t.Fatalf("%s: no panel \"Attempts by outcome\"", clickhouseDashboardFile)
	}
	var shown []string
	for _, tr := range d.Panels[i].Transformations {
		if tr.ID != "filterFieldsByName" {
			continue
		}
		var o struct {
			Include struct {
				Names []string `json:"names"`
			} `json:"include"`
		}
		if err := json.Unmarshal(tr.Options, &o); err != nil {
			t.Fatal(err)
		}
		shown = o.Include.Names
	}
	// The lateness figures cover the final outcomes, as the report's do.
	var final []string
	for _, o := range outcome.All {
		if o.Final() {
			final = append(final, "'"+string(o)+"'")
		}
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, m := range regexp.MustCompile(`first_outcome IN \(([^)]*)\)`).FindAllStringSubmatch(tg.RawSQL, -1) {
				if got := strings.Split(m[1], ", "); !slices.Equal(got, final) {
					t.Errorf("panel %q: final outcomes %v, want %v (outcome.Final)", p.Title, got, final)
				}
			}
		}
	}
	for _, o := range outcome.All {
		col, ok := columns[string(o)]
		switch {
		case !ok:
			t.Errorf("%s: the source query counts no attempts of outcome %s (countIf(first_outcome = '%s') AS ...)", clickhouseDashboardFile, o, o)
		case !slices.Contains(shown, col):
			t.Errorf("%s: \"Attempts by outcome\" does not show %s (outcome %s); it shows %v", clickhouseDashboardFile, col, o, shown)
		}
	}
}
