package closerfile

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/dbtest"
)

func TestParse(t *testing.T) {
	t.Setenv("ORDERS_TOKEN_TEST", "s3cret")
	tests := []struct {
		name    string
		file    string
		want    map[string]string // kind -> type
		wantErr []string          // substrings, all present
	}{
		{
			name: "every type",
			file: `
closers:
  order-timeout:
    sql:
      driver: postgres
      dsn: {value: "postgres://postgres@127.0.0.1:5432/test"}
    rate_limit: 200
  confirm-receipt:
    http:
      url: https://orders.internal/api/orders/{id}/confirm
      bearer_token: {env: ORDERS_TOKEN_TEST}
  reminder:
    kafka:
      topic: sms.reminders
  audit:
    log: {}
`,
			want: map[string]string{"order-timeout": "sql", "confirm-receipt": "http", "reminder": "kafka", "audit": "log"},
		},
		{name: "empty", file: "", wantErr: []string{"test.yaml: empty"}},
		{name: "no kinds", file: "closers: {}\n", wantErr: []string{"closers: no task kinds"}},
		{name: "unknown key", file: "closers:\n  a:\n    log: {}\n    retries: 3\n", wantErr: []string{`test.yaml:4: closers.a.retries: unknown key "retries"; want one of sql, http, kafka, log, rate_limit, rate_burst`}},
		{name: "unknown closer key", file: "closers:\n  a:\n    http: {url: 'http://x/{id}', verb: POST}\n", wantErr: []string{"verb"}},
		{name: "two closers", file: "closers:\n  a:\n    log: {}\n    kafka: {topic: t}\n", wantErr: []string{"closers.a: set exactly one of sql, http, kafka and log"}},
		{name: "no closer", file: "closers:\n  a:\n    rate_limit: 5\n", wantErr: []string{"closers.a: set exactly one"}},
		{name: "bad limit", file: "closers:\n  a:\n    log: {}\n    rate_limit: -1\n    rate_burst: -2\n", wantErr: []string{"closers.a: rate_limit: -1", "closers.a: rate_burst: -2"}},
		{
			name: "closer problems carry their place",
			file: `
closers:
  order-timeout:
    sql: {driver: oracle, dsn: {value: x}, table: "or ders"}
  confirm-receipt:
    http: {url: "ftp://orders/{id}"}
  reminder:
    kafka: {topic: "bad topic"}
`,
			wantErr: []string{"closers.order-timeout.sql.driver", "closers.order-timeout.sql.table", "closers.confirm-receipt.http.url", "closers.reminder.kafka.topic"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.file), "test.yaml")
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q\ndoes not contain %q", err, w)
					}
				}
				if !strings.HasPrefix(err.Error(), "test.yaml:") {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, e := range f.Closers {
				got[k] = e.Type()
			}
			if len(got) != len(tt.want) {
				t.Fatalf("kinds %v, want %v", got, tt.want)
			}
			for k, w := range tt.want {
				if got[k] != w {
					t.Errorf("%s: %s closer, want %s", k, got[k], w)
				}
			}
		})
	}
}

