package deploy

// Tests of the Helm chart in helm/hourglass and of the image recipe in
// ../Dockerfile. They run helm, kubeconform and promtool, and build the
// image's binaries with the Dockerfile's own go build command. A missing
// tool fails the test: scripts/k8s-tools.sh installs helm and kubeconform
// and generates the Kubernetes schemas, scripts/deps.sh installs promtool.

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const (
	chartDir = "helm/hourglass"
	// chartKubeVersion is the Kubernetes version the chart is rendered and
	// validated for: the version of k8s.io/kubernetes whose OpenAPI spec
	// scripts/k8s-tools.sh turns into schemas (its K8S_VERSION).
	chartKubeVersion = "1.36.3"
	chartRelease     = "hg"
	chartNamespace   = "hourglass"
	// chartRulesSource is the rules file the chart's copy must equal.
	chartRulesSource = "prometheus/hourglass-rules.yaml"
	chartRulesCopy   = chartDir + "/files/hourglass-rules.yaml"
	dockerfile       = "../Dockerfile"
	dockerignore     = "../.dockerignore"
)

// chartScenarios are the values the chart is linted, rendered and validated
// with: its defaults ("") and every file in ci/.
var chartScenarios = []string{"", "ci/minimal-values.yaml", "ci/sasl-tls-values.yaml", "ci/closers-values.yaml", "ci/all-values.yaml"}

func scenarioName(values string) string {
	if values == "" {
		return "defaults"
	}
	return strings.TrimSuffix(filepath.Base(values), ".yaml")
}

// k8sTool returns the path of helm, kubeconform or promtool: .tools/bin
// first, where the scripts put them, then PATH.
func k8sTool(t *testing.T, name string) string {
	t.Helper()
	if abs, err := filepath.Abs(filepath.Join("..", ".tools", "bin", name)); err == nil {
		if p, err := exec.LookPath(abs); err == nil {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		script := "scripts/k8s-tools.sh"
		if name == "promtool" {
			script = "scripts/deps.sh"
		}
		t.Fatalf("%s is neither in .tools/bin nor on PATH: run %s", name, script)
	}
	return p
}

// k8sSchemas returns kubeconform's -schema-location: the directory that
// scripts/k8s-tools.sh generates the strict schemas into.
func k8sSchemas(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".tools", "k8s-schemas"))
	if err != nil {
		t.Fatal(err)
	}
	versioned := filepath.Join(dir, "v"+chartKubeVersion+"-standalone-strict")
	for _, f := range []string{"deployment-apps-v1.json", "statefulset-apps-v1.json", "servicemonitor-monitoring-v1.json", "prometheusrule-monitoring-v1.json"} {
		if _, err := os.Stat(filepath.Join(versioned, f)); err != nil {
			t.Fatalf("Kubernetes %s schemas are missing (%v): run scripts/k8s-tools.sh", chartKubeVersion, err)
		}
	}
	return dir
}

// helm runs helm with args in this directory and returns its stdout.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), k8sTool(t, "helm"), args...)
	// No repositories, plugins or caches of the user's.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// renderChart runs helm template with a values file ("" for none) and
// --set overrides.
func renderChart(t *testing.T, values string, set ...string) ([]byte, error) {
	t.Helper()
	args := []string{"template", chartRelease, chartDir, "--namespace", chartNamespace, "--kube-version", chartKubeVersion}
	if values != "" {
		args = append(args, "--values", filepath.Join(chartDir, values))
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return helm(t, args...)
}

// object is one rendered manifest.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	raw        map[string]any
}

func (o object) String() string { return o.Kind + "/" + o.Metadata.Name }

// parseManifests splits a multi-document render into objects.
func parseManifests(t *testing.T, b []byte) []object {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var objs []object
	for {
		var raw map[string]any
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("rendered manifests: %v", err)
		}
		if raw == nil {
			continue
		}
		var o object
		recode(t, raw, &o)
		o.raw = raw
		objs = append(objs, o)
	}
	if len(objs) == 0 {
		t.Fatal("rendered manifests: none")
	}
	return objs
}

// recode converts in (maps from YAML) to out through YAML.
func recode(t *testing.T, in, out any) {
	t.Helper()
	b, err := yaml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, out); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
}

