package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/testutil/dbtest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// timedCloser records how long each close took.
type timedCloser struct {
	closer.Closer
	mu    sync.Mutex
	took  []time.Duration
	first time.Time
	last  time.Time
}

func (c *timedCloser) Close(ctx context.Context, t closer.Task) (closer.Result, error) {
	start := time.Now()
	res, err := c.Closer.Close(ctx, t)
	end := time.Now()
	c.mu.Lock()
	if c.first.IsZero() {
		c.first = start
	}
	c.last = end
	c.took = append(c.took, end.Sub(start))
	c.mu.Unlock()
	return res, err
}

// BenchmarkCancellerPostgres measures the canceller closing a backlog of
// 5000 unpaid orders per iteration in the shared Postgres with the default
// sql closer and 50 closes in flight: closes per second from the first close
// to the last, and the close latency the canceller sees (p50, p99). It prints
// one JSON line.
//
//	go test -run '^$' -bench CancellerPostgres -benchtime 4x ./internal/e2e
func BenchmarkCancellerPostgres(b *testing.B) {
	const inFlight = 50
	orders := 5000 * b.N
	dsn := dbtest.PostgresDSN(b)
	db := dbtest.Open(b, "postgres", dsn)
	table := dbtest.Table(b, "bench_orders")
	if _, err := db.Exec(`CREATE TABLE ` + table + ` (id bigint PRIMARY KEY, status text NOT NULL, closed_at timestamptz)`); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = db.Exec(`DROP TABLE IF EXISTS ` + table) })
	if _, err := db.Exec(`INSERT INTO `+table+` (id, status) SELECT g, 'UNPAID' FROM generate_series(1, $1) g`, orders); err != nil {
		b.Fatal(err)
	}
	p := newPipe(b, "bench-closes", "1s", 6)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sc, err := sqlcloser.New(ctx, sqlcloser.Config{Driver: "postgres", DSN: credential.Secret{Value: dsn}, Table: table, MaxOpenConns: inFlight})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sc.Stop() }()
	timed := &timedCloser{Closer: sc}

	// The backlog is in the cancel topic before the canceller starts.
	prod, err := kgo.NewClient(p.seeds...)
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	due := time.Now()
	recs := make([]*kgo.Record, 0, orders)
	for i := 1; i <= orders; i++ {
		recs = append(recs, &kgo.Record{Topic: p.cancelTopic(), Key: []byte(strconv.Itoa(i)),
			Headers: []kgo.RecordHeader{{Key: tiers.HeaderDue, Value: tiers.FormatMillis(due)}}})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	cn, err := canceller.New(canceller.Config{
		Prefix: p.prefix, Group: p.cancellerGroup(), Tiers: p.table, Instance: "bench", MaxInFlight: inFlight,
	}, canceller.Options{Kafka: p.kafkaOpts(), Closer: timed, Logger: testLogger(b, "canceller")})
	if err != nil {
		b.Fatal(err)
	}
	stop := start(b, "canceller", cn.Run)
	if err := waitFor(ctx, b, func() bool { return cn.Stats().Closed == int64(orders) }); err != nil {
		b.Fatalf("closed %d of %d: %v", cn.Stats().Closed, orders, err)
	}
	b.StopTimer()
	if err := stop(); err != nil {
		b.Fatal(err)
	}
	var left int
	if err := db.QueryRow(`SELECT count(*) FROM ` + table + ` WHERE status <> 'CLOSED'`).Scan(&left); err != nil || left != 0 {
		b.Fatalf("%d orders not closed (%v)", left, err)
	}

	timed.mu.Lock()
	took := slices.Clone(timed.took)
	span := timed.last.Sub(timed.first)
	timed.mu.Unlock()
	slices.Sort(took)
	q := func(f float64) float64 { return float64(took[int(f*float64(len(took)-1))].Microseconds()) / 1000 }
	rate := float64(len(took)) / span.Seconds()
	b.ReportMetric(rate, "closes/s")
	b.ReportMetric(q(0.99), "p99_ms")
	line, _ := json.Marshal(map[string]any{
		"bench": "canceller_postgres", "orders": orders, "in_flight": inFlight,
		"closes_per_sec": int(rate), "close_p50_ms": q(0.5), "close_p99_ms": q(0.99), "close_max_ms": q(1),
	})
	fmt.Fprintln(os.Stdout, string(line))
}
