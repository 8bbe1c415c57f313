package deploy

// Tests of the ServiceMonitor and PrometheusRule values of
// ci/extras-values.yaml, and of the values they refuse.

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// toYAML renders v as YAML text.
func toYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestChartExtrasMonitoring checks the ServiceMonitor's relabelings and the
// PrometheusRule's per-alert overrides, added labels and runbook base.
func TestChartExtrasMonitoring(t *testing.T) {
	t.Parallel()
	sm := toYAML(t, mustRaw(t, "ServiceMonitor", "metrics"))
	for _, want := range []string{"relabelings:", "targetLabel: cluster", "metricRelabelings:", "namespace: hourglass"} {
		if !strings.Contains(sm, want) {
			t.Errorf("ServiceMonitor has no %q:\n%s", want, sm)
		}
	}
	if strings.Contains(sm, "namespaceSelector") {
		t.Error("ServiceMonitor in the release's namespace has a namespaceSelector")
	}
	var spec ruleFile
	recode(t, mustRaw(t, "PrometheusRule", "alerts")["spec"], &spec)
	alerts := map[string]rule{}
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts[r.Alert] = r
			}
		}
	}
	if _, ok := alerts["HourglassRecorderLag"]; ok {
		t.Error("HourglassRecorderLag is rendered with enabled: false")
	}
	if r := alerts["HourglassCancellerLag"]; r.For != "20m" || !strings.Contains(r.Expr, "> 50000") {
		t.Errorf("HourglassCancellerLag: for %q expr %q, want the overrides", r.For, r.Expr)
	}
	if r := alerts["HourglassTargetDown"]; r.Labels["severity"] != "critical" {
		t.Errorf("HourglassTargetDown: severity %q, want the override critical", r.Labels["severity"])
	}
	for name, r := range alerts {
		if r.Labels["team"] != "checkout" {
			t.Errorf("%s: no additionalLabels team", name)
		}
		if want := "https://wiki.example.com/hourglass/runbook#" + strings.ToLower(name); r.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %q", name, r.Annotations["runbook_url"], want)
		}
	}
	if len(alerts) < 10 {
		t.Errorf("PrometheusRule has %d alerts", len(alerts))
	}
}

// TestChartServiceMonitorNamespace checks that a ServiceMonitor in another
// namespace selects the release's namespace.
func TestChartServiceMonitorNamespace(t *testing.T) {
	t.Parallel()
	for _, o := range mustRender(t, "", "serviceMonitor.enabled=true", "serviceMonitor.namespace=monitoring") {
		if o.Kind != "ServiceMonitor" {
			continue
		}
		if got := dig(o.raw, "metadata", "namespace"); got != "monitoring" {
			t.Errorf("%s: namespace %v, want monitoring", o, got)
		}
		if got := toYAML(t, dig(o.raw, "spec", "namespaceSelector")); !strings.Contains(got, "- "+chartNamespace) {
			t.Errorf("%s: namespaceSelector %s, want matchNames [%s]", o, got, chartNamespace)
		}
	}
}

// TestChartRejectsExtras checks the new values' refusals.
func TestChartRejectsExtras(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"valueFrom of a variable the chart sets", []string{"router.extraEnv.HOURGLASS_GROUP.valueFrom.fieldRef.fieldPath=metadata.name"}, "router.extraEnv.HOURGLASS_GROUP: the chart sets this variable"},
		{"valueFrom of the instance id", []string{"canceller.extraEnv.HOURGLASS_INSTANCE_ID.valueFrom.fieldRef.fieldPath=metadata.uid"}, "canceller.extraEnv.HOURGLASS_INSTANCE_ID"},
		{"extraEnv object without valueFrom", []string{"router.extraEnv.HOURGLASS_LAG_INTERVAL.value=30s"}, "/router/extraEnv/HOURGLASS_LAG_INTERVAL"},
		{"unknown probe", []string{"router.probes.alive.periodSeconds=5"}, "additional properties 'alive' not allowed"},
		{"sidecar without a name", []string{"canceller.sidecars[0].image=x"}, "/canceller/sidecars/0"},
		{"unknown alert", []string{"prometheusRule.enabled=true", "prometheusRule.alerts.HourglassNoSuch.enabled=false"}, "prometheusRule.alerts.HourglassNoSuch: no such alert"},
		{"unknown alert override key", []string{"prometheusRule.alerts.HourglassTargetDown.severity=critical"}, "additional properties 'severity' not allowed"},
		{"runbook base not a URL", []string{"prometheusRule.runbookBaseURL=wiki/runbook"}, "/prometheusRule/runbookBaseURL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderChart(t, "", tc.set...)
			if err == nil {
				t.Fatalf("--set %v rendered; want an error containing %q", tc.set, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("--set %v: error does not contain %q:\n%v", tc.set, tc.want, err)
			}
		})
	}
}
