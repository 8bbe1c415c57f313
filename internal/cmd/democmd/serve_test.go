package democmd_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/democmd"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// demoOutput is a bytes.Buffer that a running command writes to while the
// test reads it.
type demoOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *demoOutput) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *demoOutput) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitDemoOutput polls out until re matches, for at most d, and returns the
// submatches.
func waitDemoOutput(t *testing.T, out *demoOutput, re *regexp.Regexp, d time.Duration) []string {
	t.Helper()
	var m []string
	poll.Until(t, d, "a match for "+re.String(), func() bool {
		m = re.FindStringSubmatch(out.String())
		return m != nil
	}, func() string { return "output:\n" + out.String() })
	return m
}

// storeCall makes one request to the demo's order store and returns the
// status and body.
func storeCall(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestDemoServeStore runs `demo --serve --store-addr`: the order store's
// HTTP endpoint sets and pays orders, and the pipeline honours it: a paid
// order is skipped (PAID), an unpaid one closed, and a payment after the
// close is refused.
func TestDemoServeStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut demoOutput
	done := make(chan error, 1)
	go func() {
		done <- democmd.Run(ctx, []string{"--serve", "--orders", "0", "--listen", "127.0.0.1:0",
			"--store-addr", "127.0.0.1:0", "--tiers", "1s,2s", "--partitions", "1"}, &out, &errOut)
	}()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			if err := <-done; err != nil {
				t.Logf("demo: %v", err)
			}
		}
	}()

	broker := waitDemoOutput(t, &out, regexp.MustCompile(`embedded Kafka broker on (127\.0\.0\.1:\d+)`), 30*time.Second)[1]
	store := "http://" + waitDemoOutput(t, &out, regexp.MustCompile(`order store API on http://(127\.0\.0\.1:\d+)`), 30*time.Second)[1]
	waitDemoOutput(t, &out, regexp.MustCompile(`keeps running`), 30*time.Second)

	// Requests that do not need the pipeline.
	for _, tt := range []struct {
		name, method, path, body string
		wantStatus               int
		wantBody                 string
	}{
		{"set paid", "PUT", "/orders/o-paid", "paid", http.StatusNoContent, ""},
		{"read paid", "GET", "/orders/o-paid", "", http.StatusOK, "PAID"},
		{"set unpaid, any case and space", "PUT", "/orders/o-unpaid", " UnPaid\n", http.StatusNoContent, ""},
		{"read unpaid", "GET", "/orders/o-unpaid", "", http.StatusOK, "UNPAID"},
		{"bad state", "PUT", "/orders/o-x", "closed", http.StatusBadRequest, `body must be "unpaid" or "paid"`},
		{"body too long", "PUT", "/orders/o-x", strings.Repeat("p", 100), http.StatusBadRequest, "read body"},
		{"bad state not stored", "GET", "/orders/o-x", "", http.StatusNotFound, "unknown order"},
		{"pay unknown", "POST", "/orders/o-unknown/pay", "", http.StatusNotFound, "unknown order"},
		{"set then pay: set", "PUT", "/orders/o-pay", "unpaid", http.StatusNoContent, ""},
		{"set then pay: pay", "POST", "/orders/o-pay/pay", "", http.StatusNoContent, ""},
		{"set then pay: paid", "GET", "/orders/o-pay", "", http.StatusOK, "PAID"},
		{"pay twice", "POST", "/orders/o-pay/pay", "", http.StatusConflict, "PAID"},
		{"escaped id", "PUT", "/orders/a%2Fb", "paid", http.StatusNoContent, ""},
		{"escaped id read", "GET", "/orders/a%2Fb", "", http.StatusOK, "PAID"},
		{"method not allowed", "DELETE", "/orders/o-paid", "", http.StatusMethodNotAllowed, ""},
	} {
		status, body := storeCall(t, tt.method, store+tt.path, tt.body)
		if status != tt.wantStatus || (tt.wantBody != "" && !strings.Contains(body, tt.wantBody)) {
			t.Errorf("%s: %s %s: %d %q, want %d %q", tt.name, tt.method, tt.path, status, body, tt.wantStatus, tt.wantBody)
		}
	}

	// Schedule the paid and the unpaid order, and an order the store does
	// not know (closed: the demo store closes unknown orders).
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	table, _ := tiers.Parse("1s,2s")
	s, err := tiers.NewScheduler(cl, table)
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(300 * time.Millisecond)
	for _, id := range []string{"o-paid", "o-unpaid", "o-new"} {
		if err := s.Schedule(ctx, tiers.Task{ID: id, Due: due}); err != nil {
			t.Fatal(err)
		}
	}

	want := map[string]string{"o-paid": "skipped PAID", "o-unpaid": "closed ", "o-new": "closed "}
	got := readDemoOutcomes(ctx, t, broker, len(want))
	for id, w := range want {
		if got[id] != w {
			t.Errorf("outcome of %s = %q, want %q", id, got[id], w)
		}
	}

	// The close won: a payment now is refused with the state.
	if status, body := storeCall(t, "POST", store+"/orders/o-unpaid/pay", ""); status != http.StatusConflict || body != "CLOSED" {
		t.Errorf("pay after close: %d %q, want 409 CLOSED", status, body)
	}
	if status, body := storeCall(t, "GET", store+"/orders/o-new", ""); status != http.StatusOK || body != "CLOSED" {
		t.Errorf("unknown order after its deadline: %d %q, want 200 CLOSED", status, body)
	}

	cancel()
	stopped = true
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo: %v\nstderr:\n%s", err, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo did not stop within 30s of its context's end")
	}
	if _, err := http.Get(store + "/orders/o-paid"); err == nil {
		t.Errorf("the order store still answers after the demo stopped")
	}
}

// readDemoOutcomes reads the outcomes topic from its start until n tasks have an
// outcome, for at most 30 s, and returns "outcome detail" by task id.
func readDemoOutcomes(ctx context.Context, t *testing.T, broker string, n int) map[string]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(tiers.OutcomesTopic(tiers.DefaultPrefix)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := map[string]string{}
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("outcomes of %d tasks within 30s, want %d: %v", len(got), n, got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			ev, err := outcome.Unmarshal(r.Value)
			if err != nil {
				t.Errorf("outcome %s: %v", r.Value, err)
				return
			}
			if _, seen := got[ev.TaskID]; !seen {
				got[ev.TaskID] = string(ev.Outcome) + " " + ev.Detail
			}
		})
	}
	return got
}

// TestDemoStoreAddrBad: --store-addr must be a loopback host and port.
func TestDemoStoreAddrBad(t *testing.T) {
	for _, tt := range []struct{ name, addr, want string }{
		{"not host:port", "nope", `"nope": want 127.0.0.1:port`},
		{"not loopback", "192.0.2.1:8080", "loopback only"},
		{"bad port", "127.0.0.1:http", "bad port"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := cmdtest.Run(t, democmd.Run, "--serve", "--orders", "0", "--store-addr", tt.addr)
			var ue service.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("error %T %v, want an service.UsageError", err, err)
			}
			for _, w := range []string{"--store-addr", tt.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
