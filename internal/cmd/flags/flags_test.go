package flags

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestKafkaProblems: each problem of the connection flags names its flag and
// environment variable, and so does each other flag a message mentions.
func TestKafkaProblems(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name string
		args []string
		want string // the whole explained error
	}{
		{"valid", nil, ""},
		{"no brokers", []string{"--brokers", ","}, "--brokers (HOURGLASS_BROKERS): no brokers given"},
		{"broker without port", []string{"--brokers", "kafka,ok:1"}, `--brokers (HOURGLASS_BROKERS): broker "kafka" is not host:port: address kafka: missing port in address`},
		{"cert without key", []string{"--tls-cert-file", file}, "--tls-cert-file (HOURGLASS_TLS_CERT_FILE): set without --tls-key-file (HOURGLASS_TLS_KEY_FILE)"},
		{"key without cert", []string{"--tls-key-file", file}, "--tls-key-file (HOURGLASS_TLS_KEY_FILE): set without --tls-cert-file (HOURGLASS_TLS_CERT_FILE)"},
		{"unreadable CA", []string{"--tls-ca-file", missing}, "--tls-ca-file (HOURGLASS_TLS_CA_FILE): open " + missing + ": no such file or directory"},
		{"unknown mechanism", []string{"--sasl-mechanism", "gssapi", "--sasl-user", "u", "--sasl-password", "p"},
			`--sasl-mechanism (HOURGLASS_SASL_MECHANISM): unknown mechanism "gssapi": want plain, scram-sha-256, scram-sha-512, oauthbearer or aws_msk_iam`},
		{"oauthbearer without token file", []string{"--sasl-mechanism", "OAUTHBEARER"},
			"--sasl-oauth-token-file (HOURGLASS_SASL_OAUTH_TOKEN_FILE): required with --sasl-mechanism (HOURGLASS_SASL_MECHANISM) oauthbearer"},
		{"oauthbearer with token file", []string{"--sasl-mechanism", "OAUTHBEARER", "--sasl-oauth-token-file", missing}, ""},
		{"token file with plain", []string{"--sasl-mechanism", "plain", "--sasl-user", "u", "--sasl-password", "p", "--sasl-oauth-token-file", file},
			"--sasl-oauth-token-file (HOURGLASS_SASL_OAUTH_TOKEN_FILE): set, but --sasl-mechanism (HOURGLASS_SASL_MECHANISM) is plain, not oauthbearer"},
		{"sasl without user or password", []string{"--sasl-mechanism", "scram-sha-256"},
			"--sasl-user (HOURGLASS_SASL_USER): required with --sasl-mechanism (HOURGLASS_SASL_MECHANISM) scram-sha-256\n" +
				"--sasl-password (HOURGLASS_SASL_PASSWORD): required with --sasl-mechanism (HOURGLASS_SASL_MECHANISM) scram-sha-256 (or set --sasl-password-file (HOURGLASS_SASL_PASSWORD_FILE))"},
		{"password and password file", []string{"--sasl-mechanism", "plain", "--sasl-user", "u", "--sasl-password", "p", "--sasl-password-file", file},
			"--sasl-password (HOURGLASS_SASL_PASSWORD): set together with --sasl-password-file (HOURGLASS_SASL_PASSWORD_FILE): give one"},
		{"credentials without mechanism", []string{"--sasl-user", "u"},
			"--sasl-user (HOURGLASS_SASL_USER): set, but --sasl-mechanism (HOURGLASS_SASL_MECHANISM) is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c kafka.Config
			fs := cli.NewFlagSet("test", "")
			Kafka(fs, &c, "test")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got := ""
			if err := fs.Explain(CheckKafka(fs, &c)); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("problems:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestKafkaFlags: the connection flags, their variables and defaults.
func TestKafkaFlags(t *testing.T) {
	var c kafka.Config
	fs := cli.NewFlagSet("router", "usage: router [flags]")
	Kafka(fs, &c, "hourglass-router")
	if err := fs.Parse([]string{"--tls-ca-file", "/ca.pem", "--sasl-mechanism=scram-sha-256"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Brokers, []string{kafka.DefaultBrokers}) || c.ClientID != "hourglass-router" {
		t.Errorf("defaults: brokers %q client id %q", c.Brokers, c.ClientID)
	}
	if c.TLS || !c.TLSEnabled() || c.TLSCAFile != "/ca.pem" || c.SASLMechanism != kafka.SASLScramSHA256 {
		t.Errorf("flags not stored: %+v", c)
	}
	for f, flag := range kafkaFields {
		if got, want := fs.Name(flag), "--"+flag+" ("+cli.Env(flag)+")"; got != want {
			t.Errorf("field %s: Name(%s) = %q, want %q", f, flag, got, want)
		}
	}
	var usage strings.Builder
	fs.SetOutput(&usage)
	fs.Usage()
	for _, want := range []string{
		"  --brokers host:port,...  (env HOURGLASS_BROKERS, default 127.0.0.1:9092)\n",
		"  --client-id string  (env HOURGLASS_CLIENT_ID, default hourglass-router)\n",
		"  --sasl-password password  (env HOURGLASS_SASL_PASSWORD)\n",
	} {
		if !strings.Contains(usage.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, usage.String())
		}
	}
}

// TestKafkaOpts: a password file that cannot be read when the client is
// built is named by its flag.
func TestKafkaOpts(t *testing.T) {
	c := kafka.Config{Brokers: []string{"127.0.0.1:9092"}, SASLMechanism: "plain", SASLUser: "u", SASLPasswordFile: filepath.Join(t.TempDir(), "gone")}
	_, err := KafkaOpts(&c)
	var fe *cli.FlagError
	if !errors.As(err, &fe) || fe.Flag != "sasl-password-file" {
		t.Errorf("KafkaOpts = %v, want a problem of --sasl-password-file", err)
	}
}

// TestEveryFieldNamed: every problem of the Configs that the shared flags
// set names a flag, none a Go field.
func TestEveryFieldNamed(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"kafka", CheckKafka(cli.NewFlagSet("test", ""), &kafka.Config{
			Brokers: []string{"x"}, TLSCertFile: "/nonexistent/c", TLSCAFile: "/nonexistent/ca",
			SASLUser: "u", SASLPassword: "p", SASLPasswordFile: "/nonexistent/p",
		})},
		{"kafka key", CheckKafka(cli.NewFlagSet("test", ""), &kafka.Config{TLSKeyFile: "/nonexistent/k", SASLMechanism: "x"})},
		{"limits", LimitsFields.Flags(field.In("Limits", limitsProblems()), nil)},
	} {
		if tt.err == nil {
			t.Errorf("%s: no problems", tt.name)
			continue
		}
		var fe *field.Error
		if errors.As(tt.err, &fe) {
			t.Errorf("%s: a problem names the field %s, not its flag:\n%v", tt.name, fe.Field, tt.err)
		}
	}
}

// TestLimitsFromEnv: both services read the record limits from the same
// variables.
func TestLimitsFromEnv(t *testing.T) {
	t.Setenv("HOURGLASS_MAX_HEADERS", "128")
	t.Setenv("HOURGLASS_MAX_VALUE_BYTES", "920000")
	var l tiers.Limits
	fs := cli.NewFlagSet("canceller", "")
	Limits(fs, &l)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	want := tiers.Limits{}.WithDefaults()
	want.Headers, want.ValueBytes = 128, 920000
	if l != want {
		t.Errorf("limits %+v, want %+v", l, want)
	}
}

// TestParseTiers: a bad --tiers names the flag.
func TestParseTiers(t *testing.T) {
	if _, err := ParseTiers("1m,5m"); err != nil {
		t.Errorf("ParseTiers(1m,5m) = %v", err)
	}
	_, err := ParseTiers("1x")
	var fe *cli.FlagError
	if !errors.As(err, &fe) || fe.Flag != TiersFlag {
		t.Errorf("ParseTiers(1x) = %v, want a problem of --tiers", err)
	}
}

// limitsProblems returns a problem of every record limit.
func limitsProblems() error {
	return record.CheckLimits(tiers.Limits{KeyBytes: 0, HeaderBytes: 0, Headers: 0, ValueBytes: 1 << 30})
}

// TestMSKIAMNeedsTLS: aws_msk_iam names --tls, and the AWS variables it
// misses.
func TestMSKIAMNeedsTLS(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	var c kafka.Config
	fs := cli.NewFlagSet("test", "")
	Kafka(fs, &c, "test")
	if err := fs.Parse([]string{"--sasl-mechanism", "AWS_MSK_IAM"}); err != nil {
		t.Fatal(err)
	}
	want := "--tls (HOURGLASS_TLS): required with --sasl-mechanism (HOURGLASS_SASL_MECHANISM) aws_msk_iam: MSK serves IAM authentication on TLS listeners only\n" +
		"--sasl-mechanism (HOURGLASS_SASL_MECHANISM): aws_msk_iam signs with the AWS credentials of the environment: AWS_SECRET_ACCESS_KEY not set in the environment"
	if err := fs.Explain(CheckKafka(fs, &c)); err == nil || err.Error() != want {
		t.Errorf("problems:\n%v\nwant:\n%s", err, want)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	if err := fs.Parse([]string{"--sasl-mechanism", "AWS_MSK_IAM", "--tls"}); err != nil {
		t.Fatal(err)
	}
	if err := CheckKafka(fs, &c); err != nil {
		t.Errorf("with --tls and the credentials: %v", err)
	}
}

// TestKafkaConfig: --kafka-config sets what no flag or environment variable
// sets, and its problems name the file, the line and the key.
func TestKafkaConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	props := write("client.properties", "bootstrap.servers=kafka-0:9093,kafka-1:9093\nsecurity.protocol=SASL_SSL\n"+
		"sasl.mechanism=SCRAM-SHA-512\nsasl.username=file-user\nsasl.password=file-pass\nclient.id=file-id\n")
	parse := func(t *testing.T, args ...string) *kafka.Config {
		t.Helper()
		var c kafka.Config
		fs := cli.NewFlagSet("test", "")
		Kafka(fs, &c, "hourglass-test")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := fs.Explain(CheckKafka(fs, &c)); err != nil {
			t.Fatalf("problems: %v", err)
		}
		return &c
	}

	c := parse(t, "--kafka-config", props)
	if !slices.Equal(c.Brokers, []string{"kafka-0:9093", "kafka-1:9093"}) || !c.TLS || c.SASLMechanism != "scram-sha-512" ||
		c.SASLUser != "file-user" || c.SASLPassword != "file-pass" || c.ClientID != "file-id" {
		t.Errorf("from the file: %+v", c)
	}

	t.Setenv("HOURGLASS_KAFKA_CONFIG", props)
	t.Setenv("HOURGLASS_SASL_USER", "env-user")
	c = parse(t, "--brokers", "flag:9093", "--client-id", "flag-id", "--tls=false")
	if !slices.Equal(c.Brokers, []string{"flag:9093"}) || c.ClientID != "flag-id" || c.TLS || c.SASLUser != "env-user" ||
		c.SASLPassword != "file-pass" || c.SASLMechanism != "scram-sha-512" {
		t.Errorf("flags and variables over the file: %+v", c)
	}

	bad := write("bad.properties", "bootstrap.servers=k:9093\nsasl.mechanism=OAUTHBEARER\nsasl.username=u\nsecurity.protocol=SASL_SSL\nssl.ca.location="+filepath.Join(dir, "missing")+"\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"values from the file", []string{"--kafka-config", bad},
			"--kafka-config (HOURGLASS_KAFKA_CONFIG): " + bad + ":5: ssl.ca.location: open " + filepath.Join(dir, "missing") + ": no such file or directory\n" +
				"--kafka-config (HOURGLASS_KAFKA_CONFIG): " + bad + ":3: sasl.username: not used with sasl.mechanism (" + bad + ":2) oauthbearer\n" +
				"--sasl-oauth-token-file (HOURGLASS_SASL_OAUTH_TOKEN_FILE): required with sasl.mechanism (" + bad + ":2) oauthbearer"},
		{"file problems", []string{"--kafka-config", write("worse.properties", "acks=all\nsecurity.protocol=TLS\n")},
			"--kafka-config (HOURGLASS_KAFKA_CONFIG): " + dir + "/worse.properties:1: acks: not a key Hourglass reads: it reads bootstrap.servers, client.id, security.protocol, sasl.mechanism, sasl.username, sasl.password, sasl.jaas.config, sasl.oauthbearer.token.endpoint.url, ssl.ca.location, ssl.certificate.location and ssl.key.location\n" +
				"--kafka-config (HOURGLASS_KAFKA_CONFIG): " + dir + "/worse.properties:2: security.protocol: \"TLS\": want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"},
		{"missing file", []string{"--kafka-config", filepath.Join(dir, "nope")},
			"--kafka-config (HOURGLASS_KAFKA_CONFIG): open " + filepath.Join(dir, "nope") + ": no such file or directory"},
	}
	t.Setenv("HOURGLASS_SASL_USER", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c kafka.Config
			fs := cli.NewFlagSet("test", "")
			Kafka(fs, &c, "test")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got := ""
			if err := fs.Explain(CheckKafka(fs, &c)); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("problems:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
