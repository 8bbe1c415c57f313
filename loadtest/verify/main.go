package verify

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/loadtest/manifest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Exit codes of Main.
const (
	ExitOK     = 0 // nothing lost, early or wrong
	ExitFailed = 1 // lost, early or wrong outcomes
	ExitError  = 2 // bad flags, unreadable manifest, unreachable brokers
)

const usage = `verify checks a load test run: it reads the outcomes topic from its start
for the task ids of the run's manifest and reports scheduled, closed,
skipped-as-paid, lost (no final outcome), duplicates (more than one final
outcome), early (closed before due) and lateness percentiles.

It prints the report as JSON on stdout and a short summary on stderr, and
exits 0 when nothing was lost, closed early or given the wrong outcome and
lateness is within --max-p99 and --max-lateness, 1 when not, and 2 when it
could not check.

Usage: verify --manifest FILE [flags]

Flags:
`

// Config is the verify command's configuration.
type Config struct {
	// Kafka is the connection (--brokers, --tls*, --sasl*; HOURGLASS_*).
	Kafka kafka.Config
	// Manifest is the run's manifest file. Required.
	Manifest string
	// Topic is the outcomes topic; default: the manifest's prefix +
	// "outcomes".
	Topic string
	// Wait is how long after the last due time to keep waiting for final
	// outcomes; 0 reads up to the end offsets found at start. Default 0.
	Wait time.Duration
	// Timeout bounds the whole check; default 5m.
	Timeout time.Duration
	// MaxP99 fails the check when the lateness p99 is above it; 0 (the
	// default) sets no bound.
	MaxP99 time.Duration
	// MaxLateness fails the check when the largest lateness is above it;
	// 0 (the default) sets no bound.
	MaxLateness time.Duration
}

// DefaultTimeout is the default of --timeout.
const DefaultTimeout = 5 * time.Minute

// Main runs the verify command and returns its exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c Config
	fs := cli.NewFlagSet("verify", usage)
	fs.SetOutput(stderr)
	flags.Kafka(fs, &c.Kafka, "hourglass-verify")
	fs.StringVar(&c.Manifest, "manifest", "", "", "the run's manifest `file` (written by the k6 extension)")
	fs.StringVar(&c.Topic, "outcomes-topic", "", "", "outcomes `topic` (default: the manifest's topic prefix + outcomes)")
	fs.DurationVar(&c.Wait, "wait", "", 0, "keep reading until every task has a final outcome or this long after the last due time; 0 reads up to the end offsets found at start")
	fs.DurationVar(&c.Timeout, "timeout", "", DefaultTimeout, "bound on the whole check")
	fs.DurationVar(&c.MaxP99, "max-p99", "", 0, "fail when the lateness p99 is above this (0: no bound)")
	fs.DurationVar(&c.MaxLateness, "max-lateness", "", 0, "fail when the largest lateness is above this (0: no bound)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		fmt.Fprintln(stderr, "verify:", err)
		return ExitError
	}
	var errs cli.Problems
	errs.Join(flags.CheckKafka(fs, &c.Kafka))
	if len(fs.Args()) > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if c.Manifest == "" {
		errs = append(errs, cli.Errorf("manifest", "required"))
	}
	if c.Wait < 0 {
		errs = append(errs, cli.Errorf("wait", "%v: want 0 or more", c.Wait))
	}
	if c.Timeout <= 0 {
		errs = append(errs, cli.Errorf("timeout", "%v: want more than 0", c.Timeout))
	}
	if c.MaxP99 < 0 || c.MaxLateness < 0 {
		errs = append(errs, cli.Errorf("max-p99", "want 0 or more (and --max-lateness)"))
	}
	if err := fs.Explain(errs.Err()); err != nil {
		fmt.Fprintln(stderr, "verify:", err)
		return ExitError
	}
	r, err := Run(ctx, c)
	if err != nil {
		fmt.Fprintln(stderr, "verify:", err)
		return ExitError
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	fmt.Fprintf(stdout, "%s\n", b)
	WriteSummary(stderr, r)
	if !r.OK {
		return ExitFailed
	}
	return ExitOK
}

// Run reads the manifest and the outcomes topic and returns the report.
func Run(ctx context.Context, c Config) (Report, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	m, err := manifest.ReadFile(c.Manifest)
	if err != nil {
		return Report{}, err
	}
	if m.Header.IDPrefix == "" {
		return Report{}, fmt.Errorf("manifest %s: the header has no id_prefix", c.Manifest)
	}
	topic := c.Topic
	if topic == "" {
		topic = tiers.OutcomesTopic(m.Header.Prefix)
	}
	opts, err := flags.KafkaOpts(&c.Kafka)
	if err != nil {
		return Report{}, err
	}
	want := make(map[string]bool, len(m.Entries))
	var lastDue int64
	for _, e := range m.Entries {
		want[e.ID] = true
		lastDue = max(lastDue, e.DueMs, e.ScheduledMs)
	}
	o := CollectOptions{Prefix: m.Header.IDPrefix, Want: want}
	if c.Wait > 0 {
		o.Until = time.UnixMilli(lastDue).Add(c.Wait)
	}
	col, err := Collect(ctx, opts, topic, o)
	if err != nil {
		return Report{}, err
	}
	r := Check(m, col.Events, col.Invalid)
	r.bound(c.MaxP99, c.MaxLateness)
	return r, nil
}

// WriteSummary writes a few lines that say what r found.
func WriteSummary(w io.Writer, r Report) {
	verdict := "OK"
	if !r.OK {
		verdict = "FAILED"
	}
	l := r.LatenessMs
	fmt.Fprintf(w, "run %s: %s\n", r.RunID, verdict)
	fmt.Fprintf(w, "  scheduled %d (paid %d), closed %d, skipped-as-paid %d; first final outcomes: %s\n",
		r.Scheduled, r.Paid, r.Closed, r.SkippedPaid, outcomeList(r.Outcomes))
	fmt.Fprintf(w, "  lost %d, duplicates %d, early %d, wrong outcome %d, retries %d, unexpected %d\n",
		r.Lost, r.Duplicates, r.Early, r.WrongOutcome, r.Retries, r.Unexpected)
	fmt.Fprintf(w, "  lateness ms: p50 %d, p90 %d, p99 %d, p999 %d, max %d\n", l.P50, l.P90, l.P99, l.P999, l.Max)
	shapes := make([]string, 0, len(r.ByShape))
	for s := range r.ByShape {
		shapes = append(shapes, s)
	}
	slices.Sort(shapes)
	for _, s := range shapes {
		sr := r.ByShape[s]
		name := s
		if name == "" {
			name = "(none)"
		}
		fmt.Fprintf(w, "    %-15s %6d scheduled, lost %d, early %d, lateness ms p50 %d, p99 %d, max %d\n",
			name, sr.Scheduled, sr.Lost, sr.Early, sr.LatenessMs.P50, sr.LatenessMs.P99, sr.LatenessMs.Max)
	}
	for _, k := range []string{"lost", "early", "wrong_outcome", "duplicates"} {
		if ids := r.Examples[k]; len(ids) > 0 {
			fmt.Fprintf(w, "  %s, e.g.: %s\n", k, strings.Join(ids, " "))
		}
	}
}

func outcomeList(m map[outcome.Outcome]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	if len(parts) == 0 {
		return "none"
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
