package httpcloser

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestMain fails the run when a test leaves connections or goroutines
// behind: Stop must release the closer's connections.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitBound bounds every wait of these tests.
const waitBound = 10 * time.Second

// epoch is the fake clock's start, on a whole second so that HTTP dates
// (second resolution) are exact.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// due is the due time of the tasks of these tests.
var due = time.UnixMilli(1_893_553_445_123)

func task(id string, attempt int) closer.Task {
	return closer.Task{
		ID: id, Kind: "confirm-receipt", Payload: []byte(`{"order":"` + id + `"}`),
		Meta: tiers.Meta{Due: due, Kind: "confirm-receipt"}, Attempt: attempt,
	}
}

// newServer starts a plain HTTP server on 127.0.0.1, closed at the end of
// the test.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// newTestCloser returns the closer of cfg reading clk (the wall clock when
// nil), stopped at the end of the test.
func newTestCloser(t *testing.T, cfg Config, clk clock.Clock) *Closer {
	t.Helper()
	if clk == nil {
		clk = clock.Real{}
	}
	c, err := newCloser(cfg, clk)
	if err != nil {
		t.Fatalf("new closer: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

// errKind classifies a Close error the way the canceller does.
func errKind(err error) string {
	switch {
	case err == nil:
		return ""
	case closer.IsPermanent(err):
		return "permanent"
	}
	return "retry"
}

// answer is what the test server answers for one task id.
type answer struct {
	status  int
	headers map[string]string
	body    string
}

// TestStatusMapping: every answer maps to the outcome or error class the
// package documents, and errors name the method, URL and task id.
func TestStatusMapping(t *testing.T) {
	long := strings.Repeat("x", 190) + "0123456789TAIL"
	for _, tc := range []struct {
		name     string
		conflict outcome.Outcome
		answer   answer
		want     closer.Result
		wantErr  string // "", "retry" or "permanent"
		wantText string // in the error
	}{
		{name: "200", answer: answer{status: 200}, want: closer.Result{Outcome: outcome.Closed}},
		{name: "201", answer: answer{status: 201, body: `{"id":"x"}`}, want: closer.Result{Outcome: outcome.Closed}},
		{name: "202", answer: answer{status: 202}, want: closer.Result{Outcome: outcome.Closed}},
		{name: "204", answer: answer{status: 204}, want: closer.Result{Outcome: outcome.Closed}},
		{name: "200 text body", answer: answer{status: 200, body: "ok"}, want: closer.Result{Outcome: outcome.Closed}},
		{name: "200 JSON without outcome", answer: answer{status: 200, body: `{"status":"CANCELLED"}`}, want: closer.Result{Outcome: outcome.Closed}},
		{name: "200 JSON array", answer: answer{status: 200, body: `["skipped"]`}, want: closer.Result{Outcome: outcome.Closed}},
		{name: "200 says skipped", answer: answer{status: 200, body: `{"outcome":"skipped","detail":"PAID"}`},
			want: closer.Result{Outcome: outcome.Skipped, Detail: "PAID"}},
		{name: "200 says already closed", answer: answer{status: 200, body: ` {"outcome": "already_closed"} `},
			want: closer.Result{Outcome: outcome.AlreadyClosed}},
		{name: "200 says not found", answer: answer{status: 200, body: `{"outcome":"not_found","detail":"purged"}`},
			want: closer.Result{Outcome: outcome.NotFound, Detail: "purged"}},
		{name: "200 says closed with a numeric detail", answer: answer{status: 200, body: `{"outcome":"closed","detail":42}`},
			want: closer.Result{Outcome: outcome.Closed, Detail: "42"}},
		{name: "200 with an unknown outcome", answer: answer{status: 200, body: `{"outcome":"failed"}`},
			wantErr: "permanent", wantText: `"failed"`},
		{name: "409", answer: answer{status: 409}, want: closer.Result{Outcome: outcome.AlreadyClosed}},
		{name: "409 as skipped", conflict: outcome.Skipped, answer: answer{status: 409}, want: closer.Result{Outcome: outcome.Skipped}},
		{name: "409 says skipped", answer: answer{status: 409, body: `{"outcome":"skipped","detail":"PAID"}`},
			want: closer.Result{Outcome: outcome.Skipped, Detail: "PAID"}},
		{name: "404", answer: answer{status: 404, body: "no such order"}, want: closer.Result{Outcome: outcome.NotFound}},
		{name: "404 body is not read as an outcome", answer: answer{status: 404, body: `{"outcome":"closed"}`},
			want: closer.Result{Outcome: outcome.NotFound}},
		{name: "408", answer: answer{status: 408}, wantErr: "retry", wantText: "408 Request Timeout"},
		{name: "425", answer: answer{status: 425}, wantErr: "retry", wantText: "425 Too Early"},
		{name: "429", answer: answer{status: 429}, wantErr: "retry", wantText: "429 Too Many Requests"},
		{name: "500 with body", answer: answer{status: 500, body: "database is down"}, wantErr: "retry",
			wantText: `500 Internal Server Error: "database is down"`},
		{name: "502", answer: answer{status: 502}, wantErr: "retry"},
		{name: "503", answer: answer{status: 503}, wantErr: "retry"},
		{name: "504", answer: answer{status: 504}, wantErr: "retry"},
		{name: "500 body excerpt is cut at 200 bytes", answer: answer{status: 500, body: long}, wantErr: "retry",
			wantText: strings.Repeat("x", 190) + "0123456789..."},
		{name: "500 JSON outcome is ignored", answer: answer{status: 500, body: `{"outcome":"closed"}`}, wantErr: "retry"},
		{name: "400", answer: answer{status: 400, body: `{"error":"bad id"}`}, wantErr: "permanent", wantText: `400 Bad Request: "{\"error\":\"bad id\"}"`},
		{name: "401", answer: answer{status: 401}, wantErr: "permanent", wantText: "401 Unauthorized"},
		{name: "403", answer: answer{status: 403}, wantErr: "permanent"},
		{name: "405", answer: answer{status: 405}, wantErr: "permanent"},
		{name: "410", answer: answer{status: 410}, wantErr: "permanent"},
		{name: "422", answer: answer{status: 422}, wantErr: "permanent"},
		{name: "301 is not followed", answer: answer{status: 301, headers: map[string]string{"Location": "/elsewhere"}},
			wantErr: "permanent", wantText: `"/elsewhere"`},
		{name: "307 is not followed", answer: answer{status: 307, headers: map[string]string{"Location": "/elsewhere"}}, wantErr: "permanent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.answer.headers {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.answer.status)
				_, _ = io.WriteString(w, tc.answer.body)
			})
			c := newTestCloser(t, Config{URL: ts.URL + "/orders/{id}/close", ConflictOutcome: tc.conflict}, nil)
			got, err := c.Close(t.Context(), task("o-17", 1))
			if kind := errKind(err); kind != tc.wantErr {
				t.Fatalf("Close = %+v, %v; want error class %q, got %q", got, err, tc.wantErr, kind)
			}
			if err == nil {
				if got != tc.want {
					t.Errorf("Close = %+v, want %+v", got, tc.want)
				}
				return
			}
			for _, s := range []string{`task "o-17"`, "POST " + ts.URL + "/orders/o-17/close", tc.wantText} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "TAIL") {
				t.Errorf("error %q quotes more than 200 bytes of the body", err)
			}
			if _, ok := closer.RetryAfterOf(err); ok {
				t.Errorf("error %q is marked with a retry delay without Retry-After", err)
			}
		})
	}
}

