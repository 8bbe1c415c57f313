package canceller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// metrics are the canceller's Prometheus series; the README lists them.
type metrics struct {
	closes      *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	lateness    *prometheus.HistogramVec
	deadLetters *prometheus.CounterVec
	inFlight    prometheus.Gauge
	early       prometheus.Counter
}

// reasonCloseFailed is the dead-letter reason of a failed close.
const reasonCloseFailed = "close_failed"

func newMetrics(reg prometheus.Registerer, defaultKind string) *metrics {
	const ns, sub = "hourglass", "canceller"
	m := &metrics{
		closes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "closes_total",
			Help: "Close attempts, by task kind and outcome (closed, already_closed, skipped, not_found, failed)."}, []string{"kind", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "close_duration_seconds",
			Help: "How long the closer took, by task kind.", Buckets: telemetry.LatencyBuckets}, []string{"kind"}),
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "close_lateness_seconds",
			Help: "Close time minus due time, by task kind: how late deadlines are met.", Buckets: telemetry.LatencyBuckets}, []string{"kind"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "dead_letters_total",
			Help: "Records sent to the dead-letter topic, by reason code."}, []string{"reason"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "closes_in_flight",
			Help: "Closes running now."}),
		early: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "early_closes_total",
			Help: "Closes applied before their due time by this canceller's clock. Must stay 0; a rise with none at the router means the clocks disagree."}),
	}
	reg.MustRegister(m.closes, m.duration, m.lateness, m.deadLetters, m.inFlight, m.early)
	// Start the series alerts divide by at zero.
	for _, o := range []closer.Outcome{closer.Closed, closer.AlreadyClosed, closer.Skipped, closer.NotFound, closer.Failed} {
		m.closes.WithLabelValues(defaultKind, string(o))
	}
	m.duration.WithLabelValues(defaultKind)
	m.lateness.WithLabelValues(defaultKind)
	for _, r := range []string{reasonCloseFailed, string(tiers.ReasonKeyMissing), string(tiers.ReasonDueMissing)} {
		m.deadLetters.WithLabelValues(r)
	}
	return m
}
