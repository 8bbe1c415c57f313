// Command benchstatus measures `hourglass status` at volume: the lookup in
// the deadline index in ClickHouse beside the scan of Kafka, over the same
// deadlines, and the recorder indexing them.
//
//	go run ./scripts/benchstatus [--deadlines 10000000] [--lookups 100] [--partitions 12]
//
// It starts an embedded Kafka broker (kfake) on 127.0.0.1, produces
// --deadlines deadlines into the 30m delay topic of --partitions
// partitions (due over the next day, ids order-0, order-1, ...), runs a
// recorder with the index over them into a new database of the ClickHouse
// at --clickhouse-addr (127.0.0.1:9000, scripts/clickhouse.sh starts one),
// and records its throughput. Then it runs `hourglass status ID
// --clickhouse` and `hourglass status ID` (the Kafka scan) in this process
// for --lookups ids spread over the whole range, and prints one JSON object:
// the recorder's rows per second and the p50, p99 and max of each lookup.
// The database is dropped at the end.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/recorder"
	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/pkg/tiers"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "benchstatus:", err)
		}
		os.Exit(2)
	}
}

// options are the command's flags.
type options struct {
	deadlines, lookups, partitions, batchRows int
	chAddr                                    string
	timeout                                   time.Duration
}

// Result is what benchstatus prints.
type Result struct {
	Deadlines  int `json:"deadlines"`
	Partitions int `json:"partitions"`
	// ProduceSeconds is how long producing the deadlines took.
	ProduceSeconds float64 `json:"produce_seconds"`
	// RecorderRowsPerSecond is the index rows the recorder inserted per
	// second, from its first row to its last; RecorderBatchRows its
	// --batch-rows.
	RecorderRowsPerSecond float64 `json:"recorder_rows_per_second"`
	RecorderBatchRows     int     `json:"recorder_batch_rows"`
	RecorderInsertErrors  int64   `json:"recorder_insert_errors"`
	// Index and Scan are the timings of `hourglass status` with
	// --clickhouse and without, in milliseconds, the whole command with
	// its connections; IndexQuery the lookup alone (chstore.Store.Task on
	// an open connection, as a console makes it).
	Index      Timings `json:"index"`
	IndexQuery Timings `json:"index_query"`
	Scan       Timings `json:"scan"`
	// ScanRecordsRead is how many records one scan read, on average.
	ScanRecordsRead int64 `json:"scan_records_read"`
	GoMaxProcs      int   `json:"gomaxprocs"`
}