// TestRetryAfter: a Retry-After answer, in seconds or as an HTTP date,
// surfaces through closer.RetryAfterOf, capped at an hour.
func TestRetryAfter(t *testing.T) {
	clk := clock.NewFake(epoch)
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		want       time.Duration // 0: not marked
	}{
		{name: "seconds", status: 503, retryAfter: "120", want: 2 * time.Minute},
		{name: "seconds on 429", status: 429, retryAfter: "7", want: 7 * time.Second},
		{name: "date", status: 503, retryAfter: epoch.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second},
		{name: "seconds capped", status: 503, retryAfter: "86400", want: time.Hour},
		{name: "seconds beyond uint64 capped", status: 503, retryAfter: "999999999999999999999999", want: time.Hour},
		{name: "date capped", status: 503, retryAfter: epoch.Add(48 * time.Hour).Format(http.TimeFormat), want: time.Hour},
		{name: "date in the past", status: 503, retryAfter: epoch.Add(-time.Minute).Format(http.TimeFormat)},
		{name: "zero", status: 503, retryAfter: "0"},
		{name: "negative", status: 503, retryAfter: "-5"},
		{name: "garbage", status: 503, retryAfter: "soon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", tc.retryAfter)
				w.WriteHeader(tc.status)
			})
			c := newTestCloser(t, Config{URL: ts.URL + "/{id}"}, clk)
			_, err := c.Close(t.Context(), task("o-1", 1))
			if errKind(err) != "retry" {
				t.Fatalf("Close error %v, want a retryable error", err)
			}
			got, ok := closer.RetryAfterOf(err)
			if ok != (tc.want > 0) || got != tc.want {
				t.Errorf("RetryAfterOf = %v, %v; want %v", got, ok, tc.want)
			}
		})
	}
}

