package sqlcloser

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
)

// Closer closes orders in a SQL table. It is safe for concurrent use.
type Closer struct {
	cfg     Config
	db      *sql.DB
	close   *query
	status  *query
	release *query
	// keyKind says how a task id is bound (see keyArg); with a custom
	// close statement, Close binds it as given.
	keyKind keyKind
	// keyUnique: New proved the key column unique (see keyIsUnique), so
	// the default close changes at most one row and runs on its own, in
	// autocommit. Otherwise it runs in a transaction that is rolled back
	// when it changed more than one row.
	keyUnique bool
	// batch groups concurrent closes (see batcher); nil when closes run
	// one by one (max_batch 1, a custom close statement, a key column
	// not proven unique).
	batch *batcher
	// pgBatch are the batch statements on Postgres, which do not depend
	// on the batch's size: built once, by inspect.
	pgBatch struct{ close, status statement }
	// deadlineType is what the statements cast a deadline bound to (see
	// lookUpDeadlineType); empty without a deadline column.
	deadlineType string
}

var (
	_ closer.Closer  = (*Closer)(nil)
	_ closer.Stopper = (*Closer)(nil)
)

type keyKind int

const (
	keyString   keyKind = iota // bound as given
	keySigned                  // MySQL integer key column: bound as int64
	keyUnsigned                // MySQL unsigned integer key column: bound as uint64
)

// keyArg is the task id as bound to statements.
func (c *Closer) keyArg(id string) (any, error) {
	switch c.keyKind {
	case keySigned:
		v, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("id is not a valid integer for %s.%s", c.cfg.Table, c.cfg.KeyColumn)
		}
		return v, nil
	case keyUnsigned:
		v, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("id is not a valid unsigned integer for %s.%s", c.cfg.Table, c.cfg.KeyColumn)
		}
		return v, nil
	}
	return id, nil
}

// bind returns the arguments of st for the order o.
func (st *statement) bind(o order) []any {
	args := make([]any, len(st.args))
	for i, a := range st.args {
		switch a.kind {
		case argKey:
			args[i] = o.key
		case argLiteral:
			args[i] = a.value
		case argBound:
			args[i] = o.bound
		}
	}
	return args
}

// Batches reports true: the closes ready at the same moment go out as one
// statement per kind (closer.Batcher).
func (c *Closer) Batches() bool { return true }

// Close closes the order t.ID: the conditional update (and the release
// statement, in the same transaction) and, when it changed no row, a status
// lookup that tells AlreadyClosed, Skipped (Detail is the state),
// NotFound and, with a deadline column, Moved (Detail is the stored
// deadline) apart. Closes that are ready at the same moment go out
// together, in a batch (see the package doc, Batches). Errors are wrapped
// with the operation and the task id; the ones that will not go away on a
// retry are marked closer.Permanent.
// When ctx ends, the error wraps ctx's error.
func (c *Closer) Close(ctx context.Context, t closer.Task) (closer.Result, error) {
	failed := closer.Result{Outcome: outcome.Failed}
	if t.ID == "" {
		return failed, closer.Permanent(errors.New("close: empty task id"))
	}
	var key any = t.ID
	if c.cfg.CloseStatement == "" {
		var err error
		if key, err = c.keyArg(t.ID); err != nil {
			return failed, closer.Permanent(fmt.Errorf("close %q: %w", t.ID, err))
		}
	}
	o, err := c.orderOf(t, key)
	if err != nil {
		return failed, closer.Permanent(fmt.Errorf("close %q: %w", t.ID, err))
	}
	if c.batch != nil {
		return c.closeBatched(ctx, o)
	}
	return c.closeAlone(ctx, o)
}

// closeAlone closes the order o on its own: the update (see update) and,
// when it changed no row, the status lookup.
func (c *Closer) closeAlone(ctx context.Context, o order) (closer.Result, error) {
	n, err := c.update(ctx, o)
	if err != nil {
		return closer.Result{Outcome: outcome.Failed}, c.wrap(ctx, "close", o.id, err)
	}
	if n == 1 {
		return closer.Result{Outcome: outcome.Closed}, nil
	}
	return c.statusOutcome(ctx, o)
}

