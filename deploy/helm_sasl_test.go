package deploy

// Tests of the chart's SASL mechanisms beyond PLAIN and SCRAM: OAUTHBEARER
// with a projected service account token or a Secret, and AWS_MSK_IAM with
// the credentials of a Secret (ci/oauth-values.yaml, ci/msk-iam-values.yaml).

import (
	"slices"
	"testing"
)

// kafkaClient is a container that talks to Kafka, with its pod and the
// environment the chart gives it (its ConfigMap's and its own).
type kafkaClient struct {
	obj object
	ps  podSpec
	c   ctr
	env map[string]envVar
}

// kafkaClients returns the containers of objs that get HOURGLASS_BROKERS.
func kafkaClients(t *testing.T, objs []object) []kafkaClient {
	t.Helper()
	configMaps := make(map[string]map[string]string)
	for _, o := range objs {
		if o.Kind == "ConfigMap" {
			configMaps[o.Metadata.Name] = o.Data
		}
	}
	var out []kafkaClient
	for _, o := range objs {
		ps, ok := podSpecOf(t, o)
		if !ok {
			continue
		}
		for _, c := range ps.Containers {
			env := make(map[string]envVar)
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil {
					for k, v := range configMaps[ef.ConfigMapRef.Name] {
						env[k] = envVar{Name: k, Value: &v}
					}
				}
			}
			for _, e := range c.Env {
				env[e.Name] = e
			}
			if _, ok := env["HOURGLASS_BROKERS"]; ok {
				out = append(out, kafkaClient{o, ps, c, env})
			}
		}
	}
	return out
}

// clientNames returns the objects of clients, as "Kind/name".
func clientNames(clients []kafkaClient) []string {
	var names []string
	for _, k := range clients {
		names = append(names, k.obj.String())
	}
	return names
}

// TestChartOAuthBearer: every container that talks to Kafka reads its
// token from the projected service account token, mounted where
// HOURGLASS_SASL_OAUTH_TOKEN_FILE says, and gets no password.
func TestChartOAuthBearer(t *testing.T) {
	t.Parallel()
	clients := kafkaClients(t, parseManifests(t, scenarioRender(t, "ci/oauth-values.yaml")))
	for _, want := range []string{"StatefulSet/hg-hourglass-router", "StatefulSet/hg-hourglass-canceller", "Job/hg-hourglass-topics", "Job/hg-hourglass-migrate"} {
		if !slices.Contains(clientNames(clients), want) {
			t.Errorf("no Kafka client in %s; clients: %v", want, clientNames(clients))
		}
	}
	for _, k := range clients {
		if v := k.env["HOURGLASS_SASL_OAUTH_TOKEN_FILE"].Value; v == nil || *v != "/etc/hourglass/kafka-sasl/token" {
			t.Errorf("%s %s: HOURGLASS_SASL_OAUTH_TOKEN_FILE %v", k.obj, k.c.Name, v)
		}
		if v := k.env["HOURGLASS_SASL_MECHANISM"].Value; v == nil || *v != "OAUTHBEARER" {
			t.Errorf("%s %s: HOURGLASS_SASL_MECHANISM %v", k.obj, k.c.Name, v)
		}
		for _, unwanted := range []string{"HOURGLASS_SASL_USER", "HOURGLASS_SASL_PASSWORD_FILE", "AWS_ACCESS_KEY_ID"} {
			if _, ok := k.env[unwanted]; ok {
				t.Errorf("%s %s: %s set with OAUTHBEARER", k.obj, k.c.Name, unwanted)
			}
		}
		if !slices.ContainsFunc(k.c.VolumeMounts, func(m struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		}) bool {
			return m.Name == "kafka-sasl" && m.MountPath == "/etc/hourglass/kafka-sasl" && m.ReadOnly
		}) {
			t.Errorf("%s %s: kafka-sasl not mounted read-only at /etc/hourglass/kafka-sasl", k.obj, k.c.Name)
		}
		i := slices.IndexFunc(k.ps.Volumes, func(v podVol) bool { return v.Name == "kafka-sasl" })
		if i < 0 || k.ps.Volumes[i].Projected == nil || len(k.ps.Volumes[i].Projected.Sources) != 1 {
			t.Errorf("%s: no projected kafka-sasl volume of one source", k.obj)
			continue
		}
		sat := k.ps.Volumes[i].Projected.Sources[0].ServiceAccountToken
		if sat == nil || sat.Audience != "kafka" || sat.ExpirationSeconds != 3600 || sat.Path != "token" {
			t.Errorf("%s: kafka-sasl source %+v, want the service account token for audience kafka at token", k.obj, sat)
		}
	}

	// A Secret instead of the service account token.
	out, err := renderChart(t, "ci/oauth-values.yaml", "kafka.sasl.oauth.serviceAccountTokenAudience=", "kafka.sasl.oauth.existingSecret=kafka-token", "kafka.sasl.oauth.tokenKey=jwt")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kafkaClients(t, parseManifests(t, out)) {
		i := slices.IndexFunc(k.ps.Volumes, func(v podVol) bool { return v.Name == "kafka-sasl" })
		if i < 0 || k.ps.Volumes[i].Projected == nil {
			t.Errorf("%s: no projected kafka-sasl volume", k.obj)
			continue
		}
		src := k.ps.Volumes[i].Projected.Sources[0].Secret
		if src == nil || src.Name != "kafka-token" || len(src.Items) != 1 || src.Items[0].Key != "jwt" || src.Items[0].Path != "token" {
			t.Errorf("%s: kafka-sasl source %+v, want the key jwt of Secret kafka-token at token", k.obj, src)
		}
	}
}

// TestChartMSKIAM: every container that talks to Kafka gets the AWS
// credentials from the Secret, never as literal values, and TLS.
func TestChartMSKIAM(t *testing.T) {
	t.Parallel()
	objs := parseManifests(t, scenarioRender(t, "ci/msk-iam-values.yaml"))
	clients := kafkaClients(t, objs)
	if len(clients) < 3 {
		t.Fatalf("Kafka clients %v: want at least the router, the canceller and the topics Job", clientNames(clients))
	}
	for _, k := range clients {
		checkNoSecretValues(t, k.obj, k.ps)
		for name, key := range map[string]string{
			"AWS_ACCESS_KEY_ID": "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY": "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN": "AWS_SESSION_TOKEN",
		} {
			e := k.env[name]
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "msk-credentials" || e.ValueFrom.SecretKeyRef.Key != key {
				t.Errorf("%s %s: %s is not the key %s of Secret msk-credentials: %+v", k.obj, k.c.Name, name, key, e)
			}
		}
		if v := k.env["AWS_REGION"].Value; v == nil || *v != "eu-west-1" {
			t.Errorf("%s %s: AWS_REGION %v", k.obj, k.c.Name, v)
		}
		if v := k.env["HOURGLASS_TLS"].Value; v == nil || *v != "true" {
			t.Errorf("%s %s: HOURGLASS_TLS %v", k.obj, k.c.Name, v)
		}
		if slices.ContainsFunc(k.ps.Volumes, func(v podVol) bool { return v.Name == "kafka-sasl" }) {
			t.Errorf("%s: a kafka-sasl volume with AWS_MSK_IAM", k.obj)
		}
	}
}