// TestRequest: the method, body and headers sent, and an Idempotency-Key
// that is the same for two attempts of a task.
func TestRequest(t *testing.T) {
	type seen struct {
		method, path, body string
		header             http.Header
	}
	var (
		mu   sync.Mutex
		reqs []seen
	)
	ts := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, seen{r.Method, r.URL.Path, string(b), r.Header.Clone()})
		mu.Unlock()
	})
	last := func() seen {
		mu.Lock()
		defer mu.Unlock()
		return reqs[len(reqs)-1]
	}

	t.Run("payload", func(t *testing.T) {
		c := newTestCloser(t, Config{URL: ts.URL + "/api/{kind}/{id}/confirm", Method: "put",
			Headers: map[string]string{"X-Tenant": "eu-1"}}, nil)
		var keys []string
		for attempt := 1; attempt <= 2; attempt++ {
			res, err := c.Close(t.Context(), task("o-42", attempt))
			if err != nil || res.Outcome != outcome.Closed {
				t.Fatalf("attempt %d: Close = %+v, %v", attempt, res, err)
			}
			got := last()
			if got.method != "PUT" || got.path != "/api/confirm-receipt/o-42/confirm" || got.body != `{"order":"o-42"}` {
				t.Errorf("attempt %d: got %s %s body %q", attempt, got.method, got.path, got.body)
			}
			for k, want := range map[string]string{
				"Idempotency-Key":   "hourglass:confirm-receipt:o-42",
				"Hourglass-Kind":    "confirm-receipt",
				"Hourglass-Due":     "1893553445123",
				"Hourglass-Attempt": strconv.Itoa(attempt),
				"User-Agent":        "hourglass",
				"Content-Type":      "application/json",
				"X-Tenant":          "eu-1",
				"Authorization":     "",
			} {
				if v := got.header.Get(k); v != want {
					t.Errorf("attempt %d: header %s = %q, want %q", attempt, k, v, want)
				}
			}
			keys = append(keys, got.header.Get("Idempotency-Key"))
		}
		if keys[0] != keys[1] {
			t.Errorf("Idempotency-Key changed between attempts: %q", keys)
		}
	})

	t.Run("no body", func(t *testing.T) {
		c := newTestCloser(t, Config{URL: ts.URL + "/orders/{id}", Method: "DELETE", Body: BodyNone}, nil)
		if _, err := c.Close(t.Context(), task("o-43", 3)); err != nil {
			t.Fatalf("Close: %v", err)
		}
		got := last()
		if got.method != "DELETE" || got.body != "" || got.header.Get("Content-Type") != "" || got.header.Get("Hourglass-Attempt") != "3" {
			t.Errorf("got %s body %q Content-Type %q attempt %q", got.method, got.body, got.header.Get("Content-Type"), got.header.Get("Hourglass-Attempt"))
		}
	})

	t.Run("refused tasks", func(t *testing.T) {
		c := newTestCloser(t, Config{URL: ts.URL + "/orders/{id}"}, nil)
		for _, tk := range []closer.Task{{ID: "", Attempt: 1}, {ID: "a\nb", Kind: "k", Attempt: 1}} {
			if _, err := c.Close(t.Context(), tk); errKind(err) != "permanent" {
				t.Errorf("Close(%q) error %v, want a permanent error", tk.ID, err)
			}
		}
	})
}

