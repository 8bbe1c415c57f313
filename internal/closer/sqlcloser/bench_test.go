package sqlcloser_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/outcome"
)

// BenchmarkClose measures closes against the shared Postgres with 1 (a
// quiet day: ns/op is a close's latency), 10, 50 and 1000 closes in
// flight, as the canceller runs them, one by one (max_batch 1) and batched
// (the default), with the default pool of 10 connections. Besides
// closes/s, which a busy machine makes noisy, it reports what holds under
// load: closes per database round (a batch, or a close on its own), and
// the CPU per close of this process and of the Postgres backends serving
// the pool.
//
//	go test -run '^$' -bench 'BenchmarkClose' -benchtime 20000x ./internal/closer/sqlcloser
func BenchmarkClose(b *testing.B) { benchmarkClose(b, sqlcloser.DriverPostgres) }

// BenchmarkCloseMySQL is BenchmarkClose against the shared MySQL/MariaDB,
// without the server's CPU.
func BenchmarkCloseMySQL(b *testing.B) { benchmarkClose(b, sqlcloser.DriverMySQL) }

func benchmarkClose(b *testing.B, driver string) {
	for _, inFlight := range []int{1, 10, 50, 1000} {
		for _, maxBatch := range []int{1, sqlcloser.DefaultMaxBatch} {
			b.Run(fmt.Sprintf("in_flight=%d/max_batch=%d", inFlight, maxBatch), func(b *testing.B) {
				benchmarkCloses(b, driver, inFlight, maxBatch)
			})
		}
	}
}

func benchmarkCloses(b *testing.B, driver string, inFlight, maxBatch int) {
	bb := newBundle(b, driver)
	bb.seed(b, b.N)
	cfg := bb.config()
	cfg.MaxBatch = maxBatch
	app := strings.ReplaceAll(bb.table, ".", "_")
	if driver == sqlcloser.DriverPostgres {
		cfg.DSN.Value = withParam(bb.dsn, "application_name", app)
	}
	c := newCloser(b, cfg)
	batches, batched := sqlcloser.CountBatches(c)

	b.SetParallelism((inFlight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	var next, errs atomic.Int64
	ctx := context.Background()
	cpu0 := processCPU()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := next.Add(1)
			res, err := c.Close(ctx, closer.Task{ID: id(n)})
			if err != nil || res.Outcome != outcome.Closed {
				errs.Add(1)
			}
		}
	})
	took := time.Since(start)
	b.StopTimer()
	if n := errs.Load(); n > 0 {
		b.Fatalf("%d closes failed or did not close", n)
	}
	closes := float64(b.N)
	b.ReportMetric(closes/took.Seconds(), "closes/s")
	rounds := batches.Load() + int64(b.N) - batched.Load() // closes not batched went alone
	b.ReportMetric(closes/float64(rounds), "closes/round")
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/closes, "go_cpu_us/close")
	if driver == sqlcloser.DriverPostgres {
		if cpu, ok := backendsCPU(b, bb, app); ok {
			b.ReportMetric(float64(cpu.Microseconds())/closes, "pg_cpu_us/close")
		}
	}
}

// processCPU is the CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendsCPU is the CPU time of the Postgres backends of application
// app, read from /proc (the shared server runs on this machine), in
// clock ticks of 10ms; false when they cannot be read.
func backendsCPU(b *testing.B, bb *bundle, app string) (time.Duration, bool) {
	rows, err := bb.db.Query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		b.Logf("backends of %s: %v", app, err)
		return 0, false
	}
	defer func() { _ = rows.Close() }()
	var total time.Duration
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return 0, false
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, false
		}
		// The fields after the command (in parentheses): state is the
		// 3rd field of the line, utime the 14th and stime the 15th.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 {
			return 0, false
		}
		utime, err1 := strconv.ParseInt(f[11], 10, 64)
		stime, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		total += time.Duration(utime+stime) * 10 * time.Millisecond
	}
	return total, rows.Err() == nil && total > 0
}
