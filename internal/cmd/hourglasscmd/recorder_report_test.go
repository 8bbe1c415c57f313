package hourglasscmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/cmd/recordercmd"
	"github.com/hourglass/hourglass/internal/cmd/reportcmd"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/report"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/internal/testutil/syncbuf"
)

// TestRecorderReportBadConfig checks that the recorder and report commands
// reject bad flag and environment values before connecting to anything,
// with an service.UsageError naming the flag (and the environment variable when
// one was used).
func TestRecorderReportBadConfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "r.html")
	tests := []cmdtest.BadConfigCase{
		{"recorder zero batch", recordercmd.Run, []string{"--batch-rows", "0"}, nil, []string{"--batch-rows", "0"}},
		{"recorder flush interval not a duration", recordercmd.Run, []string{"--flush-interval", "abc"}, nil, []string{"--flush-interval", `"abc"`}},
		{"recorder retry max below min", recordercmd.Run, []string{"--retry-min", "1s", "--retry-max", "1ms"}, nil, []string{"--retry-max"}},
		{"recorder bad outcomes topic", recordercmd.Run, []string{"--outcomes-topic", "a b"}, nil, []string{"--outcomes-topic"}},
		{"recorder clickhouse addr", recordercmd.Run, []string{"--clickhouse-addr", "nope"}, nil, []string{"--clickhouse-addr", `"nope"`}},
		{"recorder clickhouse database", recordercmd.Run, []string{"--clickhouse-database", "hour-glass"}, nil, []string{"--clickhouse-database", `"hour-glass"`}},
		{"recorder password and file", recordercmd.Run, []string{"--clickhouse-password", "x", "--clickhouse-password-file", "/etc/hostname"}, nil, []string{"--clickhouse-password-file"}},
		{"recorder password file missing", recordercmd.Run, []string{"--clickhouse-password-file", "/nonexistent/pw"}, nil, []string{"--clickhouse-password-file", "/nonexistent/pw"}},
		{"recorder tls cert without key", recordercmd.Run, []string{"--clickhouse-tls-cert-file", "/etc/hostname"}, nil, []string{"--clickhouse-tls-cert-file"}},
		{"recorder dial timeout", recordercmd.Run, []string{"--clickhouse-dial-timeout", "0s"}, nil, []string{"--clickhouse-dial-timeout"}},
		{"recorder migrate not a bool", recordercmd.Run, []string{"--migrate=maybe"}, nil, []string{"--migrate", `"maybe"`}},
		{"recorder broker without port", recordercmd.Run, []string{"--brokers", "foo"}, nil, []string{"--brokers", `"foo"`}},
		{"recorder clickhouse addr from env", recordercmd.Run, nil, map[string]string{"HOURGLASS_CLICKHOUSE_ADDR": "nope"}, []string{"--clickhouse-addr", "HOURGLASS_CLICKHOUSE_ADDR", `"nope"`}},
		{"recorder batch from env", recordercmd.Run, nil, map[string]string{"HOURGLASS_BATCH_ROWS": "many"}, []string{"--batch-rows", "HOURGLASS_BATCH_ROWS"}},
		{"recorder extra argument", recordercmd.Run, []string{"extra"}, nil, []string{"extra"}},
		{"report since and from", reportcmd.Run, []string{"--since", "1h", "--from", "2024-05-14"}, nil, []string{"--since"}},
		{"report bad from", reportcmd.Run, []string{"--from", "yesterday"}, nil, []string{"--from", `"yesterday"`}},
		{"report to before from", reportcmd.Run, []string{"--from", "2024-05-14", "--to", "2024-05-13"}, nil, []string{"--to"}},
		{"report to without from", reportcmd.Run, []string{"--to", "2024-05-14"}, nil, []string{"--to", "--from"}},
		{"report negative since", reportcmd.Run, []string{"--since", "-1h"}, nil, []string{"--since"}},
		{"report since not a duration", reportcmd.Run, []string{"--since", "1 hour"}, nil, []string{"--since", `"1 hour"`}},
		{"report format", reportcmd.Run, []string{"--format", "xml"}, nil, []string{"--format", `"xml"`}},
		{"report html dir missing", reportcmd.Run, []string{"--html", missing}, nil, []string{"--html"}},
		{"report negative limit", reportcmd.Run, []string{"--limit", "-1"}, nil, []string{"--limit", "-1"}},
		{"report negative late threshold", reportcmd.Run, []string{"--late-threshold", "-1s"}, nil, []string{"--late-threshold"}},
		{"report tiny bucket", reportcmd.Run, []string{"--bucket", "1us"}, nil, []string{"--bucket"}},
		{"report negative forecast", reportcmd.Run, []string{"--forecast", "-1h"}, nil, []string{"--forecast", "-1h"}},
		{"report forecast too long", reportcmd.Run, []string{"--forecast", "721h"}, nil, []string{"--forecast", "721h"}},
		{"report clickhouse addr", reportcmd.Run, []string{"--clickhouse-addr", "x"}, nil, []string{"--clickhouse-addr"}},
		{"report clickhouse database from env", reportcmd.Run, nil, map[string]string{"HOURGLASS_CLICKHOUSE_DATABASE": "a;b"}, []string{"--clickhouse-database", "HOURGLASS_CLICKHOUSE_DATABASE"}},
		{"report extra argument", reportcmd.Run, []string{"--since", "1h", "extra"}, nil, []string{"extra"}},
	}
	cmdtest.CheckBadConfig(t, tests, func(t *testing.T, stdout string) {
		if stdout != "" {
			t.Errorf("stdout is not empty:\n%s", stdout)
		}
	})
	// Every problem is reported at once.
	_, _, err := cmdtest.Run(t, recordercmd.Run, "--batch-rows", "0", "--clickhouse-addr", "x", "--clickhouse-database", "1")
	for _, flag := range []string{"--batch-rows", "--clickhouse-addr", "--clickhouse-database"} {
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("error %v does not name %s", err, flag)
		}
	}
}

