package hourglasscmd_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/cancellercmd"
	"github.com/hourglass/hourglass/internal/cmd/routercmd"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// documented are the series docs/metrics.md lists, by service. The test
// checks that each is exposed and that docs/metrics.md names it.
// metricsDoc is the page that lists every series.
const metricsDoc = "../../../docs/metrics.md"

var documented = map[string][]string{
	"router": {
		"hourglass_router_forwarded_total", "hourglass_router_hopped_total", "hourglass_router_dead_letters_total",
		"hourglass_router_handed_off_total", "hourglass_router_early_forwards_total", "hourglass_router_forward_lateness_seconds",
		"hourglass_router_tier_overrun_seconds", "hourglass_router_held_records", "hourglass_router_timer_records",
		"hourglass_router_paused_partitions", "hourglass_consumer_fetch_failing_seconds",
		"hourglass_consumer_lag_records", "hourglass_kafka_connects_total", "hourglass_kafka_produce_bytes_total",
		"hourglass_kafka_fetch_bytes_total",
	},
	"canceller": {
		"hourglass_canceller_closes_total", "hourglass_canceller_close_duration_seconds", "hourglass_canceller_close_lateness_seconds",
		"hourglass_canceller_dead_letters_total", "hourglass_canceller_closes_in_flight", "hourglass_canceller_early_closes_total",
		"hourglass_consumer_fetch_failing_seconds", "hourglass_consumer_lag_records", "hourglass_kafka_connects_total", "hourglass_kafka_fetch_bytes_total",
	},
}

// TestMetrics runs the router and canceller commands on a broker, schedules
// orders (and one malformed record) and scrapes both /metrics endpoints until
// the counters show every order closed.
func TestMetrics(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	broker := c.ListenAddrs()[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	raddr, caddr := freeAddr(t), freeAddr(t)
	// The router and the canceller share the tiers: the canceller waits
	// for the delay topics of its own, which the router creates.
	common := []string{"--brokers", broker, "--topic-prefix", "m.", "--tiers", "1s,2s", "--partitions", "2", "--log-level", "error",
		"--lag-interval", "200ms", "--session-timeout", "6s"}
	done := make(chan error, 2)
	go func() {
		done <- routercmd.Run(ctx, append([]string{"--http-addr", raddr}, common...), io.Discard, io.Discard)
	}()
	go func() {
		done <- cancellercmd.Run(ctx, append([]string{"--http-addr", caddr}, common...), io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("service: %v", err)
			}
		}
	}()

	// Wait until both are up, so the topics exist.
	scrapeUntil(t, raddr, func(m map[string]*dto.MetricFamily) bool { return m["hourglass_router_forwarded_total"] != nil })
	scrapeUntil(t, caddr, func(m map[string]*dto.MetricFamily) bool { return m["hourglass_canceller_closes_total"] != nil })

	prod, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	table, _ := tiers.Parse("1s,2s")
	s, _ := tiers.NewScheduler(prod, table, tiers.WithPrefix("m."))
	const n = 20
	for i := range n {
		if err := s.Schedule(ctx, tiers.Task{ID: fmt.Sprint("m", i), Due: time.Now().Add([]time.Duration{0, 700 * time.Millisecond, 3200 * time.Millisecond}[i%3])}); err != nil {
			t.Fatal(err)
		}
	}
	bad := &kgo.Record{Topic: tiers.Topic("m.", time.Second), Key: []byte("bad")}
	if err := prod.ProduceSync(ctx, bad).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cm := scrapeUntil(t, caddr, func(m map[string]*dto.MetricFamily) bool {
		return sum(m, "hourglass_canceller_closes_total", "outcome", "closed") == n && m["hourglass_consumer_lag_records"] != nil
	})
	rm := scrapeUntil(t, raddr, func(m map[string]*dto.MetricFamily) bool {
		return sum(m, "hourglass_router_forwarded_total", "", "") == n && m["hourglass_consumer_lag_records"] != nil
	})
	for _, check := range []struct {
		fams       map[string]*dto.MetricFamily
		name       string
		label, val string
		want       float64
	}{
		{rm, "hourglass_router_dead_letters_total", "reason", "due_missing", 1},
		{rm, "hourglass_router_early_forwards_total", "", "", 0},
		{rm, "hourglass_router_forward_lateness_seconds", "", "", n},
		{rm, "hourglass_router_held_records", "", "", 0},
		{rm, "hourglass_router_timer_records", "", "", 0},
		{cm, "hourglass_canceller_early_closes_total", "", "", 0},
		{cm, "hourglass_canceller_close_lateness_seconds", "", "", n},
		{cm, "hourglass_canceller_close_duration_seconds", "", "", n},
		{cm, "hourglass_canceller_closes_in_flight", "", "", 0},
	} {
		if got := sum(check.fams, check.name, check.label, check.val); got != check.want {
			t.Errorf("%s{%s=%q} = %v, want %v", check.name, check.label, check.val, got, check.want)
		}
	}
	if sum(rm, "hourglass_router_hopped_total", "", "") == 0 {
		t.Error("no hops counted; orders due in 3.2s must hop from the 2s tier to the 1s tier")
	}

	readme, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	for svc, fams := range map[string]map[string]*dto.MetricFamily{"router": rm, "canceller": cm} {
		for _, name := range documented[svc] {
			if fams[name] == nil {
				t.Errorf("%s does not expose %s", svc, name)
			}
			// franz-go's series are listed by their suffix in one row.
			if doc := "`" + strings.TrimPrefix(name, "hourglass_kafka_") + "`"; !strings.Contains(string(readme), doc) {
				t.Errorf("%s does not document %s", metricsDoc, name)
			}
		}
		checkDocumented(t, svc, fams)
	}
}

// checkDocumented fails the test for every hourglass_ series of fams that
// docs/metrics.md does not list (franz-go's are listed by suffix in one row).
func checkDocumented(t *testing.T, svc string, fams map[string]*dto.MetricFamily) {
	t.Helper()
	readme, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	for name := range fams {
		if strings.HasPrefix(name, "hourglass_") && !strings.HasPrefix(name, "hourglass_kafka_") && !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("%s exposes %s, which %s does not document", svc, name, metricsDoc)
		}
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrapeUntil scrapes addr's /metrics until cond holds, bounded.
func scrapeUntil(t *testing.T, addr string, cond func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last map[string]*dto.MetricFamily
	for time.Now().Before(deadline) {
		if m, err := scrape(addr); err == nil {
			last = m
			if cond(m) {
				return m
			}
		}
		wait := time.NewTimer(50 * time.Millisecond)
		<-wait.C
	}
	t.Fatalf("%s/metrics never met the condition; last scrape had %d families", addr, len(last))
	return nil
}

func scrape(addr string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// sum adds up a family's counters, gauges or histogram counts, over the
// series whose label has value (all series when label is empty).
func sum(fams map[string]*dto.MetricFamily, name, label, value string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	total := 0.0
	for _, m := range f.Metric {
		if label != "" && !hasLabel(m, label, value) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.Label {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