// TestPathEscaping: ids with '/', spaces and other reserved characters
// arrive intact, as one path segment or one query value.
func TestPathEscaping(t *testing.T) {
	got := make(chan [2]string, 1)
	ts := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		got <- [2]string{r.URL.Path, r.URL.Query().Get("order")}
	})
	c := newTestCloser(t, Config{URL: ts.URL + "/orders/{id}/close?order={id}"}, nil)
	for _, id := range []string{"plain", "a/b", "with space", "q?x=1&y=#frag", "100%", "ünï/cødé", "+plus", "..a/b..", "%2e%2e"} {
		if _, err := c.Close(t.Context(), task(id, 1)); err != nil {
			t.Fatalf("Close(%q): %v", id, err)
		}
		g := <-got
		if want := "/orders/" + id + "/close"; g[0] != want {
			t.Errorf("id %q: path %q, want %q", id, g[0], want)
		}
		if g[1] != id {
			t.Errorf("id %q: query value %q", id, g[1])
		}
	}
}

// TestDotSegments: a task id or kind that would put a "." or ".." segment
// into the URL path, as it stands or once a proxy decodes %2F, %5C or %2E,
// is refused with a permanent error before any request is sent, since
// servers and proxies that normalise paths would send the close elsewhere
// (POST /api/orders/../cancel is POST /api/cancel to them). Percent-encoded
// dots in an id stay encoded; the query is not a path and takes any id; ids
// that merely contain dots arrive intact.
func TestDotSegments(t *testing.T) {
	var (
		mu   sync.Mutex
		uris []string // request URIs as sent
	)
	ts := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uris = append(uris, r.RequestURI)
		mu.Unlock()
		_, _ = io.WriteString(w, `{"outcome":"closed","detail":"`+strings.ReplaceAll(r.URL.Path, `"`, "")+`"}`)
	})
	received := func() []string {
		mu.Lock()
		defer mu.Unlock()
		got := uris
		uris = nil
		return got
	}
	for _, tc := range []struct {
		name, url, id, kind string
		// wantPath is the decoded path the server sees; "" means the
		// close is refused and nothing is sent.
		wantPath string
		// wantRaw is in the request URI as sent.
		wantRaw string
	}{
		{name: "dot dot", url: "/api/orders/{id}/cancel", id: ".."},
		{name: "dot", url: "/api/orders/{id}/cancel", id: "."},
		{name: "dot dot at the end", url: "/api/orders/{id}", id: ".."},
		{name: "dot dot through an escaped slash", url: "/api/orders/{id}/cancel", id: "../../admin"},
		{name: "dot dot after an escaped slash", url: "/api/orders/{id}/cancel", id: "42/.."},
		{name: "dot in the middle of escaped slashes", url: "/api/orders/{id}/cancel", id: "a/./b"},
		{name: "dot dot through an escaped backslash", url: "/api/orders/{id}/cancel", id: `..\admin`},
		{name: "dot dot in a partial segment through a slash", url: "/api/orders/o-{id}/cancel", id: "/.."},
		{name: "dot dot kind", url: "/api/{kind}/{id}", id: "42", kind: ".."},
		{name: "dot dot id in the query too", url: "/api/orders/{id}/cancel?order={id}", id: ".."},

		{name: "plain", url: "/api/orders/{id}/cancel", id: "42", wantPath: "/api/orders/42/cancel"},
		{name: "dot dot in the query only", url: "/api/cancel?order={id}", id: "..", wantPath: "/api/cancel"},
		{name: "dot dot in a partial segment", url: "/api/orders/o-{id}/cancel", id: "..", wantPath: "/api/orders/o-../cancel"},
		{name: "three dots", url: "/api/orders/{id}/cancel", id: "...", wantPath: "/api/orders/.../cancel"},
		{name: "dots and letters", url: "/api/orders/{id}/cancel", id: "..a", wantPath: "/api/orders/..a/cancel"},
		{name: "encoded dot dot stays encoded", url: "/api/orders/{id}/cancel", id: "%2e%2e", wantPath: "/api/orders/%2e%2e/cancel",
			wantRaw: "/api/orders/%252e%252e/cancel"},
		{name: "mixed encoded dots stay encoded", url: "/api/orders/{id}/cancel", id: ".%2E", wantPath: "/api/orders/.%2E/cancel",
			wantRaw: "/api/orders/.%252E/cancel"},
		{name: "encoded slash stays encoded", url: "/api/orders/{id}/cancel", id: "%2F..%2F", wantPath: "/api/orders/%2F..%2F/cancel"},
		{name: "slash", url: "/api/orders/{id}/cancel", id: "a/b", wantPath: "/api/orders/a/b/cancel",
			wantRaw: "/api/orders/a%2Fb/cancel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCloser(t, Config{URL: ts.URL + tc.url}, nil)
			tk := task(tc.id, 1)
			if tc.kind != "" {
				tk.Kind = tc.kind
			}
			res, err := c.Close(t.Context(), tk)
			got := received()
			for _, uri := range got {
				if seg, ok := normalisable(uri); ok {
					t.Errorf("the server received %q, whose path has the dot segment %q once decoded", uri, seg)
				}
			}
			if tc.wantPath == "" {
				if errKind(err) != "permanent" || !strings.Contains(err.Error(), "dot segment") || !strings.Contains(err.Error(), strconv.Quote(tc.id)) {
					t.Errorf("Close(%q) = %+v, %v; want a permanent error about a dot segment naming the id", tc.id, res, err)
				}
				if len(got) > 0 {
					t.Errorf("Close(%q) sent %q; want no request", tc.id, got)
				}
				return
			}
			if err != nil || res != (closer.Result{Outcome: outcome.Closed, Detail: tc.wantPath}) {
				t.Errorf("Close(%q) = %+v, %v; want closed at %s", tc.id, res, err, tc.wantPath)
			}
			if len(got) != 1 || !strings.Contains(got[0], tc.wantRaw) {
				t.Errorf("Close(%q) sent %q; want one request with %q", tc.id, got, tc.wantRaw)
			}
		})
	}
}