// statusOutcome is the outcome of a close that changed no row, from the
// order's status (and stored deadline).
func (c *Closer) statusOutcome(ctx context.Context, o order) (closer.Result, error) {
	status, moved, err := c.lookup(ctx, o)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return closer.Result{Outcome: outcome.NotFound}, nil
	case err != nil:
		return closer.Result{Outcome: outcome.Failed}, c.wrap(ctx, "look up status of", o.id, err)
	}
	return c.statusResult(true, status, moved), nil
}

// statusResult is the outcome of a close that changed no row of an order
// whose status is status (found) or that is not there: NotFound, Moved
// with the stored deadline as Detail when moved is set (the order is open
// and its stored deadline later than the record's), AlreadyClosed or
// Skipped with the status as Detail.
func (c *Closer) statusResult(found bool, status sql.NullString, moved sql.NullTime) closer.Result {
	switch {
	case !found:
		return closer.Result{Outcome: outcome.NotFound}
	case moved.Valid:
		return closer.Result{Outcome: outcome.Moved, Detail: movedDetail(moved.Time)}
	case status.Valid && status.String == c.cfg.ClosedStatus:
		return closer.Result{Outcome: outcome.AlreadyClosed}
	case !status.Valid:
		return closer.Result{Outcome: outcome.Skipped, Detail: "NULL"}
	}
	return closer.Result{Outcome: outcome.Skipped, Detail: status.String}
}

// lookup reads the status of an order and, with a deadline column, its
// stored deadline when that is what kept the close from applying (see
// statusStatement).
func (c *Closer) lookup(ctx context.Context, o order) (status sql.NullString, moved sql.NullTime, err error) {
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StatementTimeout)
	defer cancel()
	dest := []any{&status}
	if c.cfg.DeadlineColumn != "" {
		dest = append(dest, &moved)
	}
	stmt, err := c.status.prepared(sctx, c.db)
	switch {
	case err != nil:
	case stmt != nil:
		err = stmt.QueryRowContext(sctx, c.status.bind(o)...).Scan(dest...)
	default:
		err = c.db.QueryRowContext(sctx, c.status.sql, c.status.bind(o)...).Scan(dest...)
	}
	return status, moved, c.timedOut(ctx, err)
}

// update runs the close statement and, when it changed a row, the release
// statement, in one transaction, and returns the rows the close changed.
// More than one is a permanent error, and nothing is committed.
//
// The default close statement on a key column New proved unique, without a
// release statement, runs on its own (autocommit: one round trip instead of
// three); it changes at most one row.
//
// A close the database rolled back to break a deadlock or a serialization
// conflict is run again at once, up to rollbackAttempts times in all: that
// is the answer the databases document for it, and concurrent duplicates of
// one order meet exactly that way.
func (c *Closer) update(ctx context.Context, o order) (int64, error) {
	return rerunRolledBack(ctx, func() (int64, error) {
		if c.release.sql == "" && c.cfg.CloseStatement == "" && c.keyUnique {
			return c.updateAlone(ctx, o)
		}
		return c.updateInTx(ctx, o)
	})
}

// rollbackAttempts bounds the runs of a close that the database keeps
// rolling back (see rerunRolledBack).
const rollbackAttempts = 3

// rerunRolledBack runs f, and again at once while the database rolls its
// transaction back to break a deadlock or a serialization conflict, up to
// rollbackAttempts runs in all or until ctx ends.
func rerunRolledBack[T any](ctx context.Context, f func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := f()
		if err == nil || attempt == rollbackAttempts || !rolledBack(err) || ctx.Err() != nil {
			return v, err
		}
	}
}

