package deploy

// The chart README's values table, generated from the "# --" comments of
// values.yaml: TestChartReadme fails when the README is stale, and
// `go test ./deploy -run TestChartReadme -update` rewrites it.

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var updateReadme = flag.Bool("update", false, "rewrite the chart README's values table from values.yaml")

const (
	chartReadme      = chartDir + "/README.md"
	chartValues      = chartDir + "/values.yaml"
	valuesTableBegin = "<!-- values table: generated from values.yaml by go test ./deploy -run TestChartReadme -update -->\n"
	valuesTableEnd   = "<!-- end of values table -->\n"
)

// TestChartReadme checks that the README's values table is the one
// values.yaml's comments make.
func TestChartReadme(t *testing.T) {
	b, err := os.ReadFile(chartValues)
	if err != nil {
		t.Fatal(err)
	}
	table := valuesTable(t, b)
	readme, err := os.ReadFile(chartReadme)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := bytes.Index(readme, []byte(valuesTableBegin)), bytes.Index(readme, []byte(valuesTableEnd))
	if begin < 0 || end < begin {
		t.Fatalf("%s: no %q ... %q markers", chartReadme, valuesTableBegin, valuesTableEnd)
	}
	got := string(readme[begin+len(valuesTableBegin) : end])
	if got == table {
		return
	}
	if !*updateReadme {
		t.Fatalf("%s: the values table is stale: run go test ./deploy -run TestChartReadme -update", chartReadme)
	}
	out := string(readme[:begin+len(valuesTableBegin)]) + table + string(readme[end:])
	if err := os.WriteFile(chartReadme, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// valuesTable is the Markdown table of every key whose head comment starts
// with "-- ": key path, default, description.
func valuesTable(t *testing.T, values []byte) string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		t.Fatalf("%s: %v", chartValues, err)
	}
	var rows []string
	walkValues(t, doc.Content[0], "", &rows)
	if len(rows) < 50 {
		t.Fatalf("%s: only %d documented keys", chartValues, len(rows))
	}
	return "| key | default | description |\n|---|---|---|\n" + strings.Join(rows, "")
}

// walkValues adds a row for each documented key under a mapping node.
func walkValues(t *testing.T, m *yaml.Node, prefix string, rows *[]string) {
	t.Helper()
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		path := prefix + k.Value
		if _, doc, ok := strings.Cut(k.HeadComment, "# -- "); ok {
			*rows = append(*rows, fmt.Sprintf("| `%s` | %s | %s |\n", path, defaultOf(t, v), commentText(doc)))
			continue
		}
		if v.Kind == yaml.MappingNode {
			walkValues(t, v, path+".", rows)
		}
	}
}

// commentText joins the lines of a "# --" comment into one table cell.
func commentText(doc string) string {
	var words []string
	for line := range strings.SplitSeq(doc, "\n") {
		words = append(words, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#")))
	}
	text := strings.Join(strings.Fields(strings.Join(words, " ")), " ")
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(text)
}

// defaultOf is a value as compact JSON in backticks.
func defaultOf(t *testing.T, v *yaml.Node) string {
	t.Helper()
	var x any
	if err := v.Decode(&x); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	return "`" + strings.ReplaceAll(string(b), "|", `\|`) + "`"
}