// The parts of a pod spec the tests read.
type (
	podSpec struct {
		ServiceAccountName            string   `yaml:"serviceAccountName"`
		AutomountServiceAccountToken  *bool    `yaml:"automountServiceAccountToken"`
		TerminationGracePeriodSeconds *int64   `yaml:"terminationGracePeriodSeconds"`
		RestartPolicy                 string   `yaml:"restartPolicy"`
		SecurityContext               secCtx   `yaml:"securityContext"`
		Containers                    []ctr    `yaml:"containers"`
		InitContainers                []ctr    `yaml:"initContainers"`
		Volumes                       []podVol `yaml:"volumes"`
	}
	secCtx struct {
		RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
		RunAsUser                *int64 `yaml:"runAsUser"`
		AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
		Privileged               *bool  `yaml:"privileged"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
			Add  []string `yaml:"add"`
		} `yaml:"capabilities"`
		SeccompProfile struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	}
	ctr struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Args    []string `yaml:"args"`
		EnvFrom []struct {
			ConfigMapRef *struct {
				Name string `yaml:"name"`
			} `yaml:"configMapRef"`
			SecretRef *struct {
				Name string `yaml:"name"`
			} `yaml:"secretRef"`
		} `yaml:"envFrom"`
		Env   []envVar `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		LivenessProbe   *probe  `yaml:"livenessProbe"`
		ReadinessProbe  *probe  `yaml:"readinessProbe"`
		StartupProbe    *probe  `yaml:"startupProbe"`
		SecurityContext *secCtx `yaml:"securityContext"`
		Resources       struct {
			Requests map[string]any `yaml:"requests"`
			Limits   map[string]any `yaml:"limits"`
		} `yaml:"resources"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	}
	envVar struct {
		Name      string  `yaml:"name"`
		Value     *string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
			ConfigMapKeyRef *struct{} `yaml:"configMapKeyRef"`
			FieldRef        *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
			ResourceFieldRef *struct{} `yaml:"resourceFieldRef"`
		} `yaml:"valueFrom"`
	}
	probe struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port any    `yaml:"port"`
		} `yaml:"httpGet"`
	}
	podVol struct {
		Name   string `yaml:"name"`
		Secret *struct {
			SecretName string `yaml:"secretName"`
			Items      []struct {
				Key  string `yaml:"key"`
				Path string `yaml:"path"`
			} `yaml:"items"`
		} `yaml:"secret"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		EmptyDir *struct{} `yaml:"emptyDir"`
	}
)

// podSpecOf returns the pod spec of a workload, or false for other kinds.
func podSpecOf(t *testing.T, o object) (podSpec, bool) {
	t.Helper()
	var path []string
	switch o.Kind {
	case "Pod":
		path = []string{"spec"}
	case "Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet":
		path = []string{"spec", "template", "spec"}
	case "CronJob":
		path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
	default:
		return podSpec{}, false
	}
	var cur any = o.raw
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s: no %s", o, strings.Join(path, "."))
		}
		cur = m[k]
	}
	var ps podSpec
	recode(t, cur, &ps)
	return ps, true
}

// renders caches each scenario's render: several tests read them.
var renders sync.Map // values file -> renderResult

type renderResult struct {
	out []byte
	err error
}

func scenarioRender(t *testing.T, values string) []byte {
	t.Helper()
	r, ok := renders.Load(values)
	if !ok {
		out, err := renderChart(t, values)
		r, _ = renders.LoadOrStore(values, renderResult{out, err})
	}
	res := r.(renderResult)
	if res.err != nil {
		t.Fatalf("%s: %v", scenarioName(values), res.err)
	}
	return res.out
}