// TestRecorderCheckConfig: --check-config validates without connecting,
// prints the effective values (hiding the password) and says so.
func TestRecorderCheckConfig(t *testing.T) {
	t.Setenv("HOURGLASS_CLICKHOUSE_PASSWORD", "s3cret")
	stdout, stderr, err := cmdtest.Run(t, recordercmd.Run, "--check-config", "--brokers", "127.0.0.1:1", "--clickhouse-addr", "127.0.0.1:1",
		"--topic-prefix", "shop.", "--batch-rows", "100")
	if err != nil {
		t.Fatalf("error %v\nstderr:\n%s", err, stderr)
	}
	for _, want := range []string{"--outcomes-topic=shop.outcomes", "--batch-rows=100 (flag)", "--clickhouse-addr=127.0.0.1:1 (flag)",
		"--clickhouse-password=*** (env)", "--migrate=true (default)", "configuration is valid"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout has no %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "s3cret") {
		t.Error("stdout shows the password")
	}
}

// TestRecorderReportHelp: --help prints the usage, which says why the
// recorder is its own process.
func TestRecorderReportHelp(t *testing.T) {
	for _, tt := range []struct {
		cmd  service.Command
		want string
	}{{recordercmd.Run, "never delays a close"}, {reportcmd.Run, "--late-threshold"}} {
		_, stderr, err := cmdtest.Run(t, tt.cmd, "--help")
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr, tt.want) {
			t.Errorf("help: %v; usage does not mention %q:\n%s", err, tt.want, stderr)
		}
	}
}

