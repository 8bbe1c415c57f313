package router

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hourglass/hourglass/internal/cancels"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// metrics are the router's Prometheus series; docs/metrics.md lists them.
type metrics struct {
	forwarded   *prometheus.CounterVec
	hopped      *prometheus.CounterVec
	deadLetters *prometheus.CounterVec
	early       prometheus.Counter
	lateness    prometheus.Histogram
	overrun     *prometheus.HistogramVec
	held        *prometheus.GaugeVec
	cancelled   prometheus.Counter

	invalidCancellations *prometheus.CounterVec
	lateChecks           prometheus.Counter

	hops map[[2]time.Duration]prometheus.Counter // hopped by (from, to); the loop's
}

// hop returns the hopped counter of from -> to.
func (m *metrics) hop(from, to time.Duration) prometheus.Counter {
	k := [2]time.Duration{from, to}
	c, ok := m.hops[k]
	if !ok {
		c = m.hopped.WithLabelValues(tiers.Name(from), tiers.Name(to))
		m.hops[k] = c
	}
	return c
}

func newMetrics(reg prometheus.Registerer, table tiers.Table, st *stats, now func() time.Time) *metrics {
	const ns, sub = "hourglass", "router"
	m := &metrics{
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "forwarded_total",
			Help: "Records produced to their target topic, by the tier they were forwarded from."}, []string{"tier"}),
		hopped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "hopped_total",
			Help: "Records moved from one delay topic to another, by tier."}, []string{"from", "to"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "dead_letters_total",
			Help: "Records sent to the dead-letter topic, by reason code."}, []string{"reason"}),
		early: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "early_forwards_total",
			Help: "Records forwarded before their due time. Must stay 0."}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "forward_lateness_seconds",
			Help: "Forward time minus due time of records forwarded to their target.", Buckets: telemetry.LatencyBuckets}),
		overrun: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "tier_overrun_seconds",
			Help: "How long after its tier wait ended the router acted on a record, by tier: the router's delay.", Buckets: telemetry.LatencyBuckets}, []string{"tier"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "held_records",
			Help: "Records held in memory waiting out their tier, by tier."}, []string{"tier"}),
		cancelled: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "cancelled_total",
			Help: "Due records dropped because a cancellation of their task covers them; an outcome event \"cancelled\" reports each."}),
		invalidCancellations: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "invalid_cancellations_total",
			Help: "Records of the cancellations topic that break the contract or the limits, by reason: each withdraws its task's cancellation, or calls nothing off (the log names each one's offset)."}, []string{"reason"}),
		lateChecks: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "late_checks_total",
			Help: "Due records checked against the cancellations more than --cancellation-grace after they fell due: a cancellation made more than --max-delay before may be gone."}),
		hops: make(map[[2]time.Duration]prometheus.Counter),
	}
	reg.MustRegister(m.cancelled, m.invalidCancellations, m.lateChecks, m.forwarded, m.hopped, m.deadLetters, m.early, m.lateness, m.overrun, m.held)
	registerStats(reg, st, now)
	// Start every tier's series at zero, so that rates and alerts see them
	// before the first event.
	for _, d := range table.Durations() {
		name := tiers.Name(d)
		m.forwarded.WithLabelValues(name)
		m.held.WithLabelValues(name)
		m.overrun.WithLabelValues(name)
		for _, to := range table.Durations() {
			if to <= d { // the usual hops; others appear when they happen
				m.hop(d, to)
			}
		}
	}
	for _, r := range []tiers.Reason{tiers.ReasonDueMissing, tiers.ReasonDueEmpty, tiers.ReasonDueNotNumber, tiers.ReasonDueNegative,
		tiers.ReasonDueTooFar, tiers.ReasonDueImplausible, tiers.ReasonKeyMissing, tiers.ReasonTargetInvalid, tiers.ReasonKeyTooLarge, tiers.ReasonHeadersTooLarge,
		tiers.ReasonValueTooLarge, tiers.ReasonBatchTooLarge, reasonProduceFailed} {
		m.deadLetters.WithLabelValues(string(r))
	}
	for _, r := range []tiers.Reason{tiers.ReasonKeyMissing, tiers.ReasonKeyTooLarge, tiers.ReasonDueTooFar, tiers.ReasonDueNotNumber,
		tiers.ReasonDueImplausible, tiers.ReasonHeaderInvalid, cancels.ReasonAhead, tiers.ReasonBatchTooLarge} {
		m.invalidCancellations.WithLabelValues(string(r))
	}
	return m
}

