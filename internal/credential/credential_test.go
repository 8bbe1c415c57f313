package credential

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestSecret(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONF_TEST_SECRET", "from-env")
	t.Setenv("CONF_TEST_EMPTY", "")
	tests := []struct {
		name    string
		s       Secret
		want    string
		wantErr string
		str     string
	}{
		{name: "zero", s: Secret{}, want: "", str: "unset"},
		{name: "value is never shown", s: Secret{Value: "hunter2"}, want: "hunter2", str: "value:<redacted>"},
		{name: "env", s: Secret{Env: "CONF_TEST_SECRET"}, want: "from-env", str: "env:CONF_TEST_SECRET"},
		{name: "file drops one newline", s: Secret{File: file}, want: "from-file", str: "file:" + file},
		{name: "env unset", s: Secret{Env: "CONF_TEST_NOPE"}, wantErr: "CONF_TEST_NOPE is not set"},
		{name: "env empty", s: Secret{Env: "CONF_TEST_EMPTY"}, wantErr: "CONF_TEST_EMPTY is not set"},
		{name: "file missing", s: Secret{File: filepath.Join(dir, "nope")}, wantErr: "no such file"},
		{name: "file empty", s: Secret{File: empty}, wantErr: "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.s.Resolve()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve: %q, %v; want error %q", got, err, tt.wantErr)
				}
				if verr := tt.s.Validate(); verr == nil {
					t.Error("Validate accepted it")
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Resolve: %q, %v; want %q", got, err, tt.want)
			}
			if s := tt.s.String(); s != tt.str {
				t.Errorf("String() = %q, want %q", s, tt.str)
			}
		})
	}
	if err := (Secret{Env: "CONF_TEST_SECRET", Value: "x"}).Validate(); err == nil || !strings.Contains(err.Error(), "one of") {
		t.Errorf("two sources: %v, want an error", err)
	}
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tls  TLS
		want []string
	}{
		{name: "zero", tls: TLS{}},
		{name: "server name only", tls: TLS{ServerName: "db.internal"}},
		{name: "cert without key", tls: TLS{CertFile: "c.pem"}, want: []string{"tls.cert_file and tls.key_file go together"}},
		{name: "missing CA", tls: TLS{CAFile: filepath.Join(dir, "nope.pem")}, want: []string{"tls.ca_file", "no such file"}},
		{name: "CA not PEM", tls: TLS{CAFile: notPEM}, want: []string{"tls.ca_file: " + notPEM + ": no PEM certificate found"}},
	} {
		errs := tc.tls.Validate()
		if len(tc.want) == 0 {
			if len(errs) > 0 {
				t.Errorf("%s: %v", tc.name, errs)
			}
			cfg, err := tc.tls.Config()
			if err != nil || (cfg == nil) != tc.tls.IsZero() {
				t.Errorf("%s: Config() = %v, %v", tc.name, cfg, err)
			}
			continue
		}
		all := ""
		for _, e := range errs {
			all += e.Error() + "\n"
		}
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: errors %q do not contain %q", tc.name, all, w)
			}
		}
	}
}

// TestSecretYAML: a Secret decodes from {env}, {file} or {value}; a plain
// value is refused with how to write one, without repeating it.
func TestSecretYAML(t *testing.T) {
	tests := []struct {
		in      string
		want    Secret
		wantErr string
	}{
		{in: "s: {env: ORDERS_DSN}", want: Secret{Env: "ORDERS_DSN"}},
		{in: "s: {file: /run/token}", want: Secret{File: "/run/token"}},
		{in: "s: {value: x}", want: Secret{Value: "x"}},
		{in: "s:", want: Secret{}},
		{in: "s: hunter2", wantErr: "a secret is written {env: NAME} (an environment variable) or {file: PATH} (a file), or {value: ...} inline for tests; got a plain value"},
		{in: "s: [a]", wantErr: "got a list"},
		{in: "s: {path: /run/token}", wantErr: `unknown key "path"`},
		{in: "s: {env: [A]}", wantErr: "env: want a string"},
	}
	for _, tt := range tests {
		var v struct {
			S Secret `yaml:"s"`
		}
		err := yaml.Unmarshal([]byte(tt.in), &v)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%s: error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || v.S != tt.want {
			t.Errorf("%s: %+v, %v; want %+v", tt.in, v.S, err, tt.want)
		}
	}
}