// updateAlone runs the close statement on its own, in autocommit.
func (c *Closer) updateAlone(ctx context.Context, o order) (int64, error) {
	res, err := c.exec(ctx, nil, c.close, o)
	if err != nil {
		return 0, fmt.Errorf("update %s: %w", c.cfg.Table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("update %s: rows affected: %w", c.cfg.Table, err)
	}
	if n > 1 {
		return 0, closer.Permanent(fmt.Errorf("update %s: changed %d rows: %s is not unique", c.cfg.Table, n, c.cfg.KeyColumn))
	}
	return n, nil
}

// updateInTx runs the close statement and, when it changed one row, the
// release statement, in one transaction that it commits only then.
func (c *Closer) updateInTx(ctx context.Context, o order) (int64, error) {
	// The transaction lives at most as long as its statements may:
	// prepare, begin, close, release, commit.
	tctx, cancel := context.WithTimeout(ctx, 5*c.cfg.StatementTimeout)
	defer cancel()
	c.prepareTx(tctx)
	tx, err := c.db.BeginTx(tctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit: sql.ErrTxDone, ignored

	res, err := c.exec(tctx, tx, c.close, o)
	if err != nil {
		return 0, fmt.Errorf("update %s: %w", c.cfg.Table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("update %s: rows affected: %w", c.cfg.Table, err)
	}
	switch {
	case n == 0:
		return 0, nil // nothing to commit; the deferred rollback ends it
	case n > 1:
		return 0, c.tooMany(n)
	}
	if c.release.sql != "" {
		if _, err := c.exec(tctx, tx, c.release, o); err != nil {
			return 0, fmt.Errorf("release: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return n, nil
}

// prepareTx prepares the statements of updateInTx before the transaction
// holds a connection (see query.prepared); a statement that does not
// prepare runs unprepared in the transaction, and fails there as it
// would.
func (c *Closer) prepareTx(ctx context.Context) {
	for _, q := range []*query{c.close, c.release} {
		if q.prepare && q.cached() == nil {
			pctx, pcancel := context.WithTimeout(ctx, c.cfg.StatementTimeout)
			_, _ = q.prepared(pctx, c.db)
			pcancel()
		}
	}
}

// tooMany is the permanent error of a close in a transaction that changed
// n (more than one) rows.
func (c *Closer) tooMany(n int64) error {
	if c.cfg.CloseStatement == "" {
		return closer.Permanent(fmt.Errorf("update %s: %d rows have this %s and are open; %s is not unique, and none was closed",
			c.cfg.Table, n, c.cfg.KeyColumn, c.cfg.KeyColumn))
	}
	return closer.Permanent(fmt.Errorf("update %s: the close statement changed %d rows; it must change one, and none was closed",
		c.cfg.Table, n))
}

// exec runs q for the order o in tx, or on its own when tx is nil,
// bounded by StatementTimeout.
func (c *Closer) exec(ctx context.Context, tx *sql.Tx, q *query, o order) (sql.Result, error) {
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StatementTimeout)
	defer cancel()
	res, err := q.exec(sctx, c.db, tx, q.bind(o))
	return res, c.timedOut(ctx, err)
}

// timedOut says so when err comes from the StatementTimeout bound of a
// statement run under ctx rather than from ctx.
func (c *Closer) timedOut(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("statement_timeout %s exceeded: %w", c.cfg.StatementTimeout, err)
	}
	return err
}

// wrap annotates err with the operation and the task id and classifies it:
// ctx's own error when ctx ended, closer.Permanent when a retry cannot
// help, plain (retryable) otherwise.
func (c *Closer) wrap(ctx context.Context, op, id string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%s %q: %w (%v)", op, id, cerr, err) //nolint:errorlint // classified by ctx's error alone, as the doc says
	}
	if closer.IsPermanent(err) {
		return closer.Permanent(fmt.Errorf("%s %q: %w", op, id, err))
	}
	err = fmt.Errorf("%s %q: %w", op, id, err)
	if permanent(err) {
		return closer.Permanent(err)
	}
	return err
}

// Stop closes the prepared statements and the connection pool. The
// canceller calls it after its last Close.
func (c *Closer) Stop() error {
	for _, q := range []*query{c.close, c.status, c.release} {
		q.stop()
	}
	return c.db.Close()
}

// DB returns the connection pool.
func (c *Closer) DB() *sql.DB { return c.db }
