package telemetry

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"
)

// DefaultLagInterval is how often the consumer lag gauge is refreshed.
const DefaultLagInterval = 15 * time.Second

// LatencyBuckets are the histogram buckets of lateness, waits and close
// latency, in seconds: fine from 1 ms, then up to 10 minutes.
var LatencyBuckets = []float64{
	0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
	1, 2, 5, 10, 30, 60, 120, 300, 600,
}

// Registry is a service's private Prometheus registry: Go and process
// collectors, franz-go's client metrics (hourglass_kafka_*, through the kprom
// hook of the service's Kafka client) and the consumer lag of its group.
type Registry struct {
	*prometheus.Registry
	kafk *kprom.Metrics
	lag  *prometheus.GaugeVec
}

// New returns a Registry.
func New() *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	t := &Registry{
		Registry: reg,
		kafk:     kprom.NewMetrics("hourglass", kprom.Subsystem("kafka"), kprom.Registerer(reg), kprom.Gatherer(reg)),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "hourglass", Name: "consumer_lag_records",
			Help: "Records of a partition after the group's committed offset. For the router these include every deadline not yet due."},
			[]string{"group", "topic", "partition"}),
	}
	reg.MustRegister(t.lag)
	return t
}

// Hook returns the kgo hook that reports a client's metrics; give it to
// one client only.
func (t *Registry) Hook() kgo.Hook { return t.kafk }

// WatchLag refreshes the lag gauge of group every interval until ctx is
// canceled.
func (t *Registry) WatchLag(ctx context.Context, cl *kgo.Client, group string, interval time.Duration, log *slog.Logger) {
	adm := kadm.NewClient(cl)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		lctx, cancel := context.WithTimeout(ctx, interval)
		lags, err := adm.Lag(lctx, group)
		cancel()
		if err == nil {
			err = lags.Error()
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Debug("consumer lag", "group", group, "err", err)
		default:
			t.lag.Reset()
			for _, l := range lags[group].Lag.Sorted() {
				if l.Lag >= 0 {
					t.lag.WithLabelValues(group, l.Topic, strconv.Itoa(int(l.Partition))).Set(float64(l.Lag))
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
