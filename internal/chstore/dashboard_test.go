package chstore_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

const dashboardFile = "../../deploy/grafana/hourglass-clickhouse.json"

// dashboardQuery is one SQL query of the dashboard and where it is.
type dashboardQuery struct {
	where, sql string
}

// dashboardQueries reads the dashboard and returns its SQL: every panel
// target's rawSql and every query variable's query.
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		Datasource struct{ Type string } `json:"datasource"`
		RawSQL     string                `json:"rawSql"`
	}
	type panel struct {
		Title      string
		Type       string
		Datasource *struct{ Type string } `json:"datasource"`
		Targets    []target
		Panels     []json.RawMessage
	}
	var d struct {
		UID        string
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
		Panels []panel
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" {
		t.Errorf("%s: no uid", dashboardFile)
	}
	var out []dashboardQuery
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			out = append(out, dashboardQuery{"variable " + v.Name, q})
		}
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "grafana-clickhouse-datasource" {
			t.Errorf("panel %q: data source is not grafana-clickhouse-datasource", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource.Type != "grafana-clickhouse-datasource" || strings.TrimSpace(tg.RawSQL) == "" {
				t.Errorf("panel %q: target without ClickHouse SQL", p.Title)
			}
			out = append(out, dashboardQuery{"panel " + p.Title, tg.RawSQL})
		}
	}
	if len(out) < 10 {
		t.Fatalf("%s: only %d queries", dashboardFile, len(out))
	}
	return out
}

var (
	sqlComment  = regexp.MustCompile(`--[^\n]*`)
	sqlString   = regexp.MustCompile(`'(?:[^'\\]|\\.)*'`)
	grafanaVar  = regexp.MustCompile(`\$\{[^}]*\}|\$__[A-Za-z_]+`)
	sqlQuoted   = regexp.MustCompile("`([^`]*)`")
	sqlWord     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	sqlAlias    = regexp.MustCompile(`(?i)\bAS\s+([A-Za-z_][A-Za-z0-9_]*)`)
	sqlKeywords = map[string]bool{
		"SELECT": true, "FROM": true, "WHERE": true, "AND": true, "OR": true, "NOT": true, "IN": true, "GROUP": true, "BY": true,
		"HAVING": true, "ORDER": true, "ASC": true, "DESC": true, "LIMIT": true, "AS": true, "DISTINCT": true,
	}
)

// TestDashboardColumns checks that the ClickHouse dashboard's queries name
// only columns of the outcomes table (besides SQL keywords, functions, the
// table itself and the aliases the queries define).
func TestDashboardColumns(t *testing.T) {
	allowed := map[string]bool{chstore.OutcomesTable: true}
	for _, c := range chstore.Columns {
		allowed[c] = true
	}
	for _, q := range dashboardQueries(t) {
		sql := sqlComment.ReplaceAllString(q.sql, " ")
		sql = sqlString.ReplaceAllString(sql, " ")
		sql = grafanaVar.ReplaceAllString(sql, " ")
		sql = sqlQuoted.ReplaceAllString(sql, "$1")
		aliases := map[string]bool{}
		for _, m := range sqlAlias.FindAllStringSubmatch(sql, -1) {
			aliases[m[1]] = true
		}
		var unknown []string
		for _, loc := range sqlWord.FindAllStringIndex(sql, -1) {
			w := sql[loc[0]:loc[1]]
			if sqlKeywords[strings.ToUpper(w)] || aliases[w] || allowed[w] {
				continue
			}
			if rest := strings.TrimLeft(sql[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
				continue // a function
			}
			unknown = append(unknown, w)
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			t.Errorf("%s: names %v, which are not columns of %s", q.where, slices.Compact(unknown), chstore.OutcomesTable)
		}
	}
}

// TestDashboardQueries runs every query of the dashboard, with Grafana's
// macros expanded as the plugin expands them, on the seeded attempts: each
// runs on this server, and the summary panels agree with the store's
// queries.
func TestDashboardQueries(t *testing.T) {
	ctx := ctxT(t)
	s := chtest.Open(t)
	if err := s.Insert(ctx, seed()); err != nil {
		t.Fatal(err)
	}
	expand := strings.NewReplacer(
		"${database}", "`"+s.Config().Database+"`",
		"${kind:singlequote}", "'order-timeout', 'reminder'",
		"${late_ms}", "1000",
		"$__fromTime", fmt.Sprintf("toDateTime(%d)", window.From.Unix()),
		"$__toTime", fmt.Sprintf("toDateTime(%d)", window.To.Unix()),
		"$__interval_s", "60",
	)
	results := map[string][]string{}
	for _, q := range dashboardQueries(t) {
		sql := expand.Replace(q.sql)
		if strings.Contains(sql, "$") {
			t.Errorf("%s: a macro is left after expansion: %s", q.where, sql)
			continue
		}
		rows, err := s.Conn().Query(ctx, sql)
		if err != nil {
			t.Errorf("%s: %v\n%s", q.where, err, sql)
			continue
		}
		var out []string
		cols := rows.ColumnTypes()
		for rows.Next() {
			vals := make([]any, len(cols))
			for i, c := range cols {
				vals[i] = newOf(c.ScanType())
			}
			if err := rows.Scan(vals...); err != nil {
				t.Errorf("%s: %v", q.where, err)
				break
			}
			var cells []string
			for _, v := range vals {
				cells = append(cells, fmt.Sprint(deref(v)))
			}
			out = append(out, strings.Join(cells, " "))
		}
		rows.Close()
		results[q.where] = out
	}
	// The seed's window, as chstore counts it: 9 attempts, 1 failed, 2 late,
	// p50 30ms and p99 2s over the final ones, 4 duplicate rows.
	totals, _ := s.Totals(ctx, window, time.Second)
	overall, _ := s.Overall(ctx, window)
	for where, want := range map[string]string{
		"panel Close attempts":         fmt.Sprint(totals.Attempts),
		"panel Failed":                 fmt.Sprint(totals.Failed),
		"panel Late final attempts":    fmt.Sprint(totals.Late),
		"panel Lateness p50":           fmt.Sprint(overall.P50),
		"panel Lateness p99":           fmt.Sprint(overall.P99),
		"panel Duplicate rows ignored": fmt.Sprint(totals.Duplicates),
	} {
		if got := results[where]; len(got) != 1 || got[0] != want {
			t.Errorf("%s: %v, want %s (as chstore counts)", where, got, want)
		}
	}
	lat, _ := s.Lateness(ctx, window)
	if got := results["panel Lateness by first tier and kind"]; len(got) != len(lat) {
		t.Errorf("lateness table has %d rows, want %d: %v", len(got), len(lat), got)
	} else {
		for i, l := range lat {
			if want := fmt.Sprintf("%s %s %d %d %d %d %d %d", l.Tier, l.Kind, l.Count, l.P50, l.P90, l.P99, l.P999, l.Max); got[i] != want {
				t.Errorf("lateness row %d: %q, want %q", i, got[i], want)
			}
		}
	}
	late, _ := s.Late(ctx, window, time.Second, 50)
	if got := results["panel Latest late or failed attempts"]; len(got) != len(late) {
		t.Errorf("late table has %d rows, want %d", len(got), len(late))
	}
}

// newOf returns a pointer to a new value of type t, to scan into.
func newOf(t reflect.Type) any { return reflect.New(t).Interface() }

// deref returns what p points to.
func deref(p any) any { return reflect.ValueOf(p).Elem().Interface() }
