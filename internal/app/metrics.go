package app

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

// defaultLagInterval is how often the consumer lag gauge is refreshed.
const defaultLagInterval = 15 * time.Second

// telemetry is a service's private Prometheus registry: Go and process
// collectors, franz-go's client metrics (hourglass_kafka_*, through the kprom
// hook of the service's Kafka client) and the consumer lag of its group.
type telemetry struct {
	reg  *prometheus.Registry
	kafk *kprom.Metrics
	lag  *prometheus.GaugeVec
}

func newTelemetry() *telemetry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	t := &telemetry{
		reg:  reg,
		kafk: kprom.NewMetrics("hourglass", kprom.Subsystem("kafka"), kprom.Registerer(reg), kprom.Gatherer(reg)),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "hourglass", Name: "consumer_lag_records",
			Help: "Records of a partition after the group's committed offset. For the router these include every deadline not yet due."},
			[]string{"group", "topic", "partition"}),
	}
	reg.MustRegister(t.lag)
	return t
}

// hook returns the kgo option that reports a client's metrics.
func (t *telemetry) hook() kgo.Opt { return kgo.WithHooks(t.kafk) }

// watchLag refreshes the lag gauge of group every interval until ctx is
// canceled.
func (t *telemetry) watchLag(ctx context.Context, cl *kgo.Client, group string, interval time.Duration, log *slog.Logger) {
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