// normalisable reports a "." or ".." segment in the path of a request URI
// decoded once, taking '/' and '\' as separators: what a proxy or server
// that decodes before it resolves dot segments would see.
func normalisable(uri string) (string, bool) {
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return uri, true
	}
	for _, seg := range strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == "." || seg == ".." {
			return seg, true
		}
	}
	return "", false
}

// authServer accepts only the Authorization value in want.
func authServer(t *testing.T, want *atomic.Value, seen *atomic.Int64) *httptest.Server {
	return newServer(t, func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if r.Header.Get("Authorization") != want.Load().(string) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func TestBearerFromEnv(t *testing.T) {
	t.Setenv("HTTPCLOSER_TEST_BEARER", "env-token")
	var want atomic.Value
	var seen atomic.Int64
	want.Store("Bearer env-token")
	ts := authServer(t, &want, &seen)
	c := newTestCloser(t, Config{URL: ts.URL + "/{id}", BearerToken: credential.Secret{Env: "HTTPCLOSER_TEST_BEARER"}}, nil)
	if res, err := c.Close(t.Context(), task("o-1", 1)); err != nil || res.Outcome != outcome.Closed {
		t.Fatalf("Close = %+v, %v", res, err)
	}
}

// TestBearerFileRotation: a rotated token file is read again after 10s, or
// at once when the server answers 401.
func TestBearerFileRotation(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	write := func(tok string) {
		t.Helper()
		// Written the way Kubernetes updates a mounted Secret: a new file
		// renamed into place.
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	write("tok-1")
	var want atomic.Value
	var seen atomic.Int64
	want.Store("Bearer tok-1")
	ts := authServer(t, &want, &seen)
	clk := clock.NewFake(epoch)
	c := newTestCloser(t, Config{URL: ts.URL + "/{id}", BearerToken: credential.Secret{File: file}}, clk)
	try := func(step string, wantOutcome outcome.Outcome, wantRequests int64) {
		t.Helper()
		before := seen.Load()
		res, err := c.Close(t.Context(), task("o-1", 1))
		if wantOutcome == "" {
			if errKind(err) != "permanent" {
				t.Fatalf("%s: Close = %+v, %v; want a permanent error", step, res, err)
			}
		} else if err != nil || res.Outcome != wantOutcome {
			t.Fatalf("%s: Close = %+v, %v; want %s", step, res, err, wantOutcome)
		}
		if n := seen.Load() - before; n != wantRequests {
			t.Errorf("%s: %d requests, want %d", step, n, wantRequests)
		}
	}
	try("first token", outcome.Closed, 1)

	// The file rotates, the server still takes the old token: the cached
	// one is used until 10s have passed.
	write("tok-2")
	clk.Advance(secretTTL - time.Second)
	try("cached token", outcome.Closed, 1)
	want.Store("Bearer tok-2")
	clk.Advance(time.Second)
	try("token re-read after 10s", outcome.Closed, 1)

	// The server moves on before the cache expires: its 401 makes the
	// closer read the file again and repeat the request once.
	write("tok-3")
	want.Store("Bearer tok-3")
	try("token re-read after 401", outcome.Closed, 2)

	// A 401 with a token that did not change is permanent, and not repeated.
	want.Store("Bearer tok-4")
	try("401 with the current token", "", 1)

	// A file that disappears is a retryable error naming the file, not the
	// token.
	clk.Advance(secretTTL)
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	_, err := c.Close(t.Context(), task("o-1", 1))
	if errKind(err) != "retry" || !strings.Contains(err.Error(), file) || strings.Contains(err.Error(), "tok-") {
		t.Errorf("Close without the token file: %v; want a retryable error naming %s", err, file)
	}
}

func TestBasicAuth(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret:with:colons\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		password credential.Secret
		want     string
	}{
		{"value", credential.Secret{Value: "pw"}, "pw"},
		{"file", credential.Secret{File: pwFile}, "s3cret:with:colons"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan [2]string, 1)
			ts := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				u, p, _ := r.BasicAuth()
				got <- [2]string{u, p}
			})
			c := newTestCloser(t, Config{URL: ts.URL + "/{id}", BasicAuth: BasicAuth{Username: "hourglass", Password: tc.password}}, nil)
			if _, err := c.Close(t.Context(), task("o-1", 1)); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if g := <-got; g != [2]string{"hourglass", tc.want} {
				t.Errorf("basic auth %q, want %q", g, [2]string{"hourglass", tc.want})
			}
		})
	}
}

