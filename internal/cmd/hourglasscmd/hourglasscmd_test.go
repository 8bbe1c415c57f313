package hourglasscmd_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/cmd/cancellercmd"
	"github.com/hourglass/hourglass/internal/cmd/hourglasscmd"
	"github.com/hourglass/hourglass/internal/cmd/routercmd"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
)

// topics runs `hourglass topics args...`.
func topics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return hourglasscmd.Run(ctx, append([]string{"topics"}, args...), stdout, stderr)
}

// demo runs `hourglass demo args...`.
func demo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return hourglasscmd.Run(ctx, append([]string{"demo"}, args...), stdout, stderr)
}

// consoleCmd runs `hourglass console args...`.
func consoleCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return hourglasscmd.Run(ctx, append([]string{"console"}, args...), stdout, stderr)
}

// TestBadConfig checks that every command rejects bad flag and environment
// values before it connects to anything, with an service.UsageError (exit 2)
// that names the flag, and the environment variable when one was used.
func TestBadConfig(t *testing.T) {
	tests := []cmdtest.BadConfigCase{
		{"router tiers not a duration", routercmd.Run, []string{"--tiers", "1x"}, nil, []string{"--tiers", `"1x"`}},
		{"router tiers twice", routercmd.Run, []string{"--tiers", "5m,5m"}, nil, []string{"--tiers", "5m"}},
		{"router tiers empty", routercmd.Run, []string{"--tiers", ""}, nil, []string{"--tiers"}},
		{"router negative max delay", routercmd.Run, []string{"--max-delay", "-1s"}, nil, []string{"--max-delay", "-1s"}},
		{"router max delay not a duration", routercmd.Run, []string{"--max-delay", "abc"}, nil, []string{"--max-delay", `"abc"`}},
		{"router zero partitions", routercmd.Run, []string{"--partitions", "0"}, nil, []string{"--partitions", "0"}},
		{"router loud log level", routercmd.Run, []string{"--log-level", "loud"}, nil, []string{"--log-level", `"loud"`}},
		{"router broker without port", routercmd.Run, []string{"--brokers", "foo"}, nil, []string{"--brokers", `"foo"`}},
		{"router unknown flag", routercmd.Run, []string{"--nope"}, nil, []string{"nope"}},
		{"router extra argument", routercmd.Run, []string{"--tiers", "1m", "extra"}, nil, []string{"extra"}},
		{"router tiers from env", routercmd.Run, nil, map[string]string{"HOURGLASS_TIERS": "bad"}, []string{"--tiers", "HOURGLASS_TIERS", `"bad"`}},
		{"router max delay from env", routercmd.Run, nil, map[string]string{"HOURGLASS_MAX_DELAY": "abc"}, []string{"--max-delay", "HOURGLASS_MAX_DELAY", `"abc"`}},
		{"canceller closers file missing", cancellercmd.Run, []string{"--closers", "/nonexistent/closers.yaml"}, nil, []string{"--closers", "/nonexistent/closers.yaml", "no such file"}},
		{"canceller negative rate limit", cancellercmd.Run, []string{"--rate-limit", "-5"}, nil, []string{"--rate-limit", "-5"}},
		{"canceller rate limit not a number", cancellercmd.Run, []string{"--rate-limit", "fast"}, nil, []string{"--rate-limit", `"fast"`}},
		{"canceller negative in flight", cancellercmd.Run, []string{"--max-in-flight", "-1"}, nil, []string{"--max-in-flight"}},
		{"canceller in-flight bytes too few", cancellercmd.Run, []string{"--max-in-flight-bytes", "100"}, nil, []string{"--max-in-flight-bytes"}},
		{"router batch window too long", routercmd.Run, []string{"--batch-window", "2s"}, nil, []string{"--batch-window"}},
		{"canceller backoff max below backoff", cancellercmd.Run, []string{"--retry-backoff", "1m", "--retry-backoff-max", "1s"}, nil, []string{"--retry-backoff-max"}},
		{"canceller tiers not a duration", cancellercmd.Run, []string{"--tiers", "1x"}, nil, []string{"--tiers", `"1x"`}},
		{"canceller zero partitions", cancellercmd.Run, []string{"--partitions", "0"}, nil, []string{"--partitions"}},
		{"canceller loud log level", cancellercmd.Run, []string{"--log-level", "loud"}, nil, []string{"--log-level", `"loud"`}},
		{"canceller broker without port", cancellercmd.Run, []string{"--brokers", "foo"}, nil, []string{"--brokers", `"foo"`}},
		{"canceller closers from env", cancellercmd.Run, nil, map[string]string{"HOURGLASS_CLOSERS": "/nonexistent/c.yaml"}, []string{"--closers", "HOURGLASS_CLOSERS", "/nonexistent/c.yaml"}},
		{"topics tiers not a duration", topics, []string{"--tiers", "1x"}, nil, []string{"--tiers", `"1x"`}},
		{"topics tiers twice", topics, []string{"--tiers", "5m,5m"}, nil, []string{"--tiers"}},
		{"topics zero partitions", topics, []string{"--partitions", "0"}, nil, []string{"--partitions", "0"}},
		{"topics broker without port", topics, []string{"--brokers", "foo"}, nil, []string{"--brokers", `"foo"`}},
		{"topics tiers from env", topics, nil, map[string]string{"HOURGLASS_TIERS": "bad"}, []string{"--tiers", "HOURGLASS_TIERS", `"bad"`}},
		{"topics partitions from env", topics, nil, map[string]string{"HOURGLASS_PARTITIONS": "0"}, []string{"--partitions", "HOURGLASS_PARTITIONS"}},
		{"demo negative max delay", demo, []string{"--max-delay", "-1s"}, nil, []string{"--max-delay"}},
		{"demo listen not host:port", demo, []string{"--listen", "nope"}, nil, []string{"--listen"}},
		{"demo listen not loopback", demo, []string{"--listen", "192.0.2.1:9092"}, nil, []string{"--listen"}},
		{"console actions beyond loopback", consoleCmd, []string{"--listen", "0.0.0.0:8089", "--allow-actions"}, nil, []string{"--allow-actions", "--token-file", "--console-tls-client-ca"}},
		{"console listen without host", consoleCmd, []string{"--listen", ":8089"}, nil, []string{"--listen"}},
		{"console zero rows", consoleCmd, []string{"--max-rows", "0"}, nil, []string{"--max-rows"}},
		{"console key without cert", consoleCmd, []string{"--console-tls-key", "k.pem"}, nil, []string{"--console-tls-key", "--console-tls-cert"}},
		{"console token file missing", consoleCmd, []string{"--token-file", "/nonexistent/token", "--check-config"}, nil, []string{"--token-file", "no such file"}},
		{"console actions from env", consoleCmd, []string{"--listen", "0.0.0.0:8089"}, map[string]string{"HOURGLASS_CONSOLE_ALLOW_ACTIONS": "true"}, []string{"--allow-actions", "HOURGLASS_CONSOLE_ALLOW_ACTIONS"}},
		{"unknown command", hourglasscmd.Run, []string{"nope"}, nil, []string{`"nope"`}},
		{"no command", hourglasscmd.Run, nil, nil, []string{"no command"}},
	}
	cmdtest.CheckBadConfig(t, tests, func(t *testing.T, stdout string) {
		if strings.Contains(stdout, "configuration is valid") {
			t.Errorf("stdout says the configuration is valid:\n%s", stdout)
		}
	})
}