// TestRecorderCommand runs `hourglass recorder` against a broker and
// ClickHouse: it creates the schema, records the outcome events produced,
// serves its metrics, and stops cleanly; `hourglass report` then counts
// each attempt once, in text, JSON and HTML.
func TestRecorderCommand(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	broker := c.ListenAddrs()[0]
	ch := chtest.Config(t)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- recordercmd.Run(ctx, []string{"--brokers", broker, "--topic-prefix", "rc.", "--partitions", "2", "--http-addr", addr,
			"--clickhouse-addr", ch.Addr, "--clickhouse-database", ch.Database, "--flush-interval", "50ms",
			"--lag-interval", "200ms", "--log-level", "error"}, io.Discard, io.Discard)
	}()
	scrapeUntil(t, addr, func(m map[string]*dto.MetricFamily) bool { return m["hourglass_recorder_rows_inserted_total"] != nil })

	t0 := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	var recs []*kgo.Record
	for i := range 40 {
		closed := t0.Add(time.Duration(i) * time.Second).UnixMilli()
		e := outcome.Event{V: outcome.Version, TaskID: fmt.Sprint("o", i), Kind: "order-timeout", Outcome: "closed", Path: "1m",
			DueMs: closed - int64(10*i), ClosedMs: closed, LatenessMs: int64(10 * i), Topic: "rc.cancel", Offset: int64(i)}
		if i == 39 {
			e.Outcome, e.Error = "failed", "boom"
		}
		v, _ := e.Marshal()
		recs = append(recs, &kgo.Record{Topic: "rc.outcomes", Key: []byte(e.TaskID), Value: v})
		if i < 5 { // a canceller replay of the same attempt
			e.Outcome, e.ClosedMs, e.LatenessMs = "already_closed", e.ClosedMs+1000, e.LatenessMs+1000
			v, _ = e.Marshal()
			recs = append(recs, &kgo.Record{Topic: "rc.outcomes", Key: []byte(e.TaskID), Value: v})
		}
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	m := scrapeUntil(t, addr, func(m map[string]*dto.MetricFamily) bool {
		return sum(m, "hourglass_recorder_rows_inserted_total", "", "") == 45 && sum(m, "hourglass_consumer_lag_records", "", "") == 0
	})
	if got := sum(m, "hourglass_recorder_insert_errors_total", "", ""); got != 0 {
		t.Errorf("insert errors %v", got)
	}
	checkDocumented(t, "recorder", m)
	for _, name := range []string{"hourglass_recorder_batches_total", "hourglass_recorder_last_insert_timestamp_seconds",
		"hourglass_recorder_buffered_rows", "hourglass_recorder_insert_duration_seconds", "hourglass_consumer_lag_records"} {
		if m[name] == nil {
			t.Errorf("recorder does not expose %s", name)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("recorder: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("recorder did not stop within 30s")
	}

	html := filepath.Join(t.TempDir(), "report.html")
	window := []string{"--clickhouse-addr", ch.Addr, "--clickhouse-database", ch.Database,
		"--from", t0.UTC().Format(time.RFC3339), "--to", t0.Add(time.Hour).UTC().Format(time.RFC3339)}
	stdout, stderr, err := cmdtest.Run(t, reportcmd.Run, append(window, "--format", "json", "--html", html, "--late-threshold", "300ms")...)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, stderr)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, stdout)
	}
	// 39 closes with lateness 0, 10, ..., 380 ms; one failure.
	want := report.Summary{Attempts: 40, Tasks: 40, Final: 39, Failed: 1, Late: 8, DuplicateRows: r.Summary.DuplicateRows,
		Lateness: report.Quantiles{Count: 39, P50: 190, P90: 350, P99: 380, P999: 380, Max: 380}}
	if r.Summary != want {
		t.Errorf("summary %+v, want %+v", r.Summary, want)
	}
	page, err := os.ReadFile(html)
	if err != nil || !bytes.Contains(page, []byte(`id="lateness-chart"`)) {
		t.Errorf("HTML report %s: %v, or no lateness chart", html, err)
	}
	stdout, _, err = cmdtest.Run(t, reportcmd.Run, window...)
	if err != nil || !strings.Contains(stdout, "Attempts 40 (tasks 40): final 39, retried 0, failed 1") || !strings.Contains(stdout, "Open deadlines due from") {
		t.Errorf("text report (%v):\n%s", err, stdout)
	}
	// The report of a database without the schema says how to create it.
	_, _, err = cmdtest.Run(t, reportcmd.Run, "--clickhouse-addr", ch.Addr, "--clickhouse-database", ch.Database+"_none", "--since", "1h")
	if err == nil || !strings.Contains(err.Error(), "hourglass recorder") {
		t.Errorf("report of a database without tables: %v, want a hint to run the recorder", err)
	}
}