// TestTLS: an https server is trusted through tls.ca_file, and refused
// without it or with the wrong server name.
func TestTLS(t *testing.T) {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
	ts.StartTLS()
	t.Cleanup(ts.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tls  credential.TLS
		want string // "" closes, else in the error
	}{
		{name: "ca file", tls: credential.TLS{CAFile: ca}},
		{name: "ca file and server name", tls: credential.TLS{CAFile: ca, ServerName: "example.com"}},
		{name: "system roots", want: "certificate"},
		{name: "wrong server name", tls: credential.TLS{CAFile: ca, ServerName: "orders.internal"}, want: "orders.internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCloser(t, Config{URL: ts.URL + "/{id}", TLS: tc.tls}, nil)
			res, err := c.Close(t.Context(), task("o-1", 1))
			if tc.want == "" {
				if err != nil || res.Outcome != outcome.Closed {
					t.Fatalf("Close = %+v, %v; want closed", res, err)
				}
				return
			}
			if errKind(err) != "retry" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Close = %+v, %v; want a retryable error about %q", res, err, tc.want)
			}
		})
	}
}

// blockingServer answers nothing until the request is cancelled; arrived
// receives each request's id.
func blockingServer(t *testing.T, arrived chan<- string) *httptest.Server {
	release := make(chan struct{})
	ts := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if arrived != nil {
			arrived <- r.URL.Path
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before ts.Close
	return ts
}

func TestTimeout(t *testing.T) {
	ts := blockingServer(t, nil)
	c := newTestCloser(t, Config{URL: ts.URL + "/{id}", Timeout: 100 * time.Millisecond}, nil)
	start := time.Now()
	_, err := c.Close(t.Context(), task("o-1", 1))
	took := time.Since(start)
	if errKind(err) != "retry" || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout 100ms") {
		t.Fatalf("Close error %v; want a retryable timeout", err)
	}
	if took > waitBound {
		t.Errorf("Close took %v with a 100ms timeout", took)
	}
}

