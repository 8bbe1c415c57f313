package deploy

// Tests of the pods' security: the "restricted" Pod Security Standard, and
// the NetworkPolicies (on by default, ingress to the http port from the
// scrapers only).

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// checkPodSecurity checks the "restricted" Pod Security Standard and
// resources on every container of a pod.
func checkPodSecurity(t *testing.T, o object, ps podSpec) {
	t.Helper()
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken is not false", o)
	}
	pod := ps.SecurityContext
	for _, c := range append(slices.Clone(ps.Containers), ps.InitContainers...) {
		where := fmt.Sprintf("%s container %s", o, c.Name)
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("%s: no securityContext", where)
			continue
		}
		isTrue := func(b *bool) bool { return b != nil && *b }
		if !isTrue(sc.RunAsNonRoot) && !isTrue(pod.RunAsNonRoot) {
			t.Errorf("%s: runAsNonRoot is not true", where)
		}
		if uid := cmpOr(sc.RunAsUser, pod.RunAsUser); uid != nil && *uid == 0 {
			t.Errorf("%s: runs as uid 0", where)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: allowPrivilegeEscalation is not false", where)
		}
		if isTrue(sc.Privileged) {
			t.Errorf("%s: privileged", where)
		}
		if !isTrue(sc.ReadOnlyRootFilesystem) {
			t.Errorf("%s: readOnlyRootFilesystem is not true", where)
		}
		if !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: capabilities drop %v add %v, want drop [ALL] and no add", where, sc.Capabilities.Drop, sc.Capabilities.Add)
		}
		if sc.SeccompProfile.Type != "RuntimeDefault" && pod.SeccompProfile.Type != "RuntimeDefault" {
			t.Errorf("%s: seccompProfile is not RuntimeDefault", where)
		}
		if len(c.Resources.Requests) == 0 || c.Resources.Limits["memory"] == nil {
			t.Errorf("%s: resources %+v, want requests and a memory limit", where, c.Resources)
		}
	}
}

