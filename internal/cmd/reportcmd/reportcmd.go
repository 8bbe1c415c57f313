package reportcmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/chflags"
	"github.com/hourglass/hourglass/internal/report"
	"github.com/hourglass/hourglass/internal/service"
)

const reportUsage = `hourglass report summarizes what happened to the deadlines of a time window,
from the outcome events the recorder keeps in ClickHouse.

It prints the attempts by outcome and kind, lateness quantiles (p50, p90, p99,
p99.9, max) of final outcomes by first tier and kind, the latest late or
failed attempts, and lateness over time. Each close attempt counts once, even
when it was recorded twice. The window is --since (up to now) or --from and
--to; times are RFC 3339 (2024-05-14T12:00:00Z, or with an offset),
"2024-05-14 12:00[:05]" or "2024-05-14" in UTC, or unix seconds.

It also forecasts the load to come: the open deadlines (not closed, failed or
cancelled) falling due per minute from 10 minutes before the window's end,
so that overdue ones show, to --forecast after it, by kind and target, with
the busiest minute.

Usage: hourglass report [--since 1h | --from T [--to T]] [--format text|json] [--html FILE]
                        [--late-threshold 1s] [--limit 20] [--forecast 6h] [clickhouse flags]

` + cli.FlagsHeading + "\n"

// DefaultReportSince is the report window when none is given.
const DefaultReportSince = time.Hour

// reportFlags are the report command's flags.
type reportFlags struct {
	clickhouse    chstore.Config
	since         time.Duration
	from, to      string
	format        string
	html          string
	lateThreshold time.Duration
	limit         int
	bucket        time.Duration
	forecast      time.Duration
	timeout       time.Duration
}

// Run is the `hourglass report` command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runReport(ctx, args, stdout, stderr, time.Now())
}

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer, now time.Time) error {
	var f reportFlags
	fs := cli.NewFlagSet("report", reportUsage)
	fs.SetOutput(stderr)
	f.register(fs)
	if err := service.ParseArgs(fs, args); err != nil {
		return err
	}
	from, to, errs := f.validate(now)
	if err := fs.Explain(errs.Err()); err != nil {
		return service.UsageError{Err: err}
	}

	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	store, err := chstore.Open(ctx, f.clickhouse)
	if err != nil {
		return err
	}
	defer store.Close()
	o := report.Options{From: from, To: to, LateThreshold: f.lateThreshold, Limit: f.limit, Bucket: f.bucket, Now: now, Forecast: f.forecast}
	if f.limit == 0 {
		o.Limit = -1 // --limit 0 lists none; Build reads 0 as the default
	}
	if f.forecast == 0 {
		o.Forecast = -1 // --forecast 0 leaves it out; Build reads 0 as the default
	}
	r, err := buildReport(ctx, store, o)
	if err != nil {
		return err
	}
	if f.html != "" {
		if err := writeFile(f.html, r.WriteHTML); err != nil {
			return err
		}
	}
	return r.Render(stdout, f.format)
}

// buildReport is report.Build, with a hint when the schema is missing.
func buildReport(ctx context.Context, store *chstore.Store, o report.Options) (*report.Report, error) {
	r, err := report.Build(ctx, store, o)
	if err != nil {
		if strings.Contains(err.Error(), "doesn't exist") || strings.Contains(err.Error(), "does not exist") {
			return nil, fmt.Errorf("%w\n(the recorder creates the tables: run `hourglass recorder` with --migrate against this database)", err)
		}
		return nil, err
	}
	return r, nil
}