func TestContextCancel(t *testing.T) {
	arrived := make(chan string, 1)
	ts := blockingServer(t, arrived)
	c := newTestCloser(t, Config{URL: ts.URL + "/{id}", Timeout: time.Hour}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Close(ctx, task("o-1", 1))
		done <- err
	}()
	select {
	case <-arrived:
	case <-time.After(waitBound):
		t.Fatal("the request did not arrive")
	}
	cancel()
	select {
	case err := <-done:
		if errKind(err) != "retry" || !errors.Is(err, context.Canceled) {
			t.Errorf("Close error %v; want context.Canceled, retryable", err)
		}
	case <-time.After(waitBound):
		t.Fatal("Close did not return after its context was cancelled")
	}
}

func TestNetworkError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := newTestCloser(t, Config{URL: "http://" + addr + "/orders/{id}"}, nil)
	_, err = c.Close(t.Context(), task("o-9", 1))
	if errKind(err) != "retry" {
		t.Fatalf("Close error %v; want retryable", err)
	}
	for _, s := range []string{`task "o-9"`, "POST http://" + addr + "/orders/o-9", "refused"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if strings.Contains(err.Error(), `Post "`) {
		t.Errorf("error %q repeats the method and URL", err)
	}
}

// TestLargeBody: an answer larger than 64 KiB is neither read whole nor a
// problem.
func TestLargeBody(t *testing.T) {
	ts := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := strings.Repeat("y", 64<<10)
		for range 16 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	c := newTestCloser(t, Config{URL: ts.URL + "/{id}"}, nil)
	if res, err := c.Close(t.Context(), task("o-1", 1)); err != nil || res.Outcome != outcome.Closed {
		t.Fatalf("Close = %+v, %v", res, err)
	}
}

// TestLargeAnswerOutcome: an answer that names its outcome and carries
// more than the 64 KiB read of it (the whole order, say) reports that
// outcome: a paid order that the service skipped is not reported closed
// because the end of the answer was not read.
func TestLargeAnswerOutcome(t *testing.T) {
	big := strings.Repeat("y", 80<<10)
	for _, tc := range []struct {
		name, body string
		want       closer.Result
	}{
		{"outcome first", `{"outcome":"skipped","detail":"PAID","order":{"notes":"` + big + `"}}`,
			closer.Result{Outcome: outcome.Skipped, Detail: "PAID"}},
		{"outcome after an object", `{"order":{"id":"o-1","status":"PAID"},"outcome":"skipped","detail":"PAID","notes":"` + big + `"}`,
			closer.Result{Outcome: outcome.Skipped, Detail: "PAID"}},
		{"no outcome", `{"order":{"notes":"` + big + `"}}`, closer.Result{Outcome: outcome.Closed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tc.body)
			})
			c := newTestCloser(t, Config{URL: ts.URL + "/{id}"}, nil)
			if res, err := c.Close(t.Context(), task("o-1", 1)); err != nil || res != tc.want {
				t.Fatalf("Close = %+v, %v; want %+v", res, err, tc.want)
			}
		})
	}
}

