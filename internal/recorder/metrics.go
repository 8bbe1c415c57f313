package recorder

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hourglass/hourglass/internal/telemetry"
)

// metrics are the recorder's Prometheus series; the package documentation
// lists them.
type metrics struct {
	rows       prometheus.Counter
	errors     prometheus.Counter
	batches    prometheus.Counter
	batchRows  prometheus.Histogram
	duration   prometheus.Histogram
	lastInsert prometheus.Gauge
	malformed  prometheus.Counter
	rejected   prometheus.Counter
	buffered   prometheus.Gauge

	indexed      *prometheus.CounterVec        // by table
	indexSkipped map[string]prometheus.Counter // by reason, resolved once: a hop counts on every record
}

// BatchRowsBuckets are the buckets of hourglass_recorder_batch_rows.
var BatchRowsBuckets = []float64{1, 10, 50, 100, 500, 1000, 2000, 5000, 10_000, 50_000}

func newMetrics(reg prometheus.Registerer) *metrics {
	const ns, sub = "hourglass", "recorder"
	m := &metrics{
		rows: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rows_inserted_total",
			Help: "Outcome events inserted into ClickHouse (a replayed event counts again)."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "insert_errors_total",
			Help: "Failed insert attempts; each is retried with backoff."}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "batches_total",
			Help: "Batches inserted and committed."}),
		batchRows: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "batch_rows",
			Help: "Rows per inserted batch.", Buckets: BatchRowsBuckets}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "insert_duration_seconds",
			Help: "How long a successful insert took.", Buckets: telemetry.LatencyBuckets}),
		lastInsert: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "last_insert_timestamp_seconds",
			Help: "When the last successful insert finished, unix seconds; 0 before the first."}),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "malformed_events_total",
			Help: "Outcome records that are not a valid event; they are logged, skipped and committed."}),
		buffered: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "buffered_rows",
			Help: "Events read and waiting for their insert."}),
	}
	m.rejected = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rejected_events_total",
		Help: "Outcome events skipped because their signature is missing or wrong (only with --outcomes-key-file)."})
	m.indexed = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "index_rows_inserted_total",
		Help: "Rows of the deadline index inserted into ClickHouse, by table (a replayed row counts again)."}, []string{"table"})
	skipped := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "index_skipped_total",
		Help: "Records of indexed topics that have no row of their own, by reason: hop, retry, invalid, key_too_long."}, []string{"reason"})
	for _, t := range indexTables {
		m.indexed.WithLabelValues(t)
	}
	m.indexSkipped = map[string]prometheus.Counter{}
	for _, why := range []string{skipHop, skipRetry, skipInvalid, skipLongKey} {
		m.indexSkipped[why] = skipped.WithLabelValues(why)
	}
	reg.MustRegister(m.rows, m.errors, m.batches, m.batchRows, m.duration, m.lastInsert, m.malformed, m.rejected, m.buffered,
		m.indexed, skipped)
	return m
}