// TestChartLint runs helm lint --strict with the defaults and every ci/
// values file.
func TestChartLint(t *testing.T) {
	t.Parallel()
	for _, values := range chartScenarios {
		t.Run(scenarioName(values), func(t *testing.T) {
			args := []string{"lint", chartDir, "--strict", "--kube-version", chartKubeVersion, "--namespace", chartNamespace}
			if values != "" {
				args = append(args, "--values", filepath.Join(chartDir, values))
			}
			if _, err := helm(t, args...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

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

			configMaps := map[string]object{}
			for _, o := range objs {
				if o.Kind == "ConfigMap" {
					configMaps[o.Metadata.Name] = o
				}
			}
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

// checkNoSecretValues checks that passwords reach pods only as files or
// Secret references, never as literal values.
func checkNoSecretValues(t *testing.T, o object, ps podSpec) {
	t.Helper()
	for _, c := range ps.Containers {
		for _, e := range c.Env {
			upper := strings.ToUpper(e.Name)
			if (strings.Contains(upper, "PASSWORD") || strings.Contains(upper, "SECRET") || strings.Contains(upper, "TOKEN") || strings.Contains(upper, "DSN")) &&
				!strings.HasSuffix(upper, "_FILE") && e.Value != nil {
				t.Errorf("%s container %s: %s has a literal value; it must come from a Secret", o, c.Name, e.Name)
			}
		}
		for _, a := range c.Args {
			if strings.Contains(a, "password") && !strings.Contains(a, "password-file") {
				t.Errorf("%s container %s: argument %q carries a password", o, c.Name, a)
			}
		}
	}
}

// checkServicePod checks a long-running component: probes on /healthz
// (startup, liveness) and /readyz (readiness) on its http port, and a grace
// period above its shutdown timeout.
func checkServicePod(t *testing.T, o object, ps podSpec, configMaps map[string]object) {
	t.Helper()
	if len(ps.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", o, len(ps.Containers))
	}
	c := ps.Containers[0]
	hasHTTP := slices.ContainsFunc(c.Ports, func(p struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	}) bool {
		return p.Name == "http"
	})
	if !hasHTTP {
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

// containerEnv returns the literal environment of a container: its
// ConfigMaps (envFrom) overlaid with its env values, and the downward API
// values (fieldRef) as they are in the workload's first pod.
func containerEnv(t *testing.T, o object, c ctr, configMaps map[string]object) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		cm, ok := configMaps[ef.ConfigMapRef.Name]
		if !ok {
			t.Fatalf("%s: envFrom ConfigMap %s is not rendered", o, ef.ConfigMapRef.Name)
		}
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.Value != nil:
			env[e.Name] = *e.Value
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			switch path := e.ValueFrom.FieldRef.FieldPath; path {
			case "metadata.name":
				env[e.Name] = firstPodName(o)
			case "metadata.namespace":
				env[e.Name] = chartNamespace
			default:
				t.Fatalf("%s container %s: %s from fieldRef %s, which the tests do not know", o, c.Name, e.Name, path)
			}
		}
	}
	return env
}

// firstPodName is the name of a workload's first pod: <name>-0 for a
// StatefulSet, <name>-<hash>-<suffix> for a Deployment.
func firstPodName(o object) string {
	switch o.Kind {
	case "StatefulSet":
		return o.Metadata.Name + "-0"
	case "Pod":
		return o.Metadata.Name
	}
	return o.Metadata.Name + "-5d8f7c9b4-x2x7q"
}

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

// TestChartRejects checks that bad values fail the render with a message
// naming the problem: the schema rejects unknown keys and wrong types, the
// templates reject settings that cannot work together.
func TestChartRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"unknown top-level key", []string{"replicas=3"}, "additional properties 'replicas' not allowed"},
		{"unknown nested key", []string{"router.replicaz=3"}, "at '/router': additional properties 'replicaz' not allowed"},
		{"unknown key in a closer entry", []string{"canceller.closers.x.sqll.driver=postgres"}, "additional properties 'sqll' not allowed"},
		{"string for an integer", []string{"topics.partitions=six"}, "at '/topics/partitions': got string, want integer"},
		{"number for a duration", []string{"router.shutdownTimeout=20"}, "at '/router/shutdownTimeout': got number, want string"},
		{"not a duration", []string{"canceller.retryBackoff=soon"}, "/canceller/retryBackoff"},
		{"string for a boolean", []string{"recorder.enabled=yes"}, "at '/recorder/enabled': got string, want boolean"},
		{"unknown enum value", []string{"kafka.sasl.mechanism=gssapi"}, "/kafka/sasl/mechanism"},
		{"replication factor 0", []string{"topics.replicationFactor=0"}, "/topics/replicationFactor"},
		{"more routers than partitions", []string{"router.replicas=7"}, "router.replicas (7) is above topics.partitions (6)"},
		{"autoscaling beyond partitions", []string{"canceller.autoscaling.enabled=true", "canceller.autoscaling.maxReplicas=12"}, "canceller.autoscaling.maxReplicas (12) is above topics.partitions (6)"},
		{"sasl without its secret", []string{"kafka.sasl.mechanism=plain", "kafka.sasl.user=u"}, "kafka.sasl.existingSecret is empty"},
		{"client certificate without key", []string{"kafka.tls.existingSecret=s", "kafka.tls.certKey=tls.crt"}, "kafka.tls: certKey and keyKey go together"},
		{"reconcile without closers", []string{"reconcile.enabled=true"}, `reconcile.kind "order-timeout" is not a kind of canceller.closers`},
		{"reconcile of an http closer", []string{"reconcile.enabled=true", "canceller.closers.order-timeout.http.url=https://x"}, "has no sql closer"},
		{"reconcile without a deadline", []string{"reconcile.enabled=true", "canceller.closers.order-timeout.sql.driver=postgres"}, "sql.reconcile.deadline is not set"},
		{"allowed targets joined by hand", []string{`router.allowedTargets[0]=a.cancel\,b.cancel`}, "/router/allowedTargets/0"},
		{"timer bytes below 1 MiB", []string{"router.timerBytes=1000"}, "/router/timerBytes"},
		{"router memory below its byte limits", []string{"router.resources.limits.memory=128Mi"}, "router.resources.limits.memory 128Mi (GOMEMLIMIT 115MiB) is below what a router may hold"},
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

// TestKubeconformStrict checks that the validation the chart tests rely on
// rejects what it should: an unknown field, a wrong type, an unknown field
// of a custom resource, and a kind it has no schema for.
func TestKubeconformStrict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
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
	} {
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

// dockerInstruction is one instruction of the Dockerfile, continuation
// lines joined.
type dockerInstruction struct {
	line int
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// dockerStage is one FROM and the instructions under it.
type dockerStage struct {
	image string // with global ARG defaults substituted
	name  string
	instr []dockerInstruction
}

// parseDockerfile reads the Dockerfile into stages, with the defaults of
// the ARGs before the first FROM substituted into the FROM lines.
func parseDockerfile(t *testing.T) []dockerStage {
	t.Helper()
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	var instrs []dockerInstruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(line, "#") {
			continue // a comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = n
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		instrs = append(instrs, dockerInstruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Fatalf("%s: the last instruction ends with a line continuation", dockerfile)
	}

	globals := map[string]string{}
	var stages []dockerStage
	for _, in := range instrs {
		switch {
		case in.cmd == "ARG" && len(stages) == 0:
			name, def, _ := strings.Cut(in.args, "=")
			globals[name] = def
		case in.cmd == "FROM":
			fields := strings.Fields(in.args)
			st := dockerStage{image: os.Expand(fields[0], func(k string) string { return globals[k] })}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				st.name = fields[2]
			}
			stages = append(stages, st)
		case len(stages) == 0:
			t.Fatalf("%s:%d: %s before the first FROM", dockerfile, in.line, in.cmd)
		default:
			stages[len(stages)-1].instr = append(stages[len(stages)-1].instr, in)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("%s: %d stages, want a build stage and a runtime stage", dockerfile, len(stages))
	}
	return stages
}

// shellWords splits a shell command line into words, honouring quotes.
// Operators such as && are words of their own when separated by spaces.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c in %q", c, s)
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '\\' && i+1 < len(s):
			w.WriteByte(s[i+1])
			i++
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// goBuild is the go build command of a RUN instruction.
type goBuild struct {
	env  []string // NAME=value words before "go"
	args []string // after "go build"
	out  string   // the -o argument
}

// findGoBuild returns the go build command of a stage's RUN instructions.
func findGoBuild(t *testing.T, st dockerStage) (goBuild, bool) {
	t.Helper()
	var stageEnv []string
	for _, in := range st.instr {
		if in.cmd == "ENV" {
			for _, kv := range strings.Fields(in.args) {
				stageEnv = append(stageEnv, kv)
			}
			continue
		}
		if in.cmd != "RUN" {
			continue
		}
		words, err := shellWords(in.args)
		if err != nil {
			t.Fatalf("%s:%d: %v", dockerfile, in.line, err)
		}
		for len(words) > 0 && strings.HasPrefix(words[0], "--") {
			words = words[1:] // --mount=..., --network=...
		}
		for cmd := range splitWords(words, "&&") {
			i := slices.Index(cmd, "go")
			if i < 0 || i+1 >= len(cmd) || cmd[i+1] != "build" {
				continue
			}
			gb := goBuild{env: append(slices.Clone(stageEnv), cmd[:i]...), args: cmd[i+2:]}
			for _, e := range cmd[:i] {
				if !strings.Contains(e, "=") {
					t.Fatalf("%s:%d: %q before go build is not an environment assignment", dockerfile, in.line, e)
				}
			}
			for j, a := range gb.args {
				if a == "-o" && j+1 < len(gb.args) {
					gb.out = gb.args[j+1]
				}
			}
			return gb, true
		}
	}
	return goBuild{}, false
}

// splitWords yields the runs of words between separators.
func splitWords(words []string, sep string) func(func([]string) bool) {
	return func(yield func([]string) bool) {
		start := 0
		for i, w := range words {
			if w == sep {
				if !yield(words[start:i]) {
					return
				}
				start = i + 1
			}
		}
		yield(words[start:])
	}
}

var goVersion = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`)

// versionAtLeast reports whether Go version have (1.26.8) is at least want
// (1.26.0).
func versionAtLeast(have, want string) bool {
	h, w := goVersion.FindStringSubmatch(have), goVersion.FindStringSubmatch(want)
	if h == nil || w == nil {
		return false
	}
	for i := 1; i <= 3; i++ {
		a, _ := strconv.Atoi(h[i])
		b, _ := strconv.Atoi(w[i])
		if a != b {
			return a > b
		}
	}
	return true
}

var imageDigest = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// imageTag returns the tag of an image reference ("" for none).
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndex(ref, "/")
	if i := strings.LastIndex(ref, ":"); i > slash {
		return ref[i+1:]
	}
	return ""
}

// imageBuild is the one build of the image's binaries that the tests
// share while any of them uses it: a cold build compiles every dependency
// anew (-trimpath), which takes minutes on two cores.
var imageBuild struct {
	sync.Mutex
	users int
	gb    goBuild
	dir   string
}

// imageBinaries returns the Dockerfile's go build command and the directory
// that stands for its -o path, building on first use.
func imageBinaries(t *testing.T) (goBuild, string) {
	t.Helper()
	imageBuild.Lock()
	defer imageBuild.Unlock()
	if imageBuild.users == 0 {
		dir, err := os.MkdirTemp("", "hourglass-image-")
		if err != nil {
			t.Fatal(err)
		}
		built := false
		defer func() {
			if !built { // t.Fatal in the build
				os.RemoveAll(dir)
			}
		}()
		imageBuild.dir = dir
		imageBuild.gb = buildImageBinaries(t, parseDockerfile(t), dir)
		built = true
	}
	imageBuild.users++
	t.Cleanup(func() {
		imageBuild.Lock()
		defer imageBuild.Unlock()
		if imageBuild.users--; imageBuild.users == 0 {
			os.RemoveAll(imageBuild.dir)
		}
	})
	return imageBuild.gb, imageBuild.dir
}

// buildImageBinaries runs the Dockerfile's go build command, with its
// environment and flags, with outDir standing for its -o path.
func buildImageBinaries(t *testing.T, stages []dockerStage, outDir string) goBuild {
	t.Helper()
	var gb goBuild
	var found bool
	for _, st := range stages[:len(stages)-1] {
		if gb, found = findGoBuild(t, st); found {
			break
		}
	}
	if !found {
		t.Fatalf("%s: no RUN with go build in a build stage", dockerfile)
	}
	if gb.out == "" {
		t.Fatalf("%s: go build without -o", dockerfile)
	}
	args := slices.Clone(gb.args)
	for i, a := range args {
		if a == "-o" {
			if strings.HasSuffix(gb.out, "/") {
				args[i+1] = outDir + string(filepath.Separator)
			} else {
				args[i+1] = filepath.Join(outDir, filepath.Base(gb.out))
			}
		}
	}
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"build"}, args...)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), gb.env...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build fails: %s go build %s: %v\n%s", strings.Join(gb.env, " "), strings.Join(gb.args, " "), err, out)
	}
	t.Logf("%s go build %s: %v", strings.Join(gb.env, " "), strings.Join(gb.args, " "), time.Since(start).Round(time.Millisecond))
	return gb
}

// TestDockerfile checks the image recipe without a container engine: pinned
// bases, a builder new enough for go.mod, a non-root user, and the build
// itself, run with the Dockerfile's own command and flags; the binaries it
// copies into the image must exist, be static, stripped and free of local
// paths, and run.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	stages := parseDockerfile(t)
	names := map[string]bool{}
	for _, st := range stages {
		if names[st.image] {
			continue // FROM an earlier stage
		}
		if st.image == "" || strings.Contains(st.image, "$") {
			t.Errorf("FROM %q: not resolved from the ARG defaults", st.image)
		}
		tag := imageTag(st.image)
		if (tag == "" || tag == "latest") && !imageDigest.MatchString(st.image) {
			t.Errorf("FROM %s: not pinned (give a version tag or a digest)", st.image)
		}
		if st.name != "" {
			names[st.name] = true
		}
	}
	runtime := stages[len(stages)-1]
	if !imageDigest.MatchString(runtime.image) {
		t.Errorf("runtime base %s: not pinned by digest", runtime.image)
	}

	// The builder must be able to build the module.
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(mod)
	if want == nil {
		t.Fatal("go.mod: no go directive")
	}
	builder := stages[0].image
	if !strings.HasPrefix(builder, "golang:") || !versionAtLeast(imageTag(builder), string(want[1])) {
		t.Errorf("builder %s: want golang:<version> of at least go.mod's go %s", builder, want[1])
	}

	var user, entrypoint string
	copies := map[string]string{} // image path -> source in the build stage
	for _, in := range runtime.instr {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			var ep []string
			if err := json.Unmarshal([]byte(in.args), &ep); err != nil || len(ep) == 0 {
				t.Errorf("ENTRYPOINT %s: want the exec form, a JSON list", in.args)
				continue
			}
			entrypoint = ep[0]
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) == 3 && strings.HasPrefix(f[0], "--from=") {
				copies[f[2]] = f[1]
			}
		case "RUN":
			t.Errorf("%s:%d: RUN in the runtime stage; the distroless base has no shell", dockerfile, in.line)
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); (err != nil && uid != "nonroot") || (err == nil && n == 0) {
		t.Errorf("USER %q: want a non-root user (65532, distroless nonroot)", user)
	}
	if entrypoint != "/hourglass" {
		t.Errorf("ENTRYPOINT %q, want /hourglass", entrypoint)
	}
	if _, ok := copies["/hourglass"]; !ok {
		t.Errorf("nothing is copied to /hourglass: %v", copies)
	}

	gb, outDir := imageBinaries(t)
	if !slices.Contains(gb.env, "CGO_ENABLED=0") {
		t.Errorf("go build environment %v: want CGO_ENABLED=0 (the runtime base has no libc)", gb.env)
	}
	for _, flag := range []string{"-trimpath", "-ldflags"} {
		if !slices.Contains(gb.args, flag) {
			t.Errorf("go build %v: no %s", gb.args, flag)
		}
	}
	repoRoot, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for dst, src := range copies {
		rel, ok := strings.CutPrefix(src, strings.TrimSuffix(gb.out, "/"))
		if !ok {
			t.Errorf("COPY %s %s: not under go build -o %s", src, dst, gb.out)
			continue
		}
		bin := filepath.Join(outDir, rel)
		checkStaticBinary(t, bin, repoRoot)
	}
	out, err := exec.CommandContext(t.Context(), filepath.Join(outDir, "hourglass"), "--help").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("Usage: hourglass <command>")) {
		t.Errorf("hourglass --help: %v\n%s", err, out)
	}
}

// checkStaticBinary checks that bin is a static ELF executable without a
// symbol table and without the build machine's paths.
func checkStaticBinary(t *testing.T, bin, repoRoot string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Errorf("%s: %v", filepath.Base(bin), err)
		return
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: dynamically linked; the runtime base has no libc", filepath.Base(bin))
			break
		}
	}
	if f.Section(".symtab") != nil {
		t.Errorf("%s: has a symbol table; want -ldflags \"-s -w\"", filepath.Base(bin))
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(repoRoot)) {
		t.Errorf("%s: contains the path %s; want -trimpath", filepath.Base(bin), repoRoot)
	}
}

// dockerignore is the .dockerignore rules, in order.
type dockerignoreRule struct {
	pattern *regexp.Regexp
	exclude bool
}

// readDockerignore compiles .dockerignore patterns: ** matches any number
// of directories, * and ? do not cross a /, a leading ! re-includes.
func readDockerignore(t *testing.T) []dockerignoreRule {
	t.Helper()
	b, err := os.ReadFile(dockerignore)
	if err != nil {
		t.Fatal(err)
	}
	var rules []dockerignoreRule
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		exclude := true
		if p, ok := strings.CutPrefix(line, "!"); ok {
			line, exclude = p, false
		}
		line = strings.Trim(filepath.ToSlash(filepath.Clean(line)), "/")
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(line); i++ {
			switch {
			case strings.HasPrefix(line[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(line[i:], "**"):
				re.WriteString(".*")
				i++
			case line[i] == '*':
				re.WriteString("[^/]*")
			case line[i] == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(line[i : i+1]))
			}
		}
		re.WriteString("$")
		rules = append(rules, dockerignoreRule{regexp.MustCompile(re.String()), exclude})
	}
	return rules
}

// ignored reports whether the build context leaves out path (slash
// separated, relative to the context): the last rule that matches the path
// or one of its parent directories decides.
func ignored(rules []dockerignoreRule, path string) bool {
	out := false
	for _, r := range rules {
		p := path
		for {
			if r.pattern.MatchString(p) {
				out = r.exclude
				break
			}
			i := strings.LastIndex(p, "/")
			if i < 0 {
				break
			}
			p = p[:i]
		}
	}
	return out
}

// TestDockerignore checks that the build context keeps every file the image
// build reads (the Go files and embedded files of the binaries' packages,
// go.mod, go.sum) and leaves out the rest of the repository.
func TestDockerignore(t *testing.T) {
	t.Parallel()
	rules := readDockerignore(t)
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps",
		"-f", `{{if .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}}|{{.}}{{end}}{{range .EmbedFiles}}|{{.}}{{end}}{{end}}{{end}}`,
		"./cmd/hourglass", "./cmd/router", "./cmd/canceller")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	needed := []string{"go.mod", "go.sum"}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		parts := strings.Split(line, "|")
		dir, err := filepath.Rel(root, parts[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range parts[1:] {
			needed = append(needed, filepath.ToSlash(filepath.Join(dir, f)))
		}
	}
	if len(needed) < 50 {
		t.Fatalf("go list found only %d files", len(needed))
	}
	for _, f := range needed {
		if ignored(rules, f) {
			t.Errorf("%s excludes %s, which the image build needs", dockerignore, f)
		}
	}
	for _, f := range []string{".git/config", ".tools/bin/helm", "bin/hourglass", "deploy/deploy_test.go", "internal/app/app_test.go", "README.md"} {
		if !ignored(rules, f) {
			t.Errorf("%s sends %s to the build context; the build does not need it", dockerignore, f)
		}
	}
}

// commandHelp is what `hourglass <command> --help` lists.
type commandHelp struct {
	flags     map[string]bool   // flag names without --
	envToFlag map[string]string // HOURGLASS_* -> flag name
}

var flagLine = regexp.MustCompile(`^\s+--([a-z0-9-]+)`)
var envNote = regexp.MustCompile(`\(env (HOURGLASS_[A-Z0-9_]+)`)

func readHelp(t *testing.T, bin, command string) commandHelp {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, command, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("hourglass %s --help: %v\n%s", command, err, out)
	}
	h := commandHelp{flags: map[string]bool{}, envToFlag: map[string]string{}}
	for line := range strings.SplitSeq(string(out), "\n") {
		m := flagLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		h.flags[m[1]] = true
		if e := envNote.FindStringSubmatch(line); e != nil {
			h.envToFlag[e[1]] = m[1]
		}
	}
	if len(h.flags) < 3 {
		t.Fatalf("hourglass %s --help: found only %d flags in\n%s", command, len(h.flags), out)
	}
	return h
}

// serviceCommands are the commands that take --check-config.
var serviceCommands = []string{"router", "canceller", "recorder"}

// TestChartConfigAccepted runs the image's own binary on the configuration
// each scenario renders: every HOURGLASS_* variable and every flag a pod
// sets must be one the command has, and each service must accept its
// configuration with --check-config, taking every variable from the
// environment. Mounted Secrets and ConfigMaps are laid out under a
// temporary root with test certificates and passwords, and the paths in the
// configuration point there.
func TestChartConfigAccepted(t *testing.T) {
	t.Parallel()
	_, outDir := imageBinaries(t)
	bin := filepath.Join(outDir, "hourglass")
	certPEM, keyPEM := testCertificate(t)
	helps := map[string]commandHelp{}

	for _, values := range chartScenarios {
		t.Run(scenarioName(values), func(t *testing.T) {
			objs := parseManifests(t, scenarioRender(t, values))
			configMaps := map[string]object{}
			for _, o := range objs {
				if o.Kind == "ConfigMap" {
					configMaps[o.Metadata.Name] = o
				}
			}
			checked := 0
			for _, o := range objs {
				ps, ok := podSpecOf(t, o)
				if !ok {
					continue
				}
				for _, c := range ps.Containers {
					if len(c.Args) == 0 {
						t.Errorf("%s container %s: no args; the image's entrypoint needs a command", o, c.Name)
						continue
					}
					command := c.Args[0]
					h, ok := helps[command]
					if !ok {
						h = readHelp(t, bin, command)
						helps[command] = h
					}
					where := fmt.Sprintf("%s container %s (hourglass %s)", o, c.Name, command)
					for _, a := range c.Args[1:] {
						name, isFlag := strings.CutPrefix(a, "--")
						name, _, _ = strings.Cut(name, "=")
						if !isFlag || h.flags[name] {
							continue
						}
						t.Errorf("%s: --%s is not a flag of hourglass %s", where, name, command)
					}
					env := containerEnv(t, o, c, configMaps)
					for k := range env {
						if strings.HasPrefix(k, "HOURGLASS_") && h.envToFlag[k] == "" {
							t.Errorf("%s: %s is no flag's variable", where, k)
						}
					}
					if slices.Contains(serviceCommands, command) && len(c.Args) == 1 {
						checkConfig(t, where, bin, command, h, o, ps, c, configMaps, certPEM, keyPEM)
						checked++
					}
				}
			}
			if checked < 2 {
				t.Errorf("checked only %d service configurations", checked)
			}
		})
	}
}

// checkConfig runs `hourglass <command> --check-config` with a container's
// environment and mounts, and checks that it is valid and that every
// variable set took effect.
func checkConfig(t *testing.T, where, bin, command string, h commandHelp, o object, ps podSpec, c ctr, configMaps map[string]object, certPEM, keyPEM []byte) {
	t.Helper()
	root := t.TempDir()
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	// One pass, longest mount first, so that a path already moved under
	// root (itself under /tmp) is not moved again by the /tmp mount.
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, m := range mounts {
		pairs = append(pairs, m+"/", filepath.Join(root, m)+"/")
	}
	remap := strings.NewReplacer(pairs...).Replace
	fake := func(path string) []byte {
		switch {
		case strings.HasSuffix(path, ".key"):
			return keyPEM
		case strings.HasSuffix(path, ".crt"), strings.HasSuffix(path, ".pem"):
			return certPEM
		case filepath.Base(path) == "dsn":
			return []byte("postgres://hourglass:test@127.0.0.1:5432/test\n")
		}
		// Long enough for every secret, the outcome signing key (16 bytes
		// at least) too.
		return []byte("test-secret-0123456789abcdef\n")
	}

	env := containerEnv(t, o, c, configMaps)
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			env[e.Name] = "postgres://hourglass:test@127.0.0.1:5432/test"
		}
	}
	var pathRefs []string // every mounted path the configuration names
	for k, v := range env {
		env[k] = remap(v)
		pathRefs = append(pathRefs, v)
	}
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(ps.Volumes, func(v podVol) bool { return v.Name == m.Name })
		if i < 0 {
			t.Fatalf("%s: volume %s is mounted but not defined", where, m.Name)
		}
		dir := filepath.Join(root, m.MountPath)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		v := ps.Volumes[i]
		switch {
		case v.ConfigMap != nil:
			cm, ok := configMaps[v.ConfigMap.Name]
			if !ok {
				t.Fatalf("%s: ConfigMap %s is mounted but not rendered", where, v.ConfigMap.Name)
			}
			for name, data := range cm.Data {
				pathRefs = append(pathRefs, data)
				writeFile(t, filepath.Join(dir, name), []byte(remap(data)))
			}
		case v.Secret != nil:
			for _, it := range v.Secret.Items {
				writeFile(t, filepath.Join(dir, it.Path), fake(it.Path))
			}
		}
	}
	// Files of Secrets mounted whole: the ones the configuration names.
	for _, m := range mounts {
		for _, ref := range pathRefs {
			for _, p := range regexp.MustCompile(regexp.QuoteMeta(m)+`/[A-Za-z0-9._/-]+`).FindAllString(ref, -1) {
				if _, err := os.Stat(filepath.Join(root, p)); errors.Is(err, os.ErrNotExist) {
					writeFile(t, filepath.Join(root, p), fake(p))
				}
			}
		}
	}

	cmd := exec.CommandContext(t.Context(), bin, command, "--check-config")
	cmd.Env = []string{"HOME=" + root, "TMPDIR=" + root}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s: --check-config: %v\n%s", where, err, out)
		return
	}
	sources := map[string]string{}
	for line := range strings.SplitSeq(string(out), "\n") {
		if i := strings.LastIndex(line, " ("); strings.HasPrefix(line, "--") && i > 0 && strings.HasSuffix(line, ")") {
			name, _, _ := strings.Cut(line[2:], "=")
			sources[name] = line[i+2 : len(line)-1]
		}
	}
	for k, v := range env {
		if flag := h.envToFlag[k]; flag != "" && v != "" && sources[flag] != "env" {
			t.Errorf("%s: %s=%q did not set --%s (source %q)", where, k, v, flag, sources[flag])
		}
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// testCertificate returns a self-signed certificate and its key, PEM.
func testCertificate(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hourglass test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}