// TestRecorderWaitsForClickHouse: at start the recorder waits for a
// ClickHouse that does not answer, alive (/healthz) but not ready (/readyz),
// and stops cleanly while waiting; a server that refuses the password fails
// it at once.
func TestRecorderWaitsForClickHouse(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	args := []string{"--brokers", c.ListenAddrs()[0], "--http-addr", "", "--clickhouse-dial-timeout", "500ms"}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncbuf.Buffer
	done := make(chan error, 1)
	httpAddr := freeAddr(t)
	go func() {
		done <- recordercmd.Run(ctx, append(args, "--clickhouse-addr", freeAddr(t), "--http-addr", httpAddr), io.Discard, &stderr)
	}()
	poll.Until(t, 30*time.Second, "a logged retry", func() bool {
		return strings.Contains(stderr.String(), "ClickHouse is not available; retrying")
	}, stderr.String)
	status := func(path string) int {
		resp, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	poll.Until(t, 10*time.Second, "/healthz 200 while waiting for ClickHouse", func() bool { return status("/healthz") == http.StatusOK }, nil)
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz while waiting for ClickHouse: %d, want 503", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("stopped while waiting: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the recorder did not stop while waiting for ClickHouse")
	}

	ch := chtest.Config(t)
	_, _, err = cmdtest.Run(t, recordercmd.Run, append(args, "--clickhouse-addr", ch.Addr, "--clickhouse-database", ch.Database, "--clickhouse-password", "wrong")...)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "password") {
		t.Errorf("wrong password: %v, want an error about the password", err)
	}
}

// TestRecorderMigrateOnly: --migrate-only applies the schema and exits
// without touching Kafka (the brokers here do not exist), for a migration
// Job; a second run finds nothing to do.
func TestRecorderMigrateOnly(t *testing.T) {
	ch := chtest.Config(t)
	for range 2 {
		stdout, stderr, err := cmdtest.Run(t, recordercmd.Run, "--migrate-only", "--brokers", "127.0.0.1:1",
			"--clickhouse-addr", ch.Addr, "--clickhouse-database", ch.Database)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if want := fmt.Sprintf("schema of %s is at version %d", ch.Database, chstore.SchemaVersion()); !strings.Contains(stdout, want) {
			t.Errorf("stdout %q, want %q", stdout, want)
		}
	}
	s := chtest.OpenConfig(t, ch)
	applied, err := s.Migrations(context.Background())
	if err != nil || len(applied) == 0 || applied[len(applied)-1].Version != chstore.SchemaVersion() {
		t.Errorf("migrations %+v (%v), want up to version %d", applied, err, chstore.SchemaVersion())
	}
	_, _, err = cmdtest.Run(t, recordercmd.Run, "--migrate-only", "--migrate=false")
	if err == nil || !strings.Contains(err.Error(), "--migrate-only") {
		t.Errorf("--migrate-only --migrate=false: %v", err)
	}
}

// TestRecorderMigrateOnlyStopped: a migration Job stopped while ClickHouse
// does not answer fails saying so, naming the address and the last error,
// not with a bare "context canceled".
func TestRecorderMigrateOnlyStopped(t *testing.T) {
	addr := freeAddr(t) // nothing listens there
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := recordercmd.Run(ctx, []string{"--migrate-only", "--clickhouse-addr", addr}, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("--migrate-only stopped before ClickHouse answered: nil, want an error")
	}
	for _, want := range []string{"ClickHouse", addr, "refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