// registerStore registers the gauges of the cancellations in store and of
// the transactions rd sees open.
func (m *metrics) registerStore(reg prometheus.Registerer, store *cancels.Store, rd *cancels.Reader, now func() time.Time) {
	const ns, sub = "hourglass", "router"
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "cancellations",
		Help: "Cancellations held in the on-disk store, until --cancellation-grace after the furthest deadline each can call off (--max-delay after it was made)."},
		func() float64 { return float64(store.Len()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "cancellations_behind_seconds",
		Help: "How long the cancellations reader has owed a round (the topic listed and read up to its end) that due deadlines wait for; 0 while it owes none. Past 30 s the router is not ready."},
		func() float64 { return rd.Behind(now()).Seconds() }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "cancellation_transactions",
		Help: "Transactions open on the cancellations topic whose records hold task ids: the due deadlines of those task ids wait until each commits or aborts."},
		func() float64 { n, _ := rd.OpenTransactions(); return float64(n) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "cancellation_transaction_age_seconds",
		Help: "How long the oldest transaction open on the cancellations topic has been seen open; 0 without one."},
		func() float64 {
			_, first := rd.OpenTransactions()
			if first.IsZero() {
				return 0
			}
			return max(now().Sub(first).Seconds(), 0)
		}))
}

func load(v *atomic.Int64) func() float64 { return func() float64 { return float64(v.Load()) } }

// registerStats registers the series that read the router's stats.
func registerStats(reg prometheus.Registerer, st *stats, now func() time.Time) {
	const ns, sub = "hourglass", "router"
	for _, s := range []struct {
		name, help string
		counter    bool
		v          *atomic.Int64
	}{
		{"dead_letter_retries_total", "Dead letters the dead-letter topic refused, tried again (in a minimal form when refused as too large).", true, &st.deadLetterRetries},
		{"held_bytes", "Bytes the records the router holds take in memory, with the records they are produced onward as: waiting, in the timer, or being produced onward.", false, &st.heldBytes},
		{"produce_waiting_records", "Produces waiting for room because their topic has --max-in-flight-per-target produces in flight.", false, &st.queued},
		{"handed_off_total", "Held records put back into Kafka at a revoke or a stop.", true, &st.handedOff},
		{"timer_records", "Records held in the in-memory timer for a delay shorter than the smallest tier.", false, &st.timer},
		{"gated_records", "Due records waiting for the cancellations reader: to read up to their due time (above 0 for long, nothing is forwarded), or for a transaction that wrote their task id to end.", false, &st.gated},
		{"transaction_held_records", "Due records waiting for a transaction still open on the cancellations topic that wrote their task id; they wait until it commits or aborts.", false, &st.heldByTxn},
		{"paused_partitions", "Partitions paused because they hold --max-held-per-partition records or --max-held-bytes-per-partition bytes.", false, &st.paused},
	} {
		if s.counter {
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: s.name, Help: s.help}, load(s.v)))
		} else {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: s.name, Help: s.help}, load(s.v)))
		}
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "stalled_seconds",
		Help: "How long the router has held due records (waiting for the cancellations reader, produced onward and not acknowledged, or waiting for room) without any produce acknowledged; 0 while it holds none. It grows while the brokers or the cancellations reader hold up every forward."},
		func() float64 { return st.stalled(now()) }))
}
