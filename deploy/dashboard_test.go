package deploy

// Tests of the Grafana dashboard in grafana/: its shape.

import (
	"encoding/json"
	"testing"
)

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
