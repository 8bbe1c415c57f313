package kafka

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// authenticate returns the first message of c's mechanism to host.
func authenticate(t *testing.T, c *Config, host string) (string, error) {
	t.Helper()
	m, err := c.mechanism()
	if err != nil {
		t.Fatalf("mechanism: %v", err)
	}
	_, msg, err := m.Authenticate(t.Context(), host)
	return string(msg), err
}

// TestOAuthBearerTokenFile: kfake has no OAUTHBEARER, so the mechanism is
// tested by its first message, RFC 7628's "n,,\x01auth=Bearer <token>\x01\x01":
// each authentication sends the token the file holds then.
func TestOAuthBearerTokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(tokenFile, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := Config{Brokers: []string{DefaultBrokers}, SASLMechanism: "OAUTHBEARER", SASLOAuthTokenFile: tokenFile}
	if _, err := c.Opts(); err != nil {
		t.Fatalf("Opts before the token file exists: %v", err)
	}

	write("eyJ.first.sig\n")
	for _, want := range []string{"eyJ.first.sig", "eyJ.first.sig"} {
		got, err := authenticate(t, &c, "127.0.0.1:9092")
		if err != nil || got != "n,,\x01auth=Bearer "+want+"\x01\x01" {
			t.Errorf("Authenticate = %q, %v; want the token %s", got, err, want)
		}
	}
	write("eyJ.refreshed.sig")
	if got, err := authenticate(t, &c, "127.0.0.1:9092"); err != nil || !strings.Contains(got, "auth=Bearer eyJ.refreshed.sig\x01") {
		t.Errorf("after the file changed, Authenticate = %q, %v; want the new token", got, err)
	}

	write(" \n")
	if _, err := authenticate(t, &c, "127.0.0.1:9092"); err == nil || err.Error() != "sasl oauthbearer: token file "+tokenFile+": empty" {
		t.Errorf("empty token file: Authenticate error %v", err)
	}
	if err := os.Remove(tokenFile); err != nil {
		t.Fatal(err)
	}
	if _, err := authenticate(t, &c, "127.0.0.1:9092"); err == nil || !strings.Contains(err.Error(), "sasl oauthbearer: read the token file: open "+tokenFile) {
		t.Errorf("missing token file: Authenticate error %v", err)
	}
}

// TestMSKIAM: kfake has no AWS_MSK_IAM, so the mechanism is tested by its
// first message, JSON with the signed request: it names the access key of
// the environment at each authentication, and the session token.
func TestMSKIAM(t *testing.T) {
	const host = "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"
	t.Setenv(EnvAWSAccessKeyID, "AKIAFIRST")
	t.Setenv(EnvAWSSecretAccessKey, "secret")
	t.Setenv(EnvAWSSessionToken, "session-1")
	c := Config{Brokers: []string{host}, SASLMechanism: "AWS_MSK_IAM", TLS: true}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	signed := func() map[string]string {
		t.Helper()
		msg, err := authenticate(t, &c, host)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(msg), &m); err != nil {
			t.Fatalf("first message %q: %v", msg, err)
		}
		return m
	}
	m := signed()
	if cred := m["x-amz-credential"]; !strings.HasPrefix(cred, "AKIAFIRST/") || !strings.Contains(cred, "/eu-west-1/kafka-cluster/") {
		t.Errorf("x-amz-credential %q: want the access key AKIAFIRST and the broker's region", cred)
	}
	if m["x-amz-security-token"] != "session-1" || m["action"] != "kafka-cluster:Connect" || m["x-amz-signature"] == "" {
		t.Errorf("signed request %v: want session-1, kafka-cluster:Connect and a signature", m)
	}

	t.Setenv(EnvAWSAccessKeyID, "AKIASECOND")
	t.Setenv(EnvAWSSessionToken, "")
	m = signed()
	if cred := m["x-amz-credential"]; !strings.HasPrefix(cred, "AKIASECOND/") {
		t.Errorf("after the environment changed, x-amz-credential %q: want AKIASECOND", cred)
	}
	if tok, ok := m["x-amz-security-token"]; ok {
		t.Errorf("x-amz-security-token %q without AWS_SESSION_TOKEN", tok)
	}

	t.Setenv(EnvAWSSecretAccessKey, "")
	if _, err := authenticate(t, &c, host); err == nil || err.Error() != "sasl aws_msk_iam: AWS_SECRET_ACCESS_KEY not set in the environment" {
		t.Errorf("without a secret key: Authenticate error %v", err)
	}
}

// TestValidateMSKIAM: AWS_MSK_IAM needs TLS and the credentials in the
// environment, and takes no user or password.
func TestValidateMSKIAM(t *testing.T) {
	t.Setenv(EnvAWSAccessKeyID, "")
	t.Setenv(EnvAWSSecretAccessKey, "")
	c := Config{Brokers: []string{DefaultBrokers}, SASLMechanism: "aws_msk_iam", SASLUser: "u"}
	want := []string{
		"SASLUser: not used with SASLMechanism aws_msk_iam",
		"TLS: required with SASLMechanism aws_msk_iam: MSK serves IAM authentication on TLS listeners only",
		"SASLMechanism: aws_msk_iam signs with the AWS credentials of the environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY not set in the environment",
	}
	errs := joined(c.Validate())
	if len(errs) != len(want) {
		t.Fatalf("Validate = %q, want %q", errs, want)
	}
	for i, w := range want {
		if errs[i].Error() != w {
			t.Errorf("error %d = %q, want %q", i, errs[i], w)
		}
	}
}