// Timings are the lookups' wall times in milliseconds.
type Timings struct {
	Lookups int     `json:"lookups"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
	// Found counts the lookups that found the task's deadline.
	Found int `json:"found"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("benchstatus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.deadlines, "deadlines", 10_000_000, "deadlines to produce and index")
	fs.IntVar(&o.lookups, "lookups", 100, "lookups of each kind")
	fs.IntVar(&o.partitions, "partitions", 12, "partitions of the delay topic")
	fs.IntVar(&o.batchRows, "batch-rows", recorder.DefaultBatchRows, "the recorder's --batch-rows")
	fs.StringVar(&o.chAddr, "clickhouse-addr", chstore.DefaultAddr, "ClickHouse native `host:port` (loopback)")
	fs.DurationVar(&o.timeout, "timeout", time.Hour, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.deadlines < 1 || o.lookups < 1 || o.partitions < 1 || o.batchRows < 1 {
		return errors.New("--deadlines, --lookups, --partitions and --batch-rows must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	log := func(format string, a ...any) { fmt.Fprintf(stderr, "benchstatus: "+format+"\n", a...) }

	cluster, brokers, err := embedded.StartBroker(0, kfake.DefaultNumPartitions(o.partitions))
	if err != nil {
		return err
	}
	defer cluster.Close()
	const prefix = "bench."
	delay := tiers.Topic(prefix, 30*time.Minute)
	for _, t := range append(tiers.DefaultTable().Topics(prefix), tiers.CancelTopic(prefix), tiers.OutcomesTopic(prefix),
		tiers.DeadLetterTopic(prefix), tiers.CancellationsTopic(prefix)) {
		if err := cluster.CreateTopic(t, int32(o.partitions), nil); err != nil {
			return fmt.Errorf("create %s: %w", t, err)
		}
	}
	now := time.Now()
	log("producing %d deadlines into %s (%d partitions)", o.deadlines, delay, o.partitions)
	start := time.Now()
	if err := produce(ctx, brokers, prefix, now, o.deadlines); err != nil {
		return err
	}
	res := Result{Deadlines: o.deadlines, Partitions: o.partitions, ProduceSeconds: time.Since(start).Seconds(),
		RecorderBatchRows: o.batchRows, GoMaxProcs: runtime.GOMAXPROCS(0)}

	cfg := chstore.Config{Addr: o.chAddr, Database: "hourglass_benchstatus_" + strconv.FormatInt(now.UnixNano(), 36)}
	store, err := chstore.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		_ = store.Conn().Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS `"+cfg.Database+"`")
		store.Close()
	}()
	if _, err := store.Migrate(ctx); err != nil {
		return err
	}
	log("indexing them into %s (database %s)", o.chAddr, cfg.Database)
	rate, errs, err := index(ctx, brokers, prefix, store, o)
	if err != nil {
		return err
	}
	res.RecorderRowsPerSecond, res.RecorderInsertErrors = rate, errs

	ids := make([]string, o.lookups)
	for i := range ids {
		ids[i] = "order-" + strconv.Itoa(i*(o.deadlines/o.lookups)+o.deadlines/(2*o.lookups))
	}
	kafkaArgs := []string{"--brokers", brokers, "--topic-prefix", prefix, "--format", "json", "--timeout", "5m"}
	log("%d lookups in the index", o.lookups)
	res.Index, _, err = lookups(ctx, ids, append(kafkaArgs, "--clickhouse", "--clickhouse-addr", o.chAddr, "--clickhouse-database", cfg.Database))
	if err != nil {
		return err
	}
	res.IndexQuery, err = queries(ctx, store, ids)
	if err != nil {
		return err
	}
	log("%d scans of Kafka", o.lookups)
	var read int64
	res.Scan, read, err = lookups(ctx, ids, kafkaArgs)
	if err != nil {
		return err
	}
	res.ScanRecordsRead = read / int64(o.lookups)
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// produce writes n deadlines into the 30m delay topic, due over the day
// after now.
func produce(ctx context.Context, brokers, prefix string, now time.Time, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	table := tiers.DefaultTable()
	errc := make(chan error, 1)
	for i := range n {
		due := now.Add(time.Hour + time.Duration(i%86_400_000)*time.Millisecond)
		r, err := tiers.BuildRecord(prefix, table, now, tiers.Task{ID: "order-" + strconv.Itoa(i), Due: due, Kind: "order-timeout"})
		if err != nil {
			return err
		}
		r.Topic = tiers.Topic(prefix, 30*time.Minute)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-errc:
		return fmt.Errorf("produce: %w", err)
	default:
		return nil
	}
}

// index runs a recorder with the index until it has indexed every
// deadline, and returns its rows per second and its failed inserts.
func index(ctx context.Context, brokers, prefix string, store *chstore.Store, o options) (float64, int64, error) {
	rec, err := recorder.New(recorder.Config{Topic: tiers.OutcomesTopic(prefix), Group: "benchstatus", BatchRows: o.batchRows,
		Index: &recorder.Index{Prefix: prefix}}, recorder.Options{
		Kafka: []kgo.Opt{kgo.SeedBrokers(brokers)}, Store: store, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return 0, 0, err
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rec.Run(rctx) // it stops when the figures are taken
	}()
	defer func() { stop(); <-done }()
	var first time.Time
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for rec.Stats().Indexed < int64(o.deadlines) {
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("indexed %d of %d deadlines: %w", rec.Stats().Indexed, o.deadlines, ctx.Err())
		case <-tick.C:
		}
		if first.IsZero() && rec.Stats().Indexed > 0 {
			first = time.Now()
		}
	}
	s := rec.Stats()
	took := max(time.Since(first), time.Millisecond)
	return float64(s.Indexed) / took.Seconds(), s.InsertErrors, nil
}

// lookups runs hourglass status for each id with args, and returns the
// timings and the records the scans read.
func lookups(ctx context.Context, ids, args []string) (Timings, int64, error) {
	t := Timings{Lookups: len(ids)}
	var took []float64
	var read int64
	for _, id := range ids {
		start := time.Now()
		var out, errOut bytes.Buffer
		if err := statuscmd.Run(ctx, append(slices.Clone(args), id), &out, &errOut); err != nil {
			return t, 0, fmt.Errorf("status %s: %w (%s)", id, err, errOut.String())
		}
		took = append(took, float64(time.Since(start).Microseconds())/1000)
		var st statuscmd.Status
		if err := json.Unmarshal(out.Bytes(), &st); err != nil {
			return t, 0, fmt.Errorf("status %s: %w", id, err)
		}
		if len(st.Deadlines) == 1 && st.Deadlines[0].State == taskstatus.StateWaiting {
			t.Found++
		}
		for _, p := range st.Read {
			read += p.Read
		}
	}
	t.percentiles(took)
	return t, read, nil
}

// queries looks each id up with store.Task, and returns the timings.
func queries(ctx context.Context, store *chstore.Store, ids []string) (Timings, error) {
	t := Timings{Lookups: len(ids)}
	var took []float64
	for _, id := range ids {
		start := time.Now()
		ti, err := store.Task(ctx, id, 1000)
		if err != nil {
			return t, err
		}
		took = append(took, float64(time.Since(start).Microseconds())/1000)
		if len(ti.Deadlines) == 1 {
			t.Found++
		}
	}
	t.percentiles(took)
	return t, nil
}

// percentiles sets the p50, p99 and max of took, in milliseconds.
func (t *Timings) percentiles(took []float64) {
	slices.Sort(took)
	at := func(q float64) float64 { return took[min(len(took)-1, int(q*float64(len(took))))] }
	t.P50, t.P99, t.Max = at(0.5), at(0.99), took[len(took)-1]
}
