package deploy

// Tests of the chart's workloads: the router and the canceller as
// StatefulSets with the pod name as their group instance id, their headless
// Services, the autoscalers, disruption budgets and ServiceMonitor that
// point at them, probes, and grace periods above the shutdown timeouts.

import (
	"math"
	"slices"
	"strconv"
	"testing"
	"time"
)

// checkServicePod checks a long-running component: probes on /healthz
// (startup, liveness) and /readyz (readiness) on its http port, and a grace
// period above its shutdown timeout.
func checkServicePod(t *testing.T, o object, ps podSpec, configMaps map[string]object) {
	t.Helper()
	// The service's container first; sidecars (<component>.sidecars) follow.
	if len(ps.Containers) == 0 {
		t.Fatalf("%s: no containers", o)
	}
	c := ps.Containers[0]
	if !hasPort(c, "http") {
		t.Errorf("%s: no container port named http", o)
	}
	for _, p := range []struct {
		name  string
		probe *probe
		path  string
	}{
		{"startupProbe", c.StartupProbe, "/healthz"},
		{"livenessProbe", c.LivenessProbe, "/healthz"},
		{"readinessProbe", c.ReadinessProbe, "/readyz"},
	} {
		switch {
		case p.probe == nil || p.probe.HTTPGet == nil:
			t.Errorf("%s: no %s httpGet", o, p.name)
		case p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != "http":
			t.Errorf("%s: %s is %s on %v, want %s on http", o, p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port, p.path)
		}
	}

	env := containerEnv(t, o, c, configMaps)
	raw, ok := env["HOURGLASS_SHUTDOWN_TIMEOUT"]
	if !ok {
		t.Errorf("%s: no HOURGLASS_SHUTDOWN_TIMEOUT", o)
		return
	}
	shutdown, err := time.ParseDuration(raw)
	if err != nil {
		t.Errorf("%s: HOURGLASS_SHUTDOWN_TIMEOUT %q: %v", o, raw, err)
		return
	}
	if ps.TerminationGracePeriodSeconds == nil {
		t.Errorf("%s: no terminationGracePeriodSeconds (the default 30s is not tied to the shutdown timeout)", o)
		return
	}
	grace := time.Duration(*ps.TerminationGracePeriodSeconds) * time.Second
	if grace <= shutdown {
		t.Errorf("%s: terminationGracePeriodSeconds %v is not above the shutdown timeout %v", o, grace, shutdown)
	}
}

// TestChartGracePeriod checks the computed terminationGracePeriodSeconds
// against Go's own duration parser for shutdown timeouts in every unit.
func TestChartGracePeriod(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		shutdown string
		extra    int
	}{
		{shutdown: "20s", extra: 10},
		{shutdown: "1m30s", extra: 10},
		{shutdown: "500ms", extra: 10},
		{shutdown: "2h", extra: 1},
		{shutdown: "1.5s", extra: 5},
		{shutdown: "45s", extra: 15},
	} {
		t.Run(tc.shutdown, func(t *testing.T) {
			out, err := renderChart(t, "", "router.shutdownTimeout="+tc.shutdown, "terminationGraceExtraSeconds="+strconv.Itoa(tc.extra))
			if err != nil {
				t.Fatal(err)
			}
			d, err := time.ParseDuration(tc.shutdown)
			if err != nil {
				t.Fatal(err)
			}
			want := int64(math.Ceil(d.Seconds())) + int64(tc.extra)
			for _, o := range parseManifests(t, out) {
				if o.Kind != "StatefulSet" || o.Metadata.Labels["app.kubernetes.io/component"] != "router" {
					continue
				}
				ps, _ := podSpecOf(t, o)
				if ps.TerminationGracePeriodSeconds == nil || *ps.TerminationGracePeriodSeconds != want {
					t.Errorf("%s: terminationGracePeriodSeconds %v, want %d", o, ps.TerminationGracePeriodSeconds, want)
				}
				return
			}
			t.Error("no router StatefulSet rendered")
		})
	}
}

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
			workloads := workloadsOf(t, byKind)
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
			checkPointers(t, byKind, workloads)
		})
	}
}

// workloadsOf returns the StatefulSets and Deployments by component, and
// checks that there is one a component.
func workloadsOf(t *testing.T, byKind map[string][]object) map[string]object {
	t.Helper()
	workloads := map[string]object{} // component -> workload
	for _, kind := range []string{"StatefulSet", "Deployment"} {
		for _, o := range byKind[kind] {
			if _, dup := workloads[component(o)]; dup {
				t.Errorf("%s: a second workload of component %s", o, component(o))
			}
			workloads[component(o)] = o
		}
	}
	return workloads
}

// checkPointers checks that the autoscalers, disruption budgets and
// ServiceMonitors find the workloads of their components: an autoscaler
// targets its workload, which then sets no replicas; a budget selects its
// pods; a ServiceMonitor scrapes each component through one Service.
func checkPointers(t *testing.T, byKind map[string][]object, workloads map[string]object) {
	t.Helper()
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
	// The only state on disk is the router's store of cancellations, which
	// may be a claim per pod (router.cancellationsStore.persistence).
	for _, name := range claimTemplates(t, o) {
		if component(o) != "router" || name != cancellationsVolume {
			t.Errorf("%s: volumeClaimTemplate %s; only the router keeps state on disk, its store of cancellations", o, name)
		}
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