func cmpOr[T any](ps ...*T) *T {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// networkPolicy is the part of a NetworkPolicy the tests read.
type networkPolicy struct {
	Spec struct {
		PodSelector labelSelector `yaml:"podSelector"`
		PolicyTypes []string      `yaml:"policyTypes"`
		Ingress     []struct {
			Ports []struct {
				Port     any    `yaml:"port"`
				Protocol string `yaml:"protocol"`
			} `yaml:"ports"`
			From []any `yaml:"from"`
		} `yaml:"ingress"`
		Egress []map[string]any `yaml:"egress"`
	} `yaml:"spec"`
}

// policies returns the rendered NetworkPolicies by component.
func policies(t *testing.T, objs []object) map[string]networkPolicy {
	t.Helper()
	out := map[string]networkPolicy{}
	for _, o := range objs {
		if o.Kind != "NetworkPolicy" {
			continue
		}
		var np networkPolicy
		recode(t, o.raw, &np)
		out[component(o)] = np
	}
	return out
}

// yamlValue decodes YAML text, for comparing rendered peers with values.
func yamlValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// networkPolicyCase is values TestChartNetworkPolicy renders and the
// NetworkPolicies they must give.
type networkPolicyCase struct {
	name       string
	values     string
	components []string
	peers      any  // nil: no ingress rule at all
	allEgress  bool // egress [{}]
}

// networkPolicyCases are the cases of TestChartNetworkPolicy.
func networkPolicyCases(t *testing.T) []networkPolicyCase {
	t.Helper()
	defaultPeers := yamlValue(t, `
- namespaceSelector: {}
  podSelector:
    matchLabels: {app.kubernetes.io/name: prometheus}
`)
	return []networkPolicyCase{
		{
			name:       "defaults",
			components: []string{"router", "canceller"},
			peers:      defaultPeers,
			allEgress:  true,
		},
		{
			name:       "recorder too",
			values:     "recorder: {enabled: true}",
			components: []string{"router", "canceller", "recorder"},
			peers:      defaultPeers,
			allEgress:  true,
		},
		{
			name: "own scrapers",
			values: `
networkPolicy:
  metricsFrom:
    - namespaceSelector:
        matchLabels: {kubernetes.io/metadata.name: monitoring}
      podSelector:
        matchLabels: {app.kubernetes.io/name: alloy}
    - ipBlock: {cidr: 10.1.0.0/16}
`,
			components: []string{"router", "canceller"},
			peers: yamlValue(t, `
- namespaceSelector:
    matchLabels: {kubernetes.io/metadata.name: monitoring}
  podSelector:
    matchLabels: {app.kubernetes.io/name: alloy}
- ipBlock: {cidr: 10.1.0.0/16}
`),
			allEgress: true,
		},
		{
			name:       "no scrapers",
			values:     "networkPolicy: {metricsFrom: []}",
			components: []string{"router", "canceller"},
			peers:      nil,
			allEgress:  true,
		},
		{
			name:       "egress restricted",
			values:     "networkPolicy: {allowAllEgress: false, egress: [{ports: [{port: 9092}]}]}",
			components: []string{"router", "canceller"},
			peers:      defaultPeers,
		},
		{
			name:   "off",
			values: "networkPolicy: {enabled: false}",
		},
	}
}

// TestChartNetworkPolicy checks the NetworkPolicies: rendered by default,
// one per component, selecting its pods, allowing ingress only to the http
// port and only from networkPolicy.metricsFrom (by default Prometheus pods
// in any namespace), and every egress; the scrapers are configurable, an
// empty list allows no ingress, and the policies can be turned off.
func TestChartNetworkPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range networkPolicyCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			objs := mustRender(t, tc.values)
			got := policies(t, objs)
			if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, slices.Sorted(slices.Values(tc.components))) {
				t.Fatalf("NetworkPolicies of %v, want %v", names, tc.components)
			}
			for _, o := range objs {
				np, ok := got[component(o)]
				if !ok || (o.Kind != "StatefulSet" && o.Kind != "Deployment") {
					continue
				}
				checkNetworkPolicy(t, o, np, tc)
			}
		})
	}
}

// checkNetworkPolicy checks the NetworkPolicy of a workload's component.
func checkNetworkPolicy(t *testing.T, o object, np networkPolicy, tc networkPolicyCase) {
	t.Helper()
	where := "NetworkPolicy of the " + component(o)
	if !np.Spec.PodSelector.matches(podLabels(t, o)) {
		t.Errorf("%s: podSelector does not select %s's pods", where, o)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []string{"Ingress", "Egress"}) {
		t.Errorf("%s: policyTypes %v, want [Ingress Egress]", where, np.Spec.PolicyTypes)
	}
	if tc.peers == nil {
		if len(np.Spec.Ingress) != 0 {
			t.Errorf("%s: %d ingress rules, want none (no ingress)", where, len(np.Spec.Ingress))
		}
	} else {
		if len(np.Spec.Ingress) != 1 {
			t.Fatalf("%s: %d ingress rules, want 1", where, len(np.Spec.Ingress))
		}
		in := np.Spec.Ingress[0]
		if len(in.Ports) != 1 || in.Ports[0].Port != "http" || in.Ports[0].Protocol != "TCP" {
			t.Errorf("%s: ingress ports %+v, want only the http port", where, in.Ports)
		}
		ps, _ := podSpecOf(t, o)
		if !hasPort(ps.Containers[0], "http") {
			t.Errorf("%s: %s has no container port named http", where, o)
		}
		var from any
		recode(t, in.From, &from)
		if len(in.From) == 0 || !reflect.DeepEqual(from, tc.peers) {
			t.Errorf("%s: ingress from %v, want %v", where, from, tc.peers)
		}
	}
	allOpen := len(np.Spec.Egress) == 1 && len(np.Spec.Egress[0]) == 0
	if allOpen != tc.allEgress {
		t.Errorf("%s: egress %v; all egress allowed: %v, want %v", where, np.Spec.Egress, allOpen, tc.allEgress)
	}
}
