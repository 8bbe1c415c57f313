package deploy

// Tests that every scenario renders manifests that Kubernetes accepts:
// strict schema validation with kubeconform, and the checks of each pod.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// kubeconformResult is kubeconform's -output json.
type kubeconformResult struct {
	Resources []struct {
		Filename string `json:"filename"`
		Kind     string `json:"kind"`
		Name     string `json:"name"`
		Version  string `json:"version"`
		Status   string `json:"status"`
		Msg      string `json:"msg"`
	} `json:"resources"`
	Summary struct {
		Valid   int `json:"valid"`
		Invalid int `json:"invalid"`
		Errors  int `json:"errors"`
		Skipped int `json:"skipped"`
	} `json:"summary"`
}

// kubeconform validates manifests strictly against the generated schemas
// (Kubernetes' OpenAPI spec and the Prometheus Operator CRDs) and returns
// the problems it found; a kind without a schema is a problem too.
func kubeconform(t *testing.T, manifests []byte) (kubeconformResult, []string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), k8sTool(t, "kubeconform"),
		"-strict", "-output", "json", "-summary", "-verbose",
		"-schema-location", k8sSchemas(t), "-kubernetes-version", chartKubeVersion, "-")
	cmd.Stdin = bytes.NewReader(manifests)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var res kubeconformResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("kubeconform: %v (%v)\nstdout: %s\nstderr: %s", err, runErr, out, stderr.Bytes())
	}
	var problems []string
	for _, r := range res.Resources {
		if r.Status != "statusValid" {
			problems = append(problems, fmt.Sprintf("%s/%s (%s): %s: %s", r.Kind, r.Name, r.Version, r.Status, r.Msg))
		}
	}
	if runErr != nil && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("kubeconform: %v: %s", runErr, stderr.Bytes()))
	}
	return res, problems
}

// TestChartRender renders every scenario and checks the manifests: strict
// schema validation of every object, the PrometheusRule's rules through
// promtool, restricted security contexts, probes, grace periods above the
// shutdown timeouts, and no secret material.
func TestChartRender(t *testing.T) {
	t.Parallel()
	for _, values := range chartScenarios {
		t.Run(scenarioName(values), func(t *testing.T) {
			t.Parallel()
			out := scenarioRender(t, values)
			objs := parseManifests(t, out)

			res, problems := kubeconform(t, out)
			for _, p := range problems {
				t.Errorf("kubeconform: %s", p)
			}
			if res.Summary.Valid != len(objs) {
				t.Errorf("kubeconform validated %d of %d objects (summary %+v)", res.Summary.Valid, len(objs), res.Summary)
			}

			configMaps := configMapsOf(objs)
			pods := 0
			for _, o := range objs {
				switch o.Kind {
				case "Secret":
					t.Errorf("%s: the chart renders no Secrets; it references existing ones", o)
				case "PrometheusRule":
					checkPrometheusRule(t, o)
				}
				ps, ok := podSpecOf(t, o)
				if !ok {
					continue
				}
				pods++
				checkPodSecurity(t, o, ps)
				checkNoSecretValues(t, o, ps)
				if o.Kind == "Deployment" || o.Kind == "StatefulSet" {
					checkServicePod(t, o, ps, configMaps)
				}
			}
			if pods < 3 {
				t.Errorf("only %d pod templates rendered", pods)
			}
		})
	}
}

// kubeconformRejects are manifests the validation must reject, and a part
// of its complaint.
var kubeconformRejects = []struct {
	name     string
	manifest string
	want     string
}{
	{
		name: "unknown field",
		manifest: `apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: c
          image: x
          securityContext: {runAsNonRot: true}
`,
		want: "runAsNonRot",
	},
	{
		name: "wrong type",
		manifest: `apiVersion: v1
kind: Service
metadata: {name: x}
spec:
  ports: [{port: http}]
`,
		want: "/spec/ports/0/port",
	},
	{
		name: "custom resource field",
		manifest: `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: x}
spec:
  selector: {}
  endpoints: [{port: http, intervall: 30s}]
`,
		want: "intervall",
	},
	{
		name: "kind without a schema",
		manifest: `apiVersion: example.com/v1
kind: Widget
metadata: {name: x}
`,
		want: "could not find schema",
	},
}

// TestKubeconformStrict checks that the validation the chart tests rely on
// rejects what it should: an unknown field, a wrong type, an unknown field
// of a custom resource, and a kind it has no schema for.
func TestKubeconformStrict(t *testing.T) {
	t.Parallel()
	for _, tc := range kubeconformRejects {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := kubeconform(t, []byte(tc.manifest))
			if len(problems) == 0 {
				t.Fatalf("kubeconform accepted:\n%s", tc.manifest)
			}
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Errorf("kubeconform problems do not mention %q: %v", tc.want, problems)
			}
		})
	}
}