// window returns the report window from the flags, or the problems.
func (f *reportFlags) window(now time.Time) (from, to time.Time, errs cli.Problems) {
	if f.since != 0 && (f.from != "" || f.to != "") {
		errs.Add("since", "give --since or --from/--to, not both")
		return
	}
	if f.from == "" && f.to != "" {
		errs.Add("to", "needs --from")
		return
	}
	if f.from == "" {
		since := f.since
		if since == 0 {
			since = DefaultReportSince
		}
		if since < 0 {
			errs.Add("since", "%v: must be positive", since)
			return
		}
		return now.Add(-since), now, nil
	}
	var err error
	if from, err = parseTime(f.from); err != nil {
		errs.Add("from", "%v", err)
	}
	to = now
	if f.to != "" {
		if to, err = parseTime(f.to); err != nil {
			errs.Add("to", "%v", err)
		}
	}
	if len(errs) == 0 && !from.Before(to) {
		errs.Add("to", "%s is not after --from %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	return from, to, errs
}

// timeLayouts are the layouts parseTime accepts besides unix seconds; the
// ones without a zone are UTC.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", time.DateOnly}

func parseTime(s string) (time.Time, error) {
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t, nil
		}
	}
	var sec int64
	if _, err := fmt.Sscanf(s, "%d", &sec); err == nil && fmt.Sprint(sec) == s && sec > 0 {
		return time.Unix(sec, 0).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2024-05-14T12:00:00Z), \"2024-05-14 12:00\", 2024-05-14 or unix seconds", s)
}

// writeFile writes path through write, replacing it only when complete.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// register registers the flags of report on fs.
func (f *reportFlags) register(fs *cli.FlagSet) {
	fs.DurationVar(&f.since, "since", "", 0, "report the `duration` up to now (default 1h when --from is not given)")
	fs.StringVar(&f.from, "from", "", "", "start of the window (`time`, included)")
	fs.StringVar(&f.to, "to", "", "", "end of the window (`time`, excluded; default now)")
	fs.StringVar(&f.format, "format", "", report.FormatText, "output `format` on stdout: text or json")
	fs.StringVar(&f.html, "html", "", "", "also write the report as one self-contained HTML `file`")
	fs.DurationVar(&f.lateThreshold, "late-threshold", "", report.DefaultLateThreshold, "a final attempt later than this is listed as late")
	fs.IntVar(&f.limit, "limit", "", report.DefaultLimit, "how many late or failed attempts to list")
	fs.DurationVar(&f.bucket, "bucket", "", 0, "bucket of the lateness timeline (default: 1s to 24h, at most 60 buckets)")
	fs.DurationVar(&f.forecast, "forecast", "", report.DefaultForecast, "forecast the open deadlines due per minute this far past the window's end (from 10m before it); 0 leaves the forecast out")
	fs.DurationVar(&f.timeout, "timeout", "", time.Minute, "bound on the queries")
	chflags.Register(fs, &f.clickhouse)
}

// validate reports every problem with the flags, and returns the window
// they give, at now.
func (f *reportFlags) validate(now time.Time) (from, to time.Time, errs cli.Problems) {
	from, to, errs = f.window(now)
	if f.format != report.FormatText && f.format != report.FormatJSON {
		errs.Add("format", "%q: want text or json (HTML goes to --html FILE)", f.format)
	}
	if f.html != "" {
		if st, err := os.Stat(filepath.Dir(f.html)); err != nil || !st.IsDir() {
			errs.Add("html", "%q: its directory does not exist", f.html)
		}
	}
	if f.lateThreshold < 0 {
		errs.Add("late-threshold", "%v: must not be negative", f.lateThreshold)
	}
	errs.IntRange("limit", f.limit, 0, 100_000)
	if f.bucket < 0 || (f.bucket > 0 && f.bucket < time.Millisecond) {
		errs.Add("bucket", "%v: want 0 (automatic) or at least 1ms", f.bucket)
	}
	if f.bucket > 0 && to.Sub(from)/f.bucket > 10_000 {
		errs.Add("bucket", "%v cuts the window into more than 10000 buckets", f.bucket)
	}
	if f.forecast < 0 || f.forecast > report.MaxForecast {
		errs.Add("forecast", "%v: want 0 (no forecast) to %v", f.forecast, report.MaxForecast)
	}
	if f.timeout <= 0 {
		errs.Add("timeout", "%v: must be positive", f.timeout)
	}
	errs.Join(chflags.Check(f.clickhouse))
	return from, to, errs
}
