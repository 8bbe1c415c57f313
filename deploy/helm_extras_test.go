package deploy

// Tests of the chart's extension points (ci/extras-values.yaml): image
// registry, extraEnv valueFrom, extra volumes, init containers, sidecars,
// probe overrides, ServiceMonitor relabelings and namespace, and the
// per-alert overrides of the PrometheusRule.

import (
	"slices"
	"strings"
	"testing"
)

const extrasScenario = "ci/extras-values.yaml"

// TestChartExtrasPods checks what ci/extras-values.yaml adds to the pods.
func TestChartExtrasPods(t *testing.T) {
	t.Parallel()
	pods := map[string]podSpec{}
	for _, o := range parseManifests(t, scenarioRender(t, extrasScenario)) {
		if ps, ok := podSpecOf(t, o); ok && (o.Kind == "StatefulSet" || o.Kind == "Deployment") {
			pods[component(o)] = ps
			if got := ps.Containers[0].Image; got != "registry.example.com/mirror/hourglass:v0.1.0" {
				t.Errorf("%s: image %s, want image.registry before image.repository", o, got)
			}
		}
	}
	router, canceller := pods["router"].Containers[0], pods["canceller"]
	if i := slices.IndexFunc(router.Env, func(e envVar) bool { return e.Name == "HOURGLASS_LAG_INTERVAL" }); i < 0 || router.Env[i].ValueFrom == nil || router.Env[i].ValueFrom.ConfigMapKeyRef == nil {
		t.Errorf("router: extraEnv HOURGLASS_LAG_INTERVAL is not valueFrom configMapKeyRef: %+v", router.Env)
	}
	if i := slices.IndexFunc(canceller.Containers[0].Env, func(e envVar) bool { return e.Name == "HOURGLASS_CLIENT_ID" }); i < 0 || canceller.Containers[0].Env[i].ValueFrom.SecretKeyRef == nil {
		t.Errorf("canceller: extraEnv HOURGLASS_CLIENT_ID is not valueFrom secretKeyRef")
	}
	if !slices.ContainsFunc(router.VolumeMounts, func(m struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	}) bool {
		return m.Name == "scratch"
	}) || !slices.ContainsFunc(pods["router"].Volumes, func(v podVol) bool { return v.Name == "scratch" }) {
		t.Error("router: extraVolumes/extraVolumeMounts scratch missing")
	}
	if len(canceller.InitContainers) != 1 || canceller.InitContainers[0].Name != "wait-for-db" {
		t.Errorf("canceller: initContainers %+v, want wait-for-db", canceller.InitContainers)
	}
	if len(canceller.Containers) != 2 || canceller.Containers[1].Name != "db-proxy" {
		t.Errorf("canceller: containers %d, want the canceller and the sidecar db-proxy", len(canceller.Containers))
	}
	if p := router.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("router: livenessProbe override lost the default httpGet: %+v", p)
	}
	if got := dig(mustRaw(t, "StatefulSet", "router"), "spec", "template", "spec", "containers"); !strings.Contains(toYAML(t, got), "periodSeconds: 20") {
		t.Errorf("router: livenessProbe periodSeconds override not applied")
	}
}

// mustRaw returns the raw object of a kind and component in the extras
// scenario.
func mustRaw(t *testing.T, kind, comp string) map[string]any {
	t.Helper()
	for _, o := range parseManifests(t, scenarioRender(t, extrasScenario)) {
		if o.Kind == kind && (comp == "" || component(o) == comp) {
			return o.raw
		}
	}
	t.Fatalf("%s: no %s of %q", extrasScenario, kind, comp)
	return nil
}