// TestConcurrent: 50 closes at once, as the canceller runs them, are all in
// flight together, each arrive once with its own key and report closed; a
// second round reuses the connections of the first.
func TestConcurrent(t *testing.T) {
	const n = 50
	var (
		mu       sync.Mutex
		keys     = map[string]int{}
		conns    atomic.Int64
		inFlight atomic.Int64
		barrier  atomic.Bool // the first round waits until all n are in flight
		all      = make(chan struct{})
	)
	barrier.Store(true)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if barrier.Load() {
			if inFlight.Add(1) == n {
				close(all)
			}
			select {
			case <-all:
			case <-time.After(waitBound):
				http.Error(w, "not all closes arrived together", http.StatusServiceUnavailable)
				return
			}
		}
		mu.Lock()
		keys[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"outcome":"closed","detail":"`+strings.TrimPrefix(r.URL.Path, "/")+`"}`)
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	c := newTestCloser(t, Config{URL: ts.URL + "/{id}"}, nil)

	var perRound []int64
	for round := range 2 {
		before := conns.Load()
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				id := fmt.Sprintf("r%d-o%d", round, i)
				res, err := c.Close(t.Context(), task(id, 1))
				if err != nil || res != (closer.Result{Outcome: outcome.Closed, Detail: id}) {
					t.Errorf("Close(%s) = %+v, %v", id, res, err)
				}
			})
		}
		close(start)
		wg.Wait()
		barrier.Store(false)
		perRound = append(perRound, conns.Load()-before)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2*n {
		t.Errorf("%d distinct idempotency keys, want %d", len(keys), 2*n)
	}
	for k, count := range keys {
		if count != 1 {
			t.Errorf("key %s arrived %d times", k, count)
		}
	}
	t.Logf("new connections per round of %d closes: %v", n, perRound)
	if perRound[1] >= n {
		t.Errorf("the second round opened %d connections: none of the first round's was reused", perRound[1])
	}
}

// TestNew: New applies the defaults and refuses an invalid Config with
// every problem.
func TestNew(t *testing.T) {
	if _, err := New(Config{Method: "GET"}); err == nil ||
		!strings.Contains(err.Error(), "url: required") || !strings.Contains(err.Error(), "method: ") {
		t.Errorf("New(invalid) error %v; want url and method problems", err)
	}
	c, err := New(Config{URL: "http://127.0.0.1:1/{id}"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer func() { _ = c.Stop() }()
	if c.method != DefaultMethod || c.cfg.Timeout != DefaultTimeout || c.transport.MaxIdleConnsPerHost != DefaultMaxIdleConnsPerHost {
		t.Errorf("New did not apply the defaults: method %s timeout %v idle %d", c.method, c.cfg.Timeout, c.transport.MaxIdleConnsPerHost)
	}
}

func TestRetryAfterOf(t *testing.T) {
	now := epoch
	for _, tc := range []struct {
		header string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"1", time.Second, true},
		{" 30 ", 30 * time.Second, true},
		{"3600", time.Hour, true},
		{"3601", time.Hour, true},
		{"0", 0, false},
		{"1.5", 0, false},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second, true},
		{now.Add(10 * time.Second).Format(time.RFC850), 10 * time.Second, true},
		{now.Format(http.TimeFormat), 0, false},
		{"Mon, 99 Foo 2030", 0, false},
	} {
		resp := &http.Response{Header: http.Header{}}
		if tc.header != "" {
			resp.Header.Set("Retry-After", tc.header)
		}
		got, ok := retryAfterOf(resp, now)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("retryAfterOf(%q) = %v, %v; want %v, %v", tc.header, got, ok, tc.want, tc.wantOK)
		}
	}
}

// FuzzAnswerOutcome: any answer body gives a final outcome or none, a short
// valid detail, or an error; it never panics.
func FuzzAnswerOutcome(f *testing.F) {
	for _, s := range []string{
		`{"outcome":"skipped","detail":"PAID"}`, `{"outcome":"closed"}`, `{"outcome":"x"}`, `{"outcome":null}`,
		`{"outcome":"closed","detail":{"a":[1,2]}}`, `{"detail":"\u00ff"}`, `{`, `[]`, "", "\xff\xfe", `{"outcome":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := answerOutcome(body)
		if err != nil {
			if res != (closer.Result{}) {
				t.Errorf("error %v with result %+v", err, res)
			}
			return
		}
		if res.Outcome != "" && !res.Outcome.Final() {
			t.Errorf("outcome %q is not final", res.Outcome)
		}
		if len(res.Detail) > maxDetail+len("...") || !utf8.ValidString(res.Detail) {
			t.Errorf("detail %q is too long or not UTF-8", res.Detail)
		}
	})
}