// TestBadConfigAllReported checks that validation reports every problem at
// once, not only the first.
func TestBadConfigAllReported(t *testing.T) {
	_, _, err := cmdtest.Run(t, routercmd.Run, "--tiers", "1x", "--partitions", "0", "--log-level", "loud", "--brokers", "foo")
	var ue service.UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("error %T %v, want an service.UsageError", err, err)
	}
	for _, flag := range []string{"--tiers", "--partitions", "--log-level", "--brokers"} {
		if !strings.Contains(err.Error(), flag) {
			t.Errorf("error %q does not name %s", err, flag)
		}
	}
}

// TestClosersFile: the canceller reports the problems of its closers file
// under --closers, each with its place in the file, and accepts a good one.
func TestClosersFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("closers:\n  order-timeout:\n    sql: {driver: oracle, dsn: {env: HOURGLASS_TEST_UNSET_DSN}}\n  reminder:\n    kafka: {topic: sms}\n    http: {url: 'http://127.0.0.1/{id}'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := cmdtest.Run(t, cancellercmd.Run, "--closers", bad)
	var ue service.UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("error %T %v, want an service.UsageError", err, err)
	}
	for _, w := range []string{"--closers", bad, "closers.order-timeout.sql.driver", "HOURGLASS_TEST_UNSET_DSN", "closers.reminder: set exactly one"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}

	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("closers:\n  order-timeout:\n    http: {url: 'http://127.0.0.1:1/orders/{id}/close'}\n  audit:\n    log: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := cmdtest.Run(t, cancellercmd.Run, "--check-config", "--closers", good)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "--closers="+good+" (flag)") {
		t.Errorf("stdout does not show --closers:\n%s", stdout)
	}
}

