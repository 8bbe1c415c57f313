package deploy

// Tests of the chart's monitoring: the PrometheusRule carries the rules
// file of prometheus/, which promtool accepts.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// checkPrometheusRule runs promtool over the PrometheusRule's spec, which
// is a rules file.
func checkPrometheusRule(t *testing.T, o object) {
	t.Helper()
	spec, ok := o.raw["spec"]
	if !ok {
		t.Errorf("%s: no spec", o)
		return
	}
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), k8sTool(t, "promtool"), "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("%s: promtool check rules: %v\n%s", o, err, out)
	}
}

// TestChartRulesCopy checks that the chart's rules file is the one in
// prometheus/, byte for byte, and that the PrometheusRule carries it.
func TestChartRulesCopy(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(chartRulesSource)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := os.ReadFile(chartRulesCopy)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src, cp) {
		t.Fatalf("%s differs from %s: copy it (cp deploy/%s deploy/%s)", chartRulesCopy, chartRulesSource, chartRulesSource, chartRulesCopy)
	}

	out, err := renderChart(t, "", "prometheusRule.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := yaml.Unmarshal(src, &want); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range parseManifests(t, out) {
		if o.Kind != "PrometheusRule" {
			continue
		}
		found = true
		got, _ := yaml.Marshal(o.raw["spec"])
		wantB, _ := yaml.Marshal(want)
		if !bytes.Equal(got, wantB) {
			t.Errorf("%s: spec is not the rules file:\n%s", o, got)
		}
	}
	if !found {
		t.Error("prometheusRule.enabled=true rendered no PrometheusRule")
	}
}
