package canceller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// metrics are the canceller's Prometheus series; docs/metrics.md lists them.
type metrics struct {
	closes      *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	lateness    *prometheus.HistogramVec
	deadLetters *prometheus.CounterVec
	inFlight    prometheus.Gauge
	pending     prometheus.Gauge
	retries     *prometheus.CounterVec
	rateWait    prometheus.Counter
	early       prometheus.Counter

	produceErrors *prometheus.CounterVec
	// kinds are the kinds with series of their own: the default kind and
	// the routed ones. Any other kind is counted as "other", so that the
	// series stay bounded whatever kinds records carry.
	kinds map[string]bool
}

// otherKind is the kind label of tasks whose kind has no route.
const otherKind = "other"

// kind returns the label of a task kind.
func (m *metrics) kind(k string) string {
	if m.kinds[k] {
		return k
	}
	return otherKind
}

func newMetrics(reg prometheus.Registerer, kinds []string) *metrics {
	const ns, sub = "hourglass", "canceller"
	m := &metrics{
		closes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "closes_total",
			Help: "Close attempts, by task kind and outcome (closed, already_closed, skipped, not_found, retry, failed)."}, []string{"kind", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "close_duration_seconds",
			Help: "How long the closer took, by task kind.", Buckets: telemetry.LatencyBuckets}, []string{"kind"}),
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "close_lateness_seconds",
			Help: "Close time minus due time, by task kind: how late deadlines are met.", Buckets: telemetry.LatencyBuckets}, []string{"kind"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "dead_letters_total",
			Help: "Records sent to the dead-letter topic, by reason code."}, []string{"reason"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "closes_in_flight",
			Help: "Closes running now."}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "pending_records",
			Help: "Records taken and not finished: closing, waiting for the rate limit, or queued behind a close of the same task id."}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "retries_total",
			Help: "Failed closes rescheduled through the delay tiers for another attempt, by task kind."}, []string{"kind"}),
		rateWait: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rate_limit_wait_seconds_total",
			Help: "Time closes waited for the rate limits, summed over closes."}),
		early: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "early_closes_total",
			Help: "Closes applied before their due time by this canceller's clock. Must stay 0; a rise with none at the router means the clocks disagree."}),
		produceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "produce_errors_total",
			Help: "Records the brokers refused for good (produced again, or replaced by a dead letter that fits), by record: outcome, retry, dead_letter."}, []string{"record"}),
		kinds: make(map[string]bool),
	}
	reg.MustRegister(m.closes, m.duration, m.lateness, m.deadLetters, m.inFlight, m.pending, m.retries, m.rateWait, m.early, m.produceErrors)
	for _, k := range []onwardKind{kindOutcome, kindRetry, kindDeadLetter} {
		m.produceErrors.WithLabelValues(k.String())
	}
	// Start the series alerts divide by at zero.
	for _, kind := range kinds {
		m.kinds[kind] = true
	}
	for _, kind := range append(kinds, otherKind) {
		for _, o := range outcome.All {
			m.closes.WithLabelValues(kind, string(o))
		}
		m.duration.WithLabelValues(kind)
		m.lateness.WithLabelValues(kind)
		m.retries.WithLabelValues(kind)
	}
	for _, r := range []string{reasonCloseFailed, reasonRetriesExhausted, reasonUnknownKind, reasonProduceFailed,
		string(tiers.ReasonKeyMissing), string(tiers.ReasonDueMissing), string(tiers.ReasonKeyTooLarge)} {
		m.deadLetters.WithLabelValues(r)
	}
	return m
}
