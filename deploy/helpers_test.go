package deploy

// The helpers the tests share: the chart's paths and scenarios, helm and
// the rendered manifests, the parts of pod specs and selectors the tests
// read, the image's binaries built with the Dockerfile's own command, and
// the rules file and dashboard.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
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
	dockerfilePath   = "../Dockerfile"
	dockerignorePath = "../.dockerignore"
)

// chartScenarios are the values the chart is linted, rendered and validated
// with: its defaults ("") and every file in ci/.
var chartScenarios = []string{"", "ci/minimal-values.yaml", "ci/sasl-tls-values.yaml", "ci/oauth-values.yaml", "ci/msk-iam-values.yaml", "ci/closers-values.yaml", "ci/all-values.yaml", "ci/extras-values.yaml", "ci/persistence-values.yaml"}

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
		Env             []envVar  `yaml:"env"`
		Ports           []ctrPort `yaml:"ports"`
		LivenessProbe   *probe    `yaml:"livenessProbe"`
		ReadinessProbe  *probe    `yaml:"readinessProbe"`
		StartupProbe    *probe    `yaml:"startupProbe"`
		SecurityContext *secCtx   `yaml:"securityContext"`
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
	ctrPort struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
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
			ResourceFieldRef *struct {
				ContainerName string `yaml:"containerName"`
				Resource      string `yaml:"resource"`
				Divisor       string `yaml:"divisor"`
			} `yaml:"resourceFieldRef"`
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
		Projected *struct {
			Sources []struct {
				ServiceAccountToken *struct {
					Audience          string `yaml:"audience"`
					ExpirationSeconds int    `yaml:"expirationSeconds"`
					Path              string `yaml:"path"`
				} `yaml:"serviceAccountToken"`
				Secret *struct {
					Name  string `yaml:"name"`
					Items []struct {
						Key  string `yaml:"key"`
						Path string `yaml:"path"`
					} `yaml:"items"`
				} `yaml:"secret"`
			} `yaml:"sources"`
		} `yaml:"projected"`
		EmptyDir *struct {
			SizeLimit any `yaml:"sizeLimit"`
		} `yaml:"emptyDir"`
	}
)

// hasPort reports whether a container has a port of that name.
func hasPort(c ctr, name string) bool {
	return slices.ContainsFunc(c.Ports, func(p ctrPort) bool { return p.Name == name })
}

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
var renders sync.Map

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

// configMapsOf returns the ConfigMaps among objs by name.
func configMapsOf(objs []object) map[string]object {
	configMaps := map[string]object{}
	for _, o := range objs {
		if o.Kind == "ConfigMap" {
			configMaps[o.Metadata.Name] = o
		}
	}
	return configMaps
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
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil:
			ref := e.ValueFrom.ResourceFieldRef
			if ref.ContainerName != c.Name || ref.Resource != "requests.cpu" || ref.Divisor != "1" {
				t.Fatalf("%s container %s: %s from resourceFieldRef %+v, which the tests do not know", o, c.Name, e.Name, *ref)
			}
			// Kubernetes rounds a CPU quantity up to whole divisors.
			env[e.Name] = strconv.Itoa(int(math.Ceil(cpuCores(t, c.Resources.Requests["cpu"]))))
		}
	}
	return env
}

// cpuCores parses a Kubernetes CPU quantity ("100m", "2", "1.5").
func cpuCores(t *testing.T, q any) float64 {
	t.Helper()
	s := fmt.Sprint(q)
	div := 1.0
	if m, ok := strings.CutSuffix(s, "m"); ok {
		s, div = m, 1000
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("CPU quantity %q: not understood by the test", fmt.Sprint(q))
	}
	return n / div
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

// parseDockerfile reads the Dockerfile into stages, with the defaults of
// the ARGs before the first FROM substituted into the FROM lines.
func parseDockerfile(t *testing.T) *recipe {
	t.Helper()
	b, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parseRecipe(b)
	if err != nil {
		t.Fatalf("%s: %v", dockerfilePath, err)
	}
	if len(f.stages) < 2 {
		t.Fatalf("%s: %d stages, want a build stage and a runtime stage", dockerfilePath, len(f.stages))
	}
	return f
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
		imageBuild.users--
		if imageBuild.users == 0 {
			os.RemoveAll(imageBuild.dir)
		}
	})
	return imageBuild.gb, imageBuild.dir
}

// buildImageBinaries runs the Dockerfile's go build command, with its
// environment and flags, with outDir standing for its -o path.
func buildImageBinaries(t *testing.T, f *recipe, outDir string) goBuild {
	t.Helper()
	var gb goBuild
	var found bool
	for _, st := range f.stages[:len(f.stages)-1] {
		var err error
		if gb, found, err = f.goBuild(st); err != nil {
			t.Fatalf("%s: %v", dockerfilePath, err)
		}
		if found {
			break
		}
	}
	if !found {
		t.Fatalf("%s: no RUN with go build in a build stage", dockerfilePath)
	}
	if gb.Out == "" {
		t.Fatalf("%s: go build without -o", dockerfilePath)
	}
	args := slices.Clone(gb.Args)
	for i, a := range args {
		if a == "-o" {
			if strings.HasSuffix(gb.Out, "/") {
				args[i+1] = outDir + string(filepath.Separator)
			} else {
				args[i+1] = filepath.Join(outDir, filepath.Base(gb.Out))
			}
		}
	}
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"build"}, args...)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), gb.Env...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build fails: %s go build %s: %v\n%s", strings.Join(gb.Env, " "), strings.Join(gb.Args, " "), err, out)
	}
	t.Logf("%s go build %s: %v", strings.Join(gb.Env, " "), strings.Join(gb.Args, " "), time.Since(start).Round(time.Millisecond))
	return gb
}

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

const (
	rulesFile     = "prometheus/hourglass-rules.yaml"
	rulesTestFile = "prometheus/hourglass-rules.test.yaml"
	rulesReadme   = "prometheus/README.md"
	dashboardFile = "grafana/hourglass.json"
	metricsDoc    = "../docs/metrics.md"
)

// ruleFile is the part of a Prometheus rules file the tests read.
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var rf ruleFile
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if len(rf.Groups) == 0 {
		t.Fatalf("%s: no rule groups", rulesFile)
	}
	return rf
}

// dashboard is the part of a Grafana dashboard the tests read. Panels of
// schemaVersion 39 are flat, rows included; a collapsed row holds its
// panels in its own panels field.
type dashboard struct {
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource json.RawMessage          `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("%s: not valid JSON", dashboardFile)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels returns the dashboard's panels, those inside collapsed rows too.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}
