package httpcloser

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/outcome"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("t0k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HTTPCLOSER_TEST_TOKEN", "t0k")
	const base = "https://orders.internal/api/orders/{id}/confirm"
	for _, tc := range []struct {
		name string
		cfg  Config // WithDefaults is applied unless raw is set
		raw  bool
		want []string // prefixes of the errors, in order; none when valid
	}{
		{name: "minimal", cfg: Config{URL: base}},
		{name: "everything set", cfg: Config{
			URL: "http://127.0.0.1:8080/close/{kind}/{id}?reason=deadline&id={id}", Method: "DELETE",
			Headers: map[string]string{"X-Tenant": "eu-1", "x-lower": "ok\tok"}, Body: BodyNone, ContentType: "text/plain",
			Timeout: time.Second, BearerToken: credential.Secret{File: tokenFile}, ConflictOutcome: outcome.Skipped, MaxIdleConnsPerHost: 4,
		}},
		{name: "lower-case method", cfg: Config{URL: base, Method: "patch"}},
		{name: "bearer from env", cfg: Config{URL: base, BearerToken: credential.Secret{Env: "HTTPCLOSER_TEST_TOKEN"}}},
		{name: "basic auth", cfg: Config{URL: base, BasicAuth: BasicAuth{Username: "hourglass", Password: credential.Secret{Value: "pw"}}}},
		{name: "content type with parameters", cfg: Config{URL: base, ContentType: "application/json; charset=utf-8"}},
		{name: "body none ignores content type", cfg: Config{URL: base, Body: BodyNone, ContentType: "not a type"}},

		{name: "zero config without defaults", cfg: Config{}, raw: true, want: []string{
			"url: required", "method: must not be empty", "body:", "content_type:", "timeout:", "max_batch:", "conflict_outcome:", "max_idle_conns_per_host:",
		}},
		{name: "url missing", cfg: Config{}, want: []string{"url: required"}},
		{name: "url scheme", cfg: Config{URL: "ftp://orders/{id}"}, want: []string{"url: "}},
		{name: "url relative", cfg: Config{URL: "/orders/{id}"}, want: []string{"url: "}},
		{name: "url without host", cfg: Config{URL: "https:///orders/{id}"}, want: []string{"url: "}},
		{name: "url with credentials", cfg: Config{URL: "https://user:hunter2@orders/{id}"}, want: []string{"url: "}},
		{name: "url unknown placeholder", cfg: Config{URL: "https://orders/{order_id}"}, want: []string{"url: "}},
		{name: "url stray brace", cfg: Config{URL: "https://orders/{id}}"}, want: []string{"url: "}},
		{name: "url fragment", cfg: Config{URL: "https://orders/{id}#x"}, want: []string{"url: "}},
		{name: "url bad escape", cfg: Config{URL: "https://orders/%zz/{id}"}, want: []string{"url: "}},
		{name: "url dot dot segment", cfg: Config{URL: "https://orders/api/../{id}/cancel"}, want: []string{"url: "}},
		{name: "url dot segment", cfg: Config{URL: "https://orders/api/./{id}"}, want: []string{"url: "}},
		{name: "url encoded dot dot segment", cfg: Config{URL: "https://orders/api/%2e%2E/{id}"}, want: []string{"url: "}},
		{name: "url dots in a segment", cfg: Config{URL: "https://orders/api/v1..2/{id}.json"}},
		{name: "method GET", cfg: Config{URL: base, Method: "GET"}, want: []string{"method: "}},
		{name: "method HEAD", cfg: Config{URL: base, Method: "HEAD"}, want: []string{"method: "}},
		{name: "header Authorization", cfg: Config{URL: base, Headers: map[string]string{"authorization": "Bearer x"}}, want: []string{"headers: "}},
		{name: "header of ours", cfg: Config{URL: base, Headers: map[string]string{"Hourglass-Due": "1", "Idempotency-Key": "k"}}, want: []string{"headers: ", "headers: "}},
		{name: "header name", cfg: Config{URL: base, Headers: map[string]string{"X Bad": "v"}}, want: []string{"headers: "}},
		{name: "header value", cfg: Config{URL: base, Headers: map[string]string{"X-Evil": "a\r\nHost: b"}}, want: []string{"headers: "}},
		{name: "body", cfg: Config{URL: base, Body: "json"}, want: []string{"body: "}},
		{name: "content type", cfg: Config{URL: base, ContentType: "json"}, want: []string{"content_type: "}},
		{name: "timeout negative", cfg: Config{URL: base, Timeout: -time.Second}, want: []string{"timeout: "}},
		{name: "bearer and basic", cfg: Config{URL: base, BearerToken: credential.Secret{Value: "t"},
			BasicAuth: BasicAuth{Username: "u", Password: credential.Secret{Value: "p"}}}, want: []string{"bearer_token: "}},
		{name: "bearer env unset", cfg: Config{URL: base, BearerToken: credential.Secret{Env: "HTTPCLOSER_TEST_UNSET"}}, want: []string{"bearer_token: "}},
		{name: "bearer file missing", cfg: Config{URL: base, BearerToken: credential.Secret{File: filepath.Join(dir, "nope")}}, want: []string{"bearer_token: "}},
		{name: "bearer two sources", cfg: Config{URL: base, BearerToken: credential.Secret{Env: "HTTPCLOSER_TEST_TOKEN", Value: "x"}}, want: []string{"bearer_token: "}},
		{name: "basic without user", cfg: Config{URL: base, BasicAuth: BasicAuth{Password: credential.Secret{Value: "p"}}}, want: []string{"basic_auth.username: "}},
		{name: "basic user with colon", cfg: Config{URL: base, BasicAuth: BasicAuth{Username: "a:b", Password: credential.Secret{Value: "p"}}}, want: []string{"basic_auth.username: "}},
		{name: "basic without password", cfg: Config{URL: base, BasicAuth: BasicAuth{Username: "u"}}, want: []string{"basic_auth.password: "}},
		{name: "tls cert without key", cfg: Config{URL: base, TLS: credential.TLS{CertFile: tokenFile}}, want: []string{"tls.cert_file and tls.key_file"}},
		{name: "tls ca not pem", cfg: Config{URL: base, TLS: credential.TLS{CAFile: tokenFile}}, want: []string{"tls.ca_file: "}},
		{name: "conflict outcome", cfg: Config{URL: base, ConflictOutcome: outcome.Closed}, want: []string{"conflict_outcome: "}},
		{name: "idle conns", cfg: Config{URL: base, MaxIdleConnsPerHost: -1}, want: []string{"max_idle_conns_per_host: "}},
		{name: "batch", cfg: Config{BatchURL: "https://orders.internal/api/orders/close-batch?source=hourglass", MaxBatch: 500}},
		{name: "batch with credentials and headers", cfg: Config{BatchURL: "http://127.0.0.1:8080/close", Method: "post", Body: BodyNone,
			Headers: map[string]string{"X-Tenant": "eu-1"}, BearerToken: credential.Secret{File: tokenFile}, MaxBatch: 1}},
		{name: "url and batch_url", cfg: Config{URL: base, BatchURL: "https://orders.internal/close"}, want: []string{"batch_url: set together with url"}},
		{name: "batch_url placeholder", cfg: Config{BatchURL: "https://orders.internal/close/{kind}"}, want: []string{"batch_url: "}},
		{name: "batch_url scheme", cfg: Config{BatchURL: "ftp://orders.internal/close"}, want: []string{"batch_url: "}},
		{name: "batch_url with credentials", cfg: Config{BatchURL: "https://user:hunter2@orders/close"}, want: []string{"batch_url: "}},
		{name: "batch_url dot segment", cfg: Config{BatchURL: "https://orders/api/../close"}, want: []string{"batch_url: "}},
		{name: "batch method", cfg: Config{BatchURL: "https://orders.internal/close", Method: "PUT"}, want: []string{"method: "}},
		{name: "max_batch negative", cfg: Config{BatchURL: "https://orders.internal/close", MaxBatch: -1}, want: []string{"max_batch: "}},
		{name: "max_batch too large", cfg: Config{BatchURL: "https://orders.internal/close", MaxBatch: 10_001}, want: []string{"max_batch: "}},
		{name: "every problem at once", cfg: Config{URL: "ftp://x", Method: "GET", Body: "x", Timeout: -1}, want: []string{
			"url: ", "method: ", "body: ", "timeout: ",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if !tc.raw {
				cfg = cfg.WithDefaults()
			}
			var errs closer.Problems
			errors.As(cfg.Validate(), &errs)
			if len(errs) != len(tc.want) {
				t.Fatalf("Validate = %q, want %d errors starting %q", errs, len(tc.want), tc.want)
			}
			for i, err := range errs {
				if !strings.HasPrefix(err.Error(), tc.want[i]) {
					t.Errorf("error %d = %q, want it to start with %q", i, err, tc.want[i])
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error %d = %q shows a password", i, err)
				}
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	got := Config{URL: "http://x/{id}"}.WithDefaults()
	want := Config{URL: "http://x/{id}", Method: DefaultMethod, Body: DefaultBody, ContentType: DefaultContentType,
		Timeout: DefaultTimeout, ConflictOutcome: DefaultConflictOutcome, MaxIdleConnsPerHost: DefaultMaxIdleConnsPerHost, MaxBatch: DefaultMaxBatch}
	if got.URL != want.URL || got.Method != want.Method || got.Body != want.Body || got.ContentType != want.ContentType ||
		got.Timeout != want.Timeout || got.ConflictOutcome != want.ConflictOutcome || got.MaxIdleConnsPerHost != want.MaxIdleConnsPerHost ||
		got.MaxBatch != want.MaxBatch || got.BatchURL != "" {
		t.Errorf("WithDefaults = %+v, want %+v", got, want)
	}
	set := Config{URL: "u", Method: "PUT", Body: BodyNone, ContentType: "text/plain", Timeout: time.Minute,
		ConflictOutcome: outcome.Skipped, MaxIdleConnsPerHost: 3, MaxBatch: 7}
	if again := set.WithDefaults(); again.Method != "PUT" || again.Body != BodyNone || again.ContentType != "text/plain" ||
		again.Timeout != time.Minute || again.ConflictOutcome != outcome.Skipped || again.MaxIdleConnsPerHost != 3 || again.MaxBatch != 7 {
		t.Errorf("WithDefaults changed set fields: %+v", again)
	}
}

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		tmpl, id, kind string
		want           string
	}{
		{"https://o/api/orders/{id}/confirm", "42", "k", "https://o/api/orders/42/confirm"},
		{"https://o/api/orders/{id}", "a/b c", "k", "https://o/api/orders/a%2Fb%20c"},
		{"https://o/{kind}/{id}", "x?y#z%", "confirm-receipt", "https://o/confirm-receipt/x%3Fy%23z%25"},
		{"https://o/close?order={id}&kind={kind}", "a&b=c d/e", "k k", "https://o/close?order=a%26b%3Dc+d%2Fe&kind=k+k"},
		{"https://o/{id}/close?id={id}", "a/b", "k", "https://o/a%2Fb/close?id=a%2Fb"},
		{"https://o/static", "42", "k", "https://o/static"},
	} {
		tmpl, err := parseTemplate(tc.tmpl)
		if err != nil {
			t.Fatalf("parseTemplate(%q): %v", tc.tmpl, err)
		}
		got := tmpl.expand(tc.id, tc.kind)
		if got != tc.want {
			t.Errorf("expand(%q, %q, %q) = %q, want %q", tc.tmpl, tc.id, tc.kind, got, tc.want)
		}
		if _, err := url.Parse(got); err != nil {
			t.Errorf("expand(%q, %q) = %q, not a URL: %v", tc.tmpl, tc.id, got, err)
		}
	}
}

// TestDecodeYAML: the closers file's http section decodes into Config with
// unknown keys refused, as the loader decodes it.
func TestDecodeYAML(t *testing.T) {
	const doc = `
url: https://orders.internal/api/orders/{id}/confirm
method: PUT
headers: {X-Tenant: eu-1}
body: none
content_type: application/json
timeout: 2500ms
bearer_token: {file: /var/run/secrets/orders/token}
tls: {ca_file: /etc/orders/ca.pem, server_name: orders.internal}
conflict_outcome: skipped
max_idle_conns_per_host: 16
`
	var got Config
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got.URL != "https://orders.internal/api/orders/{id}/confirm" || got.Method != "PUT" || got.Headers["X-Tenant"] != "eu-1" ||
		got.Body != BodyNone || got.Timeout != 2500*time.Millisecond || got.BearerToken != (credential.Secret{File: "/var/run/secrets/orders/token"}) ||
		got.TLS != (credential.TLS{CAFile: "/etc/orders/ca.pem", ServerName: "orders.internal"}) || got.ConflictOutcome != outcome.Skipped ||
		got.MaxIdleConnsPerHost != 16 {
		t.Errorf("decoded %+v", got)
	}
	var basic Config
	if err := yaml.Unmarshal([]byte("url: http://x/{id}\nbasic_auth: {username: u, password: {env: PW}}"), &basic); err != nil ||
		basic.BasicAuth != (BasicAuth{Username: "u", Password: credential.Secret{Env: "PW"}}) {
		t.Errorf("basic_auth decoded %+v, %v", basic.BasicAuth, err)
	}
	var batch Config
	if err := yaml.Unmarshal([]byte("batch_url: https://orders.internal/close\nmax_batch: 250\n"), &batch); err != nil ||
		batch.BatchURL != "https://orders.internal/close" || batch.MaxBatch != 250 {
		t.Errorf("batch_url and max_batch decoded %q %d, %v", batch.BatchURL, batch.MaxBatch, err)
	}
	dec = yaml.NewDecoder(strings.NewReader("url: http://x/{id}\ntimout: 5s\n"))
	dec.KnownFields(true)
	if err := dec.Decode(new(Config)); err == nil {
		t.Error("a misspelt key decoded without error")
	}
}
