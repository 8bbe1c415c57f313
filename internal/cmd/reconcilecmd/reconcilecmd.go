package reconcilecmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"golang.org/x/time/rate"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/closerfile"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/service"
)

const reconcileUsage = `hourglass reconcile closes overdue unpaid orders the pipeline missed.

The safety net: it scans the order table of the --kind's sql closer in pages,
by the (status, created_at) index, for orders still in an open status whose
created_at + reconcile.deadline (from the closers file) is more than --grace
ago, and closes each through that closer. It reports what it found and did.

It is safe while the pipeline runs (an order closed meanwhile is reported
already_closed) and when run again (it then finds nothing), so it can run from
a CronJob. --dry-run only counts. Exit status 1 when a close failed.

Usage: hourglass reconcile --closers FILE [flags]

` + cli.FlagsHeading + "\n"

// Run is the `hourglass reconcile` command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := cli.NewFlagSet("reconcile", reconcileUsage)
	fs.SetOutput(stderr)
	o.register(fs)
	if err := service.ParseArgs(fs, args); err != nil {
		return err
	}
	if err := fs.Explain(o.validate()); err != nil {
		return service.UsageError{Err: err}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.level})).With("cmd", "reconcile")

	sc, err := o.file.OpenSQL(ctx, o.kind)
	if err != nil {
		return err
	}
	defer func() { _ = sc.Stop() }() // closes the pool; the reconciliation's result is reported
	var via closer.Closer = sc
	if o.rateLimit > 0 {
		lim := rate.NewLimiter(rate.Limit(o.rateLimit), 1)
		via = closer.CloserFunc(func(ctx context.Context, t closer.Task) (closer.Result, error) {
			if err := lim.Wait(ctx); err != nil {
				return closer.Result{}, err
			}
			return sc.Close(ctx, t)
		})
	}
	rep, err := sc.Reconcile(ctx, via, sqlcloser.ReconcileOptions{
		Kind: o.kind, Grace: o.grace, Limit: o.limit, DryRun: o.dryRun,
		Progress: func(r sqlcloser.ReconcileReport) {
			log.Info("progress", "pages", r.Pages, "found", r.Scanned, "closed", r.Outcomes[outcome.Closed], "failed", r.Outcomes[outcome.Failed])
		},
	})
	if perr := printReconcile(stdout, rep, o.format, o.dryRun); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	if n := rep.Outcomes[outcome.Failed]; n > 0 {
		return fmt.Errorf("reconcile: %d closes failed", n)
	}
	return nil
}

// options are the flags of reconcile.
type options struct {
	path      string
	file      closerfile.File // the loaded closers file
	kind      string
	grace     time.Duration
	limit     int
	dryRun    bool
	rateLimit float64
	format    string
	logLevel  string
	level     slog.Level // the parsed logLevel
}

// register registers the flags of reconcile on fs.
func (o *options) register(fs *cli.FlagSet) {
	fs.StringVar(&o.path, "closers", cli.Env("closers"), "", "closers `file` (YAML); the kind's closer must be sql, with reconcile.deadline set")
	fs.StringVar(&o.kind, "kind", cli.Env("default-kind"), canceller.DefaultKind, "task `kind` whose orders to reconcile")
	fs.DurationVar(&o.grace, "grace", cli.Env("reconcile-grace"), time.Minute, "wait past the deadline before an order counts as missed, so the pipeline closes it first")
	fs.IntVar(&o.limit, "limit", cli.Env("reconcile-limit"), 0, "close at most this many orders (0: no limit)")
	fs.BoolVar(&o.dryRun, "dry-run", "", false, "find and count, close nothing")
	fs.Float64Var(&o.rateLimit, "rate-limit", cli.Env("reconcile-rate-limit"), 100, "closes per second, so a large backlog does not flood the database (0: no limit)")
	fs.StringVar(&o.format, "format", "", "text", "report: text or json")
	fs.StringVar(&o.logLevel, "log-level", cli.Env("log-level"), "info", "progress `level`: debug, info, warn or error")
}

// validate loads the closers file and reports every problem with the flags.
func (o *options) validate() error {
	var errs cli.Problems
	if o.path == "" {
		errs.Add("closers", "required: the closers file with the kind's sql closer")
	} else {
		f, err := closerfile.Load(o.path)
		if err != nil {
			errs.Add("closers", "%v", err)
		} else if e, ok := f.Closers[o.kind]; !ok {
			errs.Add("kind", "%q is not in %s (it has %v)", o.kind, o.path, f.Kinds())
		} else if e.SQL == nil {
			errs.Add("kind", "%q has a %s closer; reconcile needs an sql closer", o.kind, e.Type())
		} else if e.SQL.Reconcile.Deadline <= 0 {
			errs.Add("closers", "%s: closers.%s.sql.reconcile.deadline is not set: how long after created_at an unpaid order is due", o.path, o.kind)
		}
		o.file = f
	}
	if o.grace < 0 {
		errs.Add("grace", "%v: must not be negative", o.grace)
	}
	if o.limit < 0 {
		errs.Add("limit", "%d: must not be negative", o.limit)
	}
	if o.rateLimit < 0 {
		errs.Add("rate-limit", "%v: must not be negative", o.rateLimit)
	}
	if !slices.Contains([]string{"text", "json"}, o.format) {
		errs.Add("format", "%q: want text or json", o.format)
	}
	if err := o.level.UnmarshalText([]byte(o.logLevel)); err != nil {
		errs.Add("log-level", "%q: want debug, info, warn or error", o.logLevel)
	}
	return errs.Err()
}

func printReconcile(w io.Writer, r sqlcloser.ReconcileReport, format string, dryRun bool) error {
	if format == "json" {
		return json.NewEncoder(w).Encode(r)
	}
	fmt.Fprintf(w, "reconcile: open orders due before %s: %d found in %d pages, %v\n",
		r.Cutoff.Format(time.RFC3339), r.Scanned, r.Pages, r.Duration.Round(time.Millisecond))
	if dryRun {
		fmt.Fprintln(w, "dry run: nothing closed")
		return nil
	}
	for _, o := range []outcome.Outcome{outcome.Closed, outcome.AlreadyClosed, outcome.Skipped, outcome.NotFound, outcome.Failed} {
		if n := r.Outcomes[o]; n > 0 || o == outcome.Closed {
			fmt.Fprintf(w, "  %-15s %d\n", o, n)
		}
	}
	if len(r.Closed) > 0 {
		fmt.Fprintf(w, "closed: %v\n", r.Closed)
	}
	for _, f := range r.Failed {
		fmt.Fprintf(w, "failed %s: %s\n", f.ID, f.Error)
	}
	return nil
}
