package deploy

// Tests of the chart's workloads: the router and the canceller as
// StatefulSets with the pod name as their group instance id, their headless
// Services, and the autoscalers, disruption budgets and ServiceMonitor that
// point at them.

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// renderValues renders the chart with values given as YAML text (written
// to a temporary file) and --set overrides.
func renderValues(t *testing.T, values string, set ...string) ([]byte, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"template", chartRelease, chartDir, "--namespace", chartNamespace, "--kube-version", chartKubeVersion, "--values", path}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return helm(t, args...)
}

// mustRender renders like renderValues and fails the test on an error.
func mustRender(t *testing.T, values string, set ...string) []object {
	t.Helper()
	out, err := renderValues(t, values, set...)
	if err != nil {
		t.Fatal(err)
	}
	return parseManifests(t, out)
}

// dig returns the value at a path of nested maps, or nil.
func dig(m map[string]any, path ...string) any {
	var cur any = m
	for _, k := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// labelSelector is a metav1.LabelSelector.
type labelSelector struct {
	MatchLabels      map[string]string `yaml:"matchLabels"`
	MatchExpressions []struct {
		Key      string   `yaml:"key"`
		Operator string   `yaml:"operator"`
		Values   []string `yaml:"values"`
	} `yaml:"matchExpressions"`
}

// matches reports whether labels satisfy the selector, as the API does.
func (s labelSelector) matches(labels map[string]string) bool {
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, e := range s.MatchExpressions {
		v, ok := labels[e.Key]
		switch e.Operator {
		case "In":
			if !ok || !slices.Contains(e.Values, v) {
				return false
			}
		case "NotIn":
			if ok && slices.Contains(e.Values, v) {
				return false
			}
		case "Exists":
			if !ok {
				return false
			}
		case "DoesNotExist":
			if ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// selectorAt decodes the label selector at a path of an object.
func selectorAt(t *testing.T, o object, path ...string) labelSelector {
	t.Helper()
	var s labelSelector
	if v := dig(o.raw, path...); v != nil {
		recode(t, v, &s)
	}
	return s
}

// podLabels returns the labels of a workload's pod template.
func podLabels(t *testing.T, o object) map[string]string {
	t.Helper()
	var l map[string]string
	recode(t, dig(o.raw, "spec", "template", "metadata", "labels"), &l)
	return l
}

// component is the app.kubernetes.io/component label of an object.
func component(o object) string { return o.Metadata.Labels["app.kubernetes.io/component"] }

// TestChartStatefulSets checks, in every scenario, that the router and the
// canceller are StatefulSets whose pods take their group instance id from
// their own name, governed by a headless Service, started in parallel and
// updated one pod at a time; that the recorder stays a Deployment without
// an instance id; and that autoscalers, disruption budgets and the
// ServiceMonitor find the pods.
func TestChartStatefulSets(t *testing.T) {
	t.Parallel()
	for _, values := range chartScenarios {
		t.Run(scenarioName(values), func(t *testing.T) {
			t.Parallel()
			objs := parseManifests(t, scenarioRender(t, values))
			byKind := map[string][]object{}
			for _, o := range objs {
				byKind[o.Kind] = append(byKind[o.Kind], o)
			}
			workloads := map[string]object{} // component -> workload
			for _, kind := range []string{"StatefulSet", "Deployment"} {
				for _, o := range byKind[kind] {
					if _, dup := workloads[component(o)]; dup {
						t.Errorf("%s: a second workload of component %s", o, component(o))
					}
					workloads[component(o)] = o
				}
			}
			for _, name := range []string{"router", "canceller"} {
				o, ok := workloads[name]
				if !ok {
					t.Errorf("no %s workload rendered", name)
					continue
				}
				if o.Kind != "StatefulSet" {
					t.Errorf("%s: the %s must be a StatefulSet (stable pod names are its instance ids)", o, name)
					continue
				}
				checkStatefulSet(t, o, byKind["Service"])
			}
			if o, ok := workloads["recorder"]; ok {
				if o.Kind != "Deployment" {
					t.Errorf("%s: the recorder is a Deployment", o)
				}
				ps, _ := podSpecOf(t, o)
				for _, e := range ps.Containers[0].Env {
					if e.Name == "HOURGLASS_INSTANCE_ID" {
						t.Errorf("%s: the recorder has no --instance-id, yet HOURGLASS_INSTANCE_ID is set", o)
					}
				}
			}

			for _, h := range byKind["HorizontalPodAutoscaler"] {
				kind, _ := dig(h.raw, "spec", "scaleTargetRef", "kind").(string)
				name, _ := dig(h.raw, "spec", "scaleTargetRef", "name").(string)
				w, ok := workloads[component(h)]
				if !ok || w.Kind != kind || w.Metadata.Name != name {
					t.Errorf("%s: scaleTargetRef %s/%s is not the %s workload %v", h, kind, name, component(h), w)
					continue
				}
				if dig(w.raw, "spec", "replicas") != nil {
					t.Errorf("%s: sets replicas although %s scales it", w, h)
				}
			}
			for _, p := range byKind["PodDisruptionBudget"] {
				w, ok := workloads[component(p)]
				if !ok || !selectorAt(t, p, "spec", "selector").matches(podLabels(t, w)) {
					t.Errorf("%s: selects no pod of the %s workload", p, component(p))
				}
			}
			for _, sm := range byKind["ServiceMonitor"] {
				checkScrapedOnce(t, sm, byKind["Service"], workloads)
			}
		})
	}
}

// checkStatefulSet checks one StatefulSet of a consumer group member.
func checkStatefulSet(t *testing.T, o object, services []object) {
	t.Helper()
	spec, _ := o.raw["spec"].(map[string]any)
	if got := spec["podManagementPolicy"]; got != "Parallel" {
		t.Errorf("%s: podManagementPolicy %v, want Parallel", o, got)
	}
	if got := dig(spec, "updateStrategy", "type"); got != "RollingUpdate" {
		t.Errorf("%s: updateStrategy.type %v, want RollingUpdate", o, got)
	}
	if spec["volumeClaimTemplates"] != nil {
		t.Errorf("%s: volumeClaimTemplates; the services keep no state on disk", o)
	}

	// The governing Service: rendered, headless, selecting these pods.
	serviceName, _ := spec["serviceName"].(string)
	i := slices.IndexFunc(services, func(s object) bool { return s.Metadata.Name == serviceName })
	if i < 0 {
		t.Errorf("%s: serviceName %q is not a rendered Service", o, serviceName)
	} else {
		svc := services[i]
		if got := dig(svc.raw, "spec", "clusterIP"); got != "None" {
			t.Errorf("%s: governing %s has clusterIP %v, want None (headless)", o, svc, got)
		}
		var sel map[string]string
		recode(t, dig(svc.raw, "spec", "selector"), &sel)
		if !(labelSelector{MatchLabels: sel}).matches(podLabels(t, o)) || len(sel) == 0 {
			t.Errorf("%s: governing %s selects %v, not these pods", o, svc, sel)
		}
	}

	// HOURGLASS_INSTANCE_ID is the pod's own name, through the downward
	// API, in the container's env (which no ConfigMap can override).
	ps, _ := podSpecOf(t, o)
	var found bool
	for _, e := range ps.Containers[0].Env {
		if e.Name != "HOURGLASS_INSTANCE_ID" {
			continue
		}
		found = true
		if e.Value != nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
			t.Errorf("%s: HOURGLASS_INSTANCE_ID is not the pod name (fieldRef metadata.name): %+v", o, e)
		}
	}
	if !found {
		t.Errorf("%s: no HOURGLASS_INSTANCE_ID: without static membership a restarted pod waits out the session timeout", o)
	}
}

// checkScrapedOnce checks that the ServiceMonitor selects exactly one
// Service per component, and that it is not a headless governing Service.
func checkScrapedOnce(t *testing.T, sm object, services []object, workloads map[string]object) {
	t.Helper()
	sel := selectorAt(t, sm, "spec", "selector")
	for name, w := range workloads {
		var scraped []string
		for _, svc := range services {
			if !sel.matches(svc.Metadata.Labels) {
				continue
			}
			var podSel map[string]string
			recode(t, dig(svc.raw, "spec", "selector"), &podSel)
			if len(podSel) > 0 && (labelSelector{MatchLabels: podSel}).matches(podLabels(t, w)) {
				scraped = append(scraped, svc.Metadata.Name)
				if dig(svc.raw, "spec", "clusterIP") == "None" {
					t.Errorf("%s selects the headless %s", sm, svc)
				}
			}
		}
		if len(scraped) != 1 {
			t.Errorf("%s: the %s pods are scraped through %d Services %v, want 1", sm, name, len(scraped), scraped)
		}
	}
}
