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
// target's rawSql and every query variable's query. Panels on the
// Dashboard data source run no SQL (they show a section of another panel's
// result; deploy's TestClickHouseDashboardOneScan checks them).
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
		Datasource *struct{ Type, UID string } `json:"datasource"`
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
		if p.Type == "row" || (p.Datasource != nil && p.Datasource.UID == "-- Dashboard --") {
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
	if len(out) < 3 {
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
		"ARRAY": true, "JOIN": true, "NULL": true, "ANY": true, "LEFT": true, "USING": true,
	}
)

// TestDashboardColumns checks that the ClickHouse dashboard's queries name
// only tables and columns of the schema: the outcomes and the index (besides
// SQL keywords, functions and the aliases the queries define).
func TestDashboardColumns(t *testing.T) {
	allowed := map[string]bool{chstore.OutcomesTable: true, chstore.DeadlinesTable: true, chstore.CancellationsTable: true,
		chstore.DeadLettersTable: true, chstore.OutcomesByTaskTable: true}
	for _, cs := range [][]string{chstore.Columns, chstore.DeadlineColumns, chstore.CancelColumns, chstore.DeadLetterColumns} {
		for _, c := range cs {
			allowed[c] = true
		}
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
// runs on this server, and the sections of the one query that groups the
// attempts (which the other panels show) agree with the store's queries.
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
	results := map[string][]map[string]string{}
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
		var out []map[string]string
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
			row := map[string]string{}
			for i, v := range vals {
				row[cols[i].Name()] = fmt.Sprint(deref(v))
			}
			out = append(out, row)
		}
		rows.Close()
		results[q.where] = out
	}
	// The seed's window, as chstore counts it: 9 attempts, 1 failed, 2 late,
	// p50 30ms and p99 2s over the final ones, 4 duplicate rows.
	sections := map[string][]map[string]string{}
	for _, row := range results["panel Close attempts"] {
		sections[row["section"]] = append(sections[row["section"]], row)
	}
	totals, _ := s.Totals(ctx, window, time.Second)
	overall, _ := s.Overall(ctx, window)
	if got := sections["total"]; len(got) != 1 {
		t.Errorf("section total: %d rows, want 1", len(got))
	} else {
		for col, want := range map[string]int64{
			"attempts": totals.Attempts, "failed": totals.Failed, "late": totals.Late,
			"p50": overall.P50, "p99": overall.P99, "duplicate_rows": totals.Duplicates,
		} {
			if got[0][col] != fmt.Sprint(want) {
				t.Errorf("section total: %s %s, want %d (as chstore counts)", col, got[0][col], want)
			}
		}
	}
	lat, _ := s.Lateness(ctx, window)
	if got := sections["tier"]; len(got) != len(lat) {
		t.Errorf("section tier has %d rows, want %d: %v", len(got), len(lat), got)
	} else {
		for i, l := range lat {
			r := got[i]
			have := strings.Join([]string{r["tier"], r["kind"], r["final_attempts"], r["p50"], r["p90"], r["p99"], r["p999"], r["lateness_max"]}, " ")
			if want := fmt.Sprintf("%s %s %d %d %d %d %d %d", l.Tier, l.Kind, l.Count, l.P50, l.P90, l.P99, l.P999, l.Max); have != want {
				t.Errorf("tier row %d: %q, want %q", i, have, want)
			}
		}
	}
	late, _ := s.Late(ctx, window, time.Second, 50)
	if got := sections["late"]; len(got) != len(late) {
		t.Errorf("section late has %d rows, want %d", len(got), len(late))
	}
	if len(sections["series"]) == 0 {
		t.Error("section series has no rows")
	}
}

// newOf returns a pointer to a new value of type t, to scan into.
func newOf(t reflect.Type) any { return reflect.New(t).Interface() }

// deref returns what p points to, through a pointer a Nullable column
// scans into ("NULL" for nil).
func deref(p any) any {
	v := reflect.ValueOf(p).Elem()
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "NULL"
		}
		v = v.Elem()
	}
	return v.Interface()
}
