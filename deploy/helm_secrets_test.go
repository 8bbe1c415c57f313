package deploy

// Tests of how secrets reach the pods: never as literal values, the
// refusal of secrets written into the closers file, the outcome signing key,
// and extraEnv that would override what the chart sets.

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

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

// TestChartInlineSecrets checks that a secret written inline ({value:
// ...}) anywhere under canceller.closers fails the render with its key
// path, without printing it, while {env: ...}, {file: ...} and the maps
// with a "value" key that are no secrets render.
func TestChartInlineSecrets(t *testing.T) {
	t.Parallel()
	const secret = "do-not-print-me"
	t.Run("testdata", func(t *testing.T) {
		t.Parallel()
		_, err := helm(t, "template", chartRelease, chartDir, "--kube-version", chartKubeVersion, "--values", "testdata/inline-secret-values.yaml")
		if err == nil {
			t.Fatal("testdata/inline-secret-values.yaml rendered")
		}
		want := "canceller.closers.order-timeout.sql.dsn: inline {value: ...} secrets are refused; use {env: ...} with canceller.secretEnv or {file: ...} with a mounted Secret"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error prints the secret:\n%v", err)
		}
	})

	for _, tc := range []struct {
		name    string
		closers string // YAML under canceller.closers
		refused string // the key path in the error; "" to render
	}{
		{"sql dsn", "ot: {sql: {driver: postgres, dsn: {value: " + secret + "}}}", "canceller.closers.ot.sql.dsn"},
		{"http bearer token", "ot: {http: {url: 'https://x/{id}', bearer_token: {value: " + secret + "}}}", "canceller.closers.ot.http.bearer_token"},
		{"http basic auth", "ot: {http: {url: 'https://x/{id}', basic_auth: {username: u, password: {value: " + secret + "}}}}", "canceller.closers.ot.http.basic_auth.password"},
		{"a value beside a reference", "ot: {sql: {driver: postgres, dsn: {env: DSN, value: " + secret + "}}}", "canceller.closers.ot.sql.dsn"},
		{"any nested map", "ot: {sql: {driver: postgres, dsn: {env: DSN}, tls: {future_secret: {value: " + secret + "}}}}", "canceller.closers.ot.sql.tls.future_secret"},
		{"in a list", "ot: {http: {url: 'https://x/{id}', future_list: [{value: " + secret + "}]}}", "canceller.closers.ot.http.future_list[0]"},
		{"second kind", "a: {log: {}}\nb: {sql: {driver: postgres, dsn: {value: " + secret + "}}}", "canceller.closers.b.sql.dsn"},
		{"env and file", "ot: {sql: {driver: postgres, dsn: {env: DSN}}}\nhook: {http: {url: 'https://x/{id}', bearer_token: {file: /s/token}}}", ""},
		{"kafka closer value", "ot: {kafka: {topic: t, value: payload}}", ""},
		{"http header named value", "ot: {http: {url: 'https://x/{id}', headers: {value: x}}}", ""},
		{"a kind named value", "value: {log: {}}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkClosersRender(t, tc.closers, tc.refused, secret)
		})
	}
}