// TestParseAllProblems: a file with several mistakes reports all of them
// at once, decoding and validation alike, in the order of the file, each
// with its line and dotted path.
func TestParseAllProblems(t *testing.T) {
	file := `closers:
  order-timeout:
    http:
      url: https://orders.internal/api/orders/{id}/close
      bearer_token: abc
      timeout: 5
  reminder:
    kafka: {topic: "bad topic", timout: 2s}
    rate_limit: fast
  audit:
    log: {}
    sql: {driver: postgres, dsn: {env: CLOSERS_TEST_UNSET}, statement_timeout: 1 minute}
`
	want := `test.yaml: 8 problems:
  test.yaml:5: closers.order-timeout.http.bearer_token: a secret is written {env: NAME} (an environment variable) or {file: PATH} (a file), or {value: ...} inline for tests; got a plain value
  test.yaml:6: closers.order-timeout.http.timeout: 5 is not a duration; write a string with a unit, like "5s" or "250ms"
  test.yaml:8: closers.reminder.kafka.timout: unknown key "timout"; did you mean timeout?
  test.yaml:8: closers.reminder.kafka.topic: topic name "bad topic" has ' ': only ASCII letters, digits, '.', '_' and '-' are allowed
  test.yaml:9: closers.reminder.rate_limit: want a number, got "fast"
  test.yaml:10: closers.audit: set exactly one of sql, http, kafka and log
  test.yaml:12: closers.audit.sql.statement_timeout: 1 minute is not a duration; write a string with a unit, like "5s" or "250ms"
  test.yaml:12: closers.audit.sql.dsn: environment variable CLOSERS_TEST_UNSET is not set`
	_, err := Parse([]byte(file), "test.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
	if strings.Contains(err.Error(), "abc") {
		t.Errorf("the error repeats what may be a secret")
	}
}

// TestParseHints: how each kind of mistake is reported.
func TestParseHints(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"secret as a string", "closers:\n  a:\n    sql: {driver: postgres, dsn: 'postgres://u:pw@db/x'}\n",
			"test.yaml:3: closers.a.sql.dsn: a secret is written {env: NAME} (an environment variable) or {file: PATH} (a file), or {value: ...} inline for tests; got a plain value"},
		{"secret with an unknown key", "closers:\n  a:\n    http: {url: 'http://x/{id}', bearer_token: {environment: T}}\n",
			`test.yaml:3: closers.a.http.bearer_token: unknown key "environment"; a secret is written {env: NAME} (an environment variable) or {file: PATH} (a file), or {value: ...} inline for tests`},
		{"duration as a number", "closers:\n  a:\n    kafka:\n      topic: t\n      timeout: 250\n",
			`test.yaml:5: closers.a.kafka.timeout: 250 is not a duration; write a string with a unit, like "5s" or "250ms"`},
		{"duration as a list", "closers:\n  a:\n    kafka: {topic: t, timeout: [1s]}\n",
			`test.yaml:3: closers.a.kafka.timeout: want a duration, got a list; write a string with a unit, like "5s" or "250ms"`},
		{"closer not a mapping", "closers:\n  a:\n    kafka: sms\n",
			`test.yaml:3: closers.a.kafka: want a mapping of topic, value, timeout, got "sms"`},
		{"key twice", "closers:\n  a:\n    log: {}\n    rate_limit: 1\n    rate_limit: 2\n",
			"test.yaml:5: closers.a.rate_limit: set twice"},
		{"not a closers file", "- a\n- b\n", "test.yaml:1: want a mapping of closers, got a list"},
		{"a key that did not decode is not validated again", "closers:\n  a:\n    http:\n      url: 'http://x/{id}'\n      tls:\n        cert_file: [x]\n        key_file: k\n",
			"test.yaml:6: closers.a.http.tls.cert_file: want a string, got a list"},
		{"a kind with a space", "closers:\n  order timeout:\n    log: {}\n    rate_burst: -1\n  b:\n    kafka:\n      topic: 'x y'\n",
			"test.yaml: 2 problems:\n  test.yaml:2: closers.order timeout: rate_burst: -1: must be at least 1\n" +
				"  test.yaml:7: closers.b.kafka.topic: topic name \"x y\" has ' ': only ASCII letters, digits, '.', '_' and '-' are allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.file), "test.yaml")
			if err == nil || err.Error() != tt.want {
				t.Errorf("error:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
}

// TestParseAnchors: durations, secrets and merge keys decode as yaml
// would, the mapping's own keys winning over merged ones.
func TestParseAnchors(t *testing.T) {
	file := `closers:
  a:
    http: &http
      url: http://x/{id}
      timeout: 250ms
      method: PUT
  b:
    http:
      <<: *http
      method: PATCH
      bearer_token: {env: TOKEN_TEST}
`
	t.Setenv("TOKEN_TEST", "t")
	f, err := Parse([]byte(file), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, b := f.Closers["a"].HTTP, f.Closers["b"].HTTP
	if a.Method != "PUT" || b.Method != "PATCH" || b.URL != "http://x/{id}" || b.Timeout != 250*time.Millisecond || b.BearerToken.Env != "TOKEN_TEST" {
		t.Errorf("a %+v\nb %+v", a, b)
	}
}

// TestParseDefaults: defaults of the closers and of the entry are applied.
func TestParseDefaults(t *testing.T) {
	f, err := Parse([]byte("closers:\n  o:\n    sql: {driver: mysql, dsn: {value: 'root@tcp(127.0.0.1:3306)/test'}}\n    rate_limit: 5\n"), "f")
	if err != nil {
		t.Fatal(err)
	}
	e := f.Closers["o"]
	if e.RateBurst != DefaultRateBurst || e.SQL.Table != "orders" || e.SQL.MaxOpenConns == 0 {
		t.Errorf("defaults not applied: burst %d, table %q, max open %d", e.RateBurst, e.SQL.Table, e.SQL.MaxOpenConns)
	}
}

// TestOpen opens a file with a real database, routes every kind, closes
// through the routes, and stops.
func TestOpen(t *testing.T) {
	dsn := dbtest.PostgresDSN(t)
	table := dbtest.Table(t, "closers_open")
	db := dbtest.Open(t, "postgres", dsn)
	if _, err := db.Exec(`CREATE TABLE ` + table + ` (id bigint PRIMARY KEY, status text NOT NULL, closed_at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec(`DROP TABLE IF EXISTS ` + table) })
	if _, err := db.Exec(`INSERT INTO ` + table + ` VALUES (1, 'UNPAID', NULL), (2, 'PAID', NULL)`); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "closers.yaml")
	t.Setenv("CLOSERS_TEST_DSN", dsn)
	file := "closers:\n  order-timeout:\n    sql: {driver: postgres, dsn: {env: CLOSERS_TEST_DSN}, table: " + table + "}\n    rate_limit: 50\n  audit:\n    log: {}\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := f.Open(context.Background(), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cs.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if k := cs.ByKind["order-timeout"]; k.RateLimit != 50 || k.RateBurst != DefaultRateBurst {
		t.Errorf("order-timeout limit %v/s, burst %d; want 50/s, burst %d", k.RateLimit, k.RateBurst, DefaultRateBurst)
	}
	if k := cs.ByKind["audit"]; k.RateLimit != 0 {
		t.Errorf("audit has a limit: %v/s", k.RateLimit)
	}
	if len(cs.ByKind) != 2 {
		t.Errorf("%d kinds open, want 2", len(cs.ByKind))
	}
	for id, want := range map[string]outcome.Outcome{"1": outcome.Closed, "2": outcome.Skipped, "3": outcome.NotFound} {
		res, err := cs.ByKind["order-timeout"].Closer.Close(context.Background(), closer.Task{ID: id, Kind: "order-timeout", Attempt: 1})
		if err != nil || res.Outcome != want {
			t.Errorf("close %s: %v %v, want %s", id, res, err, want)
		}
	}
	if _, err := f.OpenSQL(context.Background(), "audit"); err == nil || !strings.Contains(err.Error(), "reconcile needs an sql closer") {
		t.Errorf("OpenSQL(audit): %v", err)
	}
	if _, err := f.OpenSQL(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), `no kind "nope"`) {
		t.Errorf("OpenSQL(nope): %v", err)
	}
}

// TestOpenFails: a database that cannot be reached fails Open, naming the
// kind.
func TestOpenFails(t *testing.T) {
	f, err := Parse([]byte("closers:\n  o:\n    sql: {driver: postgres, dsn: {value: 'postgres://postgres@127.0.0.1:1/test?connect_timeout=2'}}\n"), "f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Open(context.Background(), nil, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "closers.o.sql") {
		t.Errorf("Open: %v, want an error naming closers.o.sql", err)
	}
}
