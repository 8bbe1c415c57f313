package sqlcloser

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// reportListMax bounds ReconcileReport.Closed and ReconcileReport.Failed.
const reportListMax = 1000

// ReconcileOptions tunes one Reconcile run. The zero value closes every
// missed order with the real clock.
type ReconcileOptions struct {
	// Kind is the Task.Kind given to the closer.
	Kind string
	// Grace is the extra wait past the deadline before an order counts as
	// missed, so that the pipeline gets to close it first. Default 0.
	Grace time.Duration
	// Limit stops the run after this many orders; 0 means no limit.
	Limit int
	// DryRun finds and counts the missed orders and closes nothing.
	DryRun bool
	// Clock tells the time the cutoff is computed from. Default clock.Real{}.
	Clock clock.Clock
	// Progress, when set, is called after each page with the report so far
	// (its map and slices are the live ones: copy what you keep).
	Progress func(ReconcileReport)
}

// ReconcileReport is what a Reconcile run found and did.
type ReconcileReport struct {
	// Scanned counts the missed orders found.
	Scanned int `json:"scanned"`
	// Outcomes counts the closes by outcome (failed included).
	Outcomes map[outcome.Outcome]int `json:"outcomes"`
	// Closed lists the ids closed, at most the first 1000.
	Closed []string `json:"closed,omitempty"`
	// Failed lists the closes that failed, at most the first 1000.
	Failed []ReconcileFailure `json:"failed,omitempty"`
	// Cutoff: open orders created before it were due (creation + deadline
	// + grace before the run's start).
	Cutoff time.Time `json:"cutoff"`
	// Pages counts the scan queries.
	Pages int `json:"pages"`
	// Duration is how long the run took, by the run's clock.
	Duration time.Duration `json:"duration_ns"`
}

// ReconcileFailure is one close that failed.
type ReconcileFailure struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// Reconcile is the safety net behind the pipeline: it closes, through via
// (c when nil), every order still in an open status whose creation +
// reconcile.deadline is before now - o.Grace. It reads the table in pages
// of reconcile.page_size by the (status, created_at) index, with keyset
// pagination on (created_at, key), and closes each order of a page before
// reading the next.
//
// Each close's task has the run's start - o.Grace as its deadline
// (Meta.Due), so that with a deadline column an order whose stored deadline
// is later is left open, outcome.Moved, and closes in the run after it.
//
// It is safe while the pipeline runs (an order the pipeline closed first
// yields already_closed, or leaves the scan) and idempotent: a second run
// finds nothing more to close. A failed close is recorded in the report and
// the scan goes on; a failed scan query, or ctx ending, ends the run with an
// error and the report so far.
func (c *Closer) Reconcile(ctx context.Context, via closer.Closer, o ReconcileOptions) (ReconcileReport, error) {
	clk := o.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	if via == nil {
		via = c
	}
	start := clk.Now()
	rep := ReconcileReport{
		Outcomes: map[outcome.Outcome]int{},
		Cutoff:   start.Add(-c.cfg.Reconcile.Deadline - o.Grace).UTC(),
	}
	err := c.reconcile(ctx, via, o, &rep)
	rep.Duration = clk.Now().Sub(start)
	return rep, err
}

// reconcile checks o, then reads the due orders page after page and closes
// them through via, into rep.
func (c *Closer) reconcile(ctx context.Context, via closer.Closer, o ReconcileOptions, rep *ReconcileReport) error {
	rc := c.cfg.Reconcile
	if rc.Deadline <= 0 {
		return errors.New("reconcile: reconcile.deadline is not set")
	}
	if o.Grace < 0 || o.Limit < 0 {
		return fmt.Errorf("reconcile: negative grace %s or limit %d", o.Grace, o.Limit)
	}
	var last *dueOrder
	for {
		limit := rc.PageSize
		if o.Limit > 0 {
			limit = min(limit, o.Limit-rep.Scanned)
		}
		if limit <= 0 {
			return nil
		}
		page, err := c.scanPage(ctx, rep.Cutoff, last, limit)
		if err != nil {
			return fmt.Errorf("reconcile %s: page %d: %w", c.cfg.Table, rep.Pages+1, err)
		}
		rep.Pages++
		if err := c.closePage(ctx, via, o, page, rep); err != nil {
			return err
		}
		if o.Progress != nil {
			o.Progress(*rep)
		}
		if len(page) < limit {
			return nil
		}
		last = &page[len(page)-1]
	}
}

// closePage counts the orders of page and, unless o.DryRun, closes each
// through via, recording the outcome in rep. A failed close is recorded
// and the page goes on; ctx ending ends it with ctx's error.
func (c *Closer) closePage(ctx context.Context, via closer.Closer, o ReconcileOptions, page []dueOrder, rep *ReconcileReport) error {
	due := rep.Cutoff.Add(c.cfg.Reconcile.Deadline) // the run's start - grace
	for i := range page {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reconcile %s: %w", c.cfg.Table, err)
		}
		rep.Scanned++
		if o.DryRun {
			continue
		}
		id := page[i].id
		res, err := via.Close(ctx, closer.Task{ID: id, Kind: o.Kind, Attempt: 1, Meta: tiers.Meta{Due: due}})
		if err == nil && !res.Outcome.Final() {
			err = fmt.Errorf("close %q: closer returned outcome %q without an error", id, res.Outcome)
		}
		if err != nil {
			rep.Outcomes[outcome.Failed]++
			if len(rep.Failed) < reportListMax {
				rep.Failed = append(rep.Failed, ReconcileFailure{ID: id, Error: err.Error()})
			}
			if ctx.Err() != nil {
				return fmt.Errorf("reconcile %s: %w", c.cfg.Table, ctx.Err())
			}
			continue
		}
		rep.Outcomes[res.Outcome]++
		if res.Outcome == outcome.Closed && len(rep.Closed) < reportListMax {
			rep.Closed = append(rep.Closed, id)
		}
	}
	return nil
}

// dueOrder is one row of a scan page.
type dueOrder struct {
	id      string
	created time.Time
	key     any // id as bound
}

// scanPage reads up to limit due orders created before cutoff, after last.
func (c *Closer) scanPage(ctx context.Context, cutoff time.Time, last *dueOrder, limit int) ([]dueOrder, error) {
	st := scanStatement(c.cfg, last != nil, limit)
	args := make([]any, len(st.args))
	for i, a := range st.args {
		switch a.kind {
		case argLiteral:
			args[i] = a.value
		case argCutoff:
			args[i] = cutoff
		case argAfterAt:
			args[i] = last.created
		case argAfterKey:
			args[i] = last.key
		}
	}
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StatementTimeout)
	defer cancel()
	rows, err := c.db.QueryContext(sctx, st.sql, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	page := make([]dueOrder, 0, limit)
	for rows.Next() {
		var r dueOrder
		if err := rows.Scan(&r.id, &r.created); err != nil {
			return nil, err
		}
		if r.key, err = c.keyArg(r.id); err != nil {
			return nil, err
		}
		page = append(page, r)
	}
	return page, rows.Err()
}