// checkClosersRender renders closersYAML under canceller.closers. With
// refused "", it must render, and the closers file carry the closers as
// they were; else the render must fail naming refused, without printing
// secret.
func checkClosersRender(t *testing.T, closersYAML, refused, secret string) {
	t.Helper()
	var closers any
	if err := yaml.Unmarshal([]byte(closersYAML), &closers); err != nil {
		t.Fatal(err)
	}
	values, err := yaml.Marshal(map[string]any{"canceller": map[string]any{"closers": closers}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := renderValues(t, string(values))
	if refused == "" {
		if err != nil {
			t.Fatal(err)
		}
		// The closers file carries the references as they were.
		for _, o := range parseManifests(t, out) {
			if o.Kind == "ConfigMap" && component(o) == "closers" {
				var file struct {
					Closers any `yaml:"closers"`
				}
				if err := yaml.Unmarshal([]byte(o.Data["closers.yaml"]), &file); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(file.Closers, closers) {
					t.Errorf("closers.yaml holds %v, want %v", file.Closers, closers)
				}
				return
			}
		}
		t.Error("no closers ConfigMap rendered")
		return
	}
	if err == nil {
		t.Fatalf("rendered; want %s refused", refused)
	}
	if !strings.Contains(err.Error(), refused+": inline {value: ...} secrets are refused") {
		t.Errorf("error does not name %s:\n%v", refused, err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the error prints the secret:\n%v", err)
	}
}

// TestChartOutcomesKey checks the outcome signing key: absent by default;
// with outcomesKey.existingSecret, the canceller and the router (which
// sign) and the recorder (which verifies) read the same key from the same
// Secret, mounted read-only, and nothing else gets it.
func TestChartOutcomesKey(t *testing.T) {
	t.Parallel()
	if got := outcomesKeyMounts(t, mustRender(t, "recorder: {enabled: true}")); len(got) > 0 {
		t.Errorf("defaults: the signing key reaches %v", got)
	}
	got := outcomesKeyMounts(t, mustRender(t, `
recorder: {enabled: true}
reconcile: {enabled: true}
canceller:
  closers:
    order-timeout: {sql: {driver: postgres, dsn: {env: DSN}, reconcile: {deadline: 30m}}}
outcomesKey: {existingSecret: hmac-secret, key: hmac}
`))
	want := outcomesKey{file: "/etc/hourglass/outcomes-key/key", secret: "hmac-secret", key: "hmac"}
	if len(got) != 3 || got["StatefulSet/canceller"] != want || got["StatefulSet/router"] != want || got["Deployment/recorder"] != want {
		t.Errorf("signing key in %v, want %+v in the router and canceller StatefulSets and the recorder Deployment only", got, want)
	}

	_, err := renderChart(t, "", "outcomesKey.existingSecret=s", "outcomesKey.key=")
	if err == nil || !strings.Contains(err.Error(), "outcomesKey.key is empty") {
		t.Errorf("outcomesKey without a key: %v", err)
	}
}

// outcomesKeyVolume is the volume of the outcome signing key.
const outcomesKeyVolume = "outcomes-key"

// outcomesKey is where a container finds the outcome signing key.
type outcomesKey struct {
	file, secret, key string // HOURGLASS_OUTCOMES_KEY_FILE, the Secret and its key
}

// outcomesKeyMounts returns the containers that get the outcome signing
// key ("Kind/container"), and checks that it is mounted read-only and that
// HOURGLASS_OUTCOMES_KEY_FILE is in the mount.
func outcomesKeyMounts(t *testing.T, objs []object) map[string]outcomesKey {
	t.Helper()
	out := map[string]outcomesKey{}
	for _, o := range objs {
		ps, ok := podSpecOf(t, o)
		if !ok {
			continue
		}
		for _, c := range ps.Containers {
			if f := outcomesKeyOf(t, o, ps, c); f != (outcomesKey{}) {
				out[o.Kind+"/"+c.Name] = f
			}
		}
	}
	return out
}

// outcomesKeyOf returns where a container finds the outcome signing key,
// zero for nowhere.
func outcomesKeyOf(t *testing.T, o object, ps podSpec, c ctr) outcomesKey {
	t.Helper()
	var f outcomesKey
	for _, e := range c.Env {
		if e.Name == "HOURGLASS_OUTCOMES_KEY_FILE" && e.Value != nil {
			f.file = *e.Value
		}
	}
	for _, m := range c.VolumeMounts {
		if m.Name != outcomesKeyVolume {
			continue
		}
		if !m.ReadOnly {
			t.Errorf("%s: %s is mounted writable", o, outcomesKeyVolume)
		}
		if f.file != "" && !strings.HasPrefix(f.file, m.MountPath+"/") {
			t.Errorf("%s: HOURGLASS_OUTCOMES_KEY_FILE %s is not in the mount %s", o, f.file, m.MountPath)
		}
		for _, v := range ps.Volumes {
			if v.Name == outcomesKeyVolume && v.Secret != nil && len(v.Secret.Items) == 1 {
				f.secret, f.key = v.Secret.SecretName, v.Secret.Items[0].Key
			}
		}
	}
	return f
}

// TestChartExtraEnvRefused checks that extraEnv cannot override what the
// chart sets: above all the per-pod instance id.
func TestChartExtraEnvRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set  string
		want string
	}{
		{"router.extraEnv.HOURGLASS_INSTANCE_ID=r", "router.extraEnv.HOURGLASS_INSTANCE_ID: the chart gives each pod its own"},
		{"canceller.extraEnv.HOURGLASS_INSTANCE_ID=c", "canceller.extraEnv.HOURGLASS_INSTANCE_ID: the chart gives each pod its own"},
		{"canceller.extraEnv.HOURGLASS_OUTCOMES_KEY_FILE=/k", "canceller.extraEnv.HOURGLASS_OUTCOMES_KEY_FILE: set outcomesKey instead"},
		{"router.extraEnv.HOURGLASS_OUTCOMES_KEY_FILE=/k", "router.extraEnv.HOURGLASS_OUTCOMES_KEY_FILE: set outcomesKey instead"},
		{"router.extraEnv.HOURGLASS_CANCELLATIONS_DIR=/tmp/c", "router.extraEnv.HOURGLASS_CANCELLATIONS_DIR: the chart sets this variable from its own values"},
		{"router.extraEnv.HOURGLASS_SESSION_TIMEOUT=45s", "router.extraEnv.HOURGLASS_SESSION_TIMEOUT: the chart sets this variable from its own values"},
		{"canceller.extraEnv.HOURGLASS_HTTP_ADDR=127.0.0.1:8081", "canceller.extraEnv.HOURGLASS_HTTP_ADDR: the chart sets this variable"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			t.Parallel()
			_, err := renderChart(t, "", tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("--set %s: want an error containing %q, got %v", tc.set, tc.want, err)
			}
		})
	}
	if _, err := renderChart(t, "", "router.extraEnv.HOURGLASS_MAX_VALUE_BYTES=100000"); err != nil {
		t.Errorf("a variable the chart does not set: %v", err)
	}
}