// TestCheckConfig checks that --check-config with a valid configuration
// returns nil without connecting, prints the effective values and says the
// configuration is valid; flags win over environment variables.
func TestCheckConfig(t *testing.T) {
	// A bad value in the environment is overridden by the flag.
	t.Setenv("HOURGLASS_TIERS", "bad")
	tests := []struct {
		name string
		cmd  service.Command
		args []string
		want []string // lines of stdout
	}{
		{"router", routercmd.Run, []string{
			"--check-config", "--brokers", "127.0.0.1:1", "--tiers", "500ms,2s,1s", "--max-delay", "48h",
			"--partitions", "3", "--log-level", "warn", "--http-addr", "127.0.0.1:0", "--session-timeout", "2s",
		}, []string{"--tiers=500ms,2s,1s (flag)", "--max-delay=48h0m0s (flag)", "--partitions=3 (flag)", "--target=hourglass.cancel (default)",
			"--group=hourglass-router (default)"}},
		{"canceller", cancellercmd.Run, []string{
			"--check-config", "--brokers", "127.0.0.1:1", "--topic-prefix", "shop.", "--log-level", "debug",
			"--tiers", "1m,5m", "--rate-limit", "250.5", "--max-in-flight", "50",
		}, []string{"--topic-prefix=shop. (flag)", "--rate-limit=250.5 (flag)", "--max-in-flight=50 (flag)", "--max-attempts=10 (default)",
			"--group=shop-canceller (default)"}},
		{"router with a prefix", routercmd.Run, []string{
			"--check-config", "--brokers", "127.0.0.1:1", "--topic-prefix", "nc.", "--tiers", "1m",
		}, []string{"--group=nc-router (default)"}},
		{"router with a prefix and a group", routercmd.Run, []string{
			"--check-config", "--brokers", "127.0.0.1:1", "--topic-prefix", "nc.", "--group", "orders-router", "--tiers", "1m",
		}, []string{"--group=orders-router (flag)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := cmdtest.Run(t, tt.cmd, tt.args...)
			if err != nil {
				t.Fatalf("error %v, want nil\nstderr:\n%s", err, stderr)
			}
			if !strings.HasSuffix(stdout, "configuration is valid\n") {
				t.Errorf("stdout does not end with %q:\n%s", "configuration is valid", stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w+"\n") {
					t.Errorf("stdout has no line %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestHelp checks that --help prints the usage and is not an error (exit
// 0).
func TestHelp(t *testing.T) {
	tests := []struct {
		name string
		cmd  service.Command
		args []string
		want string // in the usage
	}{
		{"router", routercmd.Run, []string{"--help"}, "--tiers"},
		{"canceller", cancellercmd.Run, []string{"-h"}, "--closers"},
		{"hourglass", hourglasscmd.Run, []string{"--help"}, "demo"},
		{"hourglass topics", hourglasscmd.Run, []string{"topics", "--help"}, "--tiers"},
		{"hourglass demo", hourglasscmd.Run, []string{"demo", "--help"}, "--orders"},
		{"hourglass router", hourglasscmd.Run, []string{"router", "--help"}, "--max-delay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := cmdtest.Run(t, tt.cmd, tt.args...)
			if err != nil && !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("error %v, want nil or flag.ErrHelp", err)
			}
			if !strings.Contains(stdout+stderr, tt.want) {
				t.Errorf("usage does not mention %q:\n%s%s", tt.want, stdout, stderr)
			}
		})
	}
}

// TestDemo runs the demo end to end on its embedded broker: every order
// gets an outcome and none closes early.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a pipeline for a few seconds")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err := hourglasscmd.Run(ctx, []string{"demo", "--listen", "127.0.0.1:0", "--orders", "40", "--rate", "200", "--max-delay", "2s", "--min-delay", "100ms"}, &out, &errOut)
	if err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	summary := regexp.MustCompile(`(?m)^Summary after \d+s: (\d+) orders scheduled, .*, (\d+) pending$`).FindStringSubmatch(out.String())
	switch {
	case summary == nil:
		t.Errorf("no summary line in the output:\n%s", out.String())
	case summary[1] != "40" || summary[2] != "0":
		t.Errorf("summary %q: want 40 orders scheduled and 0 pending", summary[0])
	}
	if !regexp.MustCompile(`(?m)closed early: 0;`).MatchString(out.String()) {
		t.Errorf("output does not report %q:\n%s", "closed early: 0", out.String())
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", errOut.String())
	}
}

// TestZeroIsReported: a zero flag value is the user's, not a request for the
// default, and is reported rather than silently replaced.
func TestZeroIsReported(t *testing.T) {
	for _, tt := range []struct {
		cmd  service.Command
		args []string
		flag string
	}{
		{routercmd.Run, []string{"--max-delay=0"}, "--max-delay"},
		{routercmd.Run, []string{"--timer-capacity=0"}, "--timer-capacity"},
		{routercmd.Run, []string{"--group="}, "--group"},
		{routercmd.Run, []string{"--topic-prefix="}, "--topic-prefix"},
		{cancellercmd.Run, []string{"--default-kind="}, "--default-kind"},
		{cancellercmd.Run, []string{"--max-poll-records=0"}, "--max-poll-records"},
	} {
		_, _, err := cmdtest.Run(t, tt.cmd, append([]string{"--check-config"}, tt.args...)...)
		var ue service.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.flag) {
			t.Errorf("%v: got %v, want a usage error naming %s", tt.args, err, tt.flag)
		}
	}
}

// TestEachProblemOnce: a bad value is reported once, not once by each
// check that sees it, and a --tiers that does not parse is not also
// reported as "no tiers".
func TestEachProblemOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  service.Command
		args []string
		flag string
	}{
		{"router session timeout", routercmd.Run, []string{"--session-timeout", "0s"}, "--session-timeout"},
		{"canceller session timeout", cancellercmd.Run, []string{"--session-timeout", "1h"}, "--session-timeout"},
		{"router fetch bytes", routercmd.Run, []string{"--fetch-partition-bytes", "0"}, "--fetch-partition-bytes"},
		{"router tiers twice", routercmd.Run, []string{"--tiers", "1m,60s"}, "--tiers"},
		{"canceller tiers twice", cancellercmd.Run, []string{"--tiers", "1m,60s"}, "--tiers"},
		{"canceller tiers not a duration", cancellercmd.Run, []string{"--tiers", "1x"}, "--tiers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := cmdtest.Run(t, tc.cmd, tc.args...)
			var ue service.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("error %T %v, want a service.UsageError", err, err)
			}
			if n := strings.Count(err.Error(), tc.flag+" "); n != 1 {
				t.Errorf("%s reported %d times:\n%v", tc.flag, n, err)
			}
		})
	}
}
