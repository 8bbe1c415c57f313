package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
	"github.com/hourglass/hourglass/internal/testutil/poll"
)

// broker is the address of the kfake broker the package's tests share.
var broker string

func TestMain(m *testing.M) {
	kfaketest.Main(m, func(c *kfake.Cluster) { broker = c.ListenAddrs()[0] }, kfake.GroupMinSessionTimeout(time.Second))
}

// The scenario both runs share: 5 s at 500 tasks/s, every task waiting in
// the router's timer (below the smallest tier, or between the tiers), so
// that a router that cannot hold them is late by up to a tier.
const (
	tierList = "1s,2s"
	rate     = "500"
	duration = "5s"
	maxDelay = "2s"
	mix      = "below_smallest:1,between_tiers:1"
	// maxP99 is the lateness threshold: far above a healthy pipeline's
	// (tens of ms on a busy machine), far below the slowed router's
	// (hundreds of ms).
	maxP99 = "300ms"
	// k6Timeout bounds one k6 run: the scenario, then teardown's wait for
	// the outcomes (the longest delay and WAIT, 10s).
	k6Timeout = 90 * time.Second
)

// TestThresholds runs the scenario twice: against a healthy pipeline k6
// exits 0; against a router that may hold one record per partition and one
// in its timer, k6 exits 99 (thresholds crossed) on
// hourglass_close_lateness.
func TestThresholds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds k6 and runs two load tests of about 20 s")
	}
	bin := buildBinaries(t)
	tests := []struct {
		name       string
		routerArgs []string
		wantCode   int
		want       *regexp.Regexp
	}{
		{"healthy", nil, 0, regexp.MustCompile(`hourglass_close_lateness\s+✓ 'p\(99\)<300'`)},
		{"slowed router", []string{"--max-held-per-partition", "1", "--timer-capacity", "1"}, 99,
			regexp.MustCompile(`hourglass_close_lateness\s+✗ 'p\(99\)<300'`)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := fmt.Sprintf("e2e%d.", i)
			startPipeline(t, bin, prefix, tt.routerArgs)
			code, out := runK6(t, bin, prefix)
			if code != tt.wantCode || !tt.want.MatchString(out) {
				t.Fatalf("k6 exited %d, want %d, with output matching %q:\n%s", code, tt.wantCode, tt.want, out)
			}
			t.Logf("k6 exited %d:\n%s", code, thresholdLines(out))
		})
	}
}

// buildBinaries builds k6 (with the extension) and hourglass, without the
// race detector, into a temporary directory.
func buildBinaries(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build k6 and hourglass with")
	}
	bin := t.TempDir()
	for _, b := range []struct{ dir, pkg, out string }{
		{"..", "./cmd/k6", "k6"},
		{"../..", "./cmd/hourglass", "hourglass"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, gobin, "build", "-o", filepath.Join(bin, b.out), b.pkg)
		cmd.Dir = b.dir
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return bin
}

// startPipeline starts the router (with extra args) and the canceller
// (which closes every order) on the topics under prefix, waits until both
// groups are stable with their partitions assigned, and stops them when
// the test ends.
func startPipeline(t *testing.T, bin, prefix string, routerArgs []string) {
	t.Helper()
	// Port 0: the services' HTTP servers take any free port. The test
	// does not call them, and a port found free beforehand can be taken
	// by another process before the service binds it.
	common := []string{"--brokers", broker, "--tiers", tierList, "--topic-prefix", prefix, "--partitions", "3", "--log-level", "warn", "--http-addr", "127.0.0.1:0"}
	for _, s := range []struct {
		name string
		args []string
	}{
		{"router", append(append([]string{"router", "--group", prefix + "router"}, common...), routerArgs...)},
		{"canceller", append([]string{"canceller", "--group", prefix + "canceller"}, common...)},
	} {
		cmd := exec.Command(filepath.Join(bin, "hourglass"), s.args...)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", s.name, err)
		}
		t.Cleanup(func() { stop(t, s.name, cmd, &logs) })
	}
	waitGroups(t, prefix+"router", prefix+"canceller")
}

// stop stops cmd with SIGTERM, then SIGKILL after 20 s, and logs its output
// when the test failed.
func stop(t *testing.T, name string, cmd *exec.Cmd, logs *bytes.Buffer) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		err = <-done
	}
	if t.Failed() {
		t.Logf("%s (%v) output:\n%s", name, err, logs.String())
	}
}

// waitGroups waits, at most 60 s, until every group is stable with every
// member assigned partitions, so that the run does not measure the join.
func waitGroups(t *testing.T, groups ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var described kadm.DescribedGroups
	poll.Until(t, 60*time.Second, fmt.Sprintf("groups %v stable", groups), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := adm.DescribeGroups(ctx, groups...)
		described = d
		return err == nil && stable(d, groups)
	}, func() string { return fmt.Sprintf("%+v", described) })
}

func stable(described kadm.DescribedGroups, groups []string) bool {
	for _, g := range groups {
		d, ok := described[g]
		if !ok || d.Err != nil || d.State != "Stable" || len(d.Members) == 0 {
			return false
		}
		for _, m := range d.Members {
			if a, ok := m.Assigned.AsConsumer(); !ok || len(a.Topics) == 0 {
				return false
			}
		}
	}
	return true
}

// runK6 runs scripts/constant.js against the pipeline under prefix and
// returns k6's exit code and output.
func runK6(t *testing.T, bin, prefix string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), k6Timeout)
	defer cancel()
	dir := t.TempDir()
	args := []string{"run", "--quiet", "--no-color"}
	for _, kv := range []string{
		"BROKERS=" + broker, "PREFIX=" + prefix, "TIERS=" + tierList, "RATE=" + rate, "DURATION=" + duration,
		"MAX_DELAY=" + maxDelay, "MIX=" + mix, "PAID=0", "MANIFEST=" + filepath.Join(dir, "manifest.jsonl"),
		"WAIT=10s", "MAX_P99=" + maxP99, "RUN_ID=" + strings.TrimSuffix(prefix, "."),
	} {
		args = append(args, "-e", kv)
	}
	script, err := filepath.Abs("../scripts/constant.js")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "k6"), append(args, script)...)
	cmd.Dir = dir
	// k6 must never reach the internet.
	cmd.Env = append(os.Environ(), "K6_NO_USAGE_REPORT=true", "K6_AUTO_EXTENSION_RESOLUTION=false", "K6_BINARY_PROVISIONING=false")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case ctx.Err() != nil:
		t.Fatalf("k6 did not finish within %v:\n%s", k6Timeout, out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	default:
		t.Fatalf("k6: %v\n%s", err, out)
	}
	return 0, ""
}

// thresholdLines returns the THRESHOLDS section of k6's summary.
func thresholdLines(out string) string {
	start := strings.Index(out, "THRESHOLDS")
	end := strings.Index(out, "TOTAL RESULTS")
	if start < 0 || end < start {
		return out
	}
	return out[start:end]
}
