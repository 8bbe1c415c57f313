package sqlcloser

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

// mysqlMinBatch is the fewest orders a MySQL batch closes together; fewer
// close on their own, at once. A MySQL batch takes about eight round trips
// (isolation level, begin, connection id, the lock and the update each
// prepared and run, commit) where a close on its own takes one, so a
// batch of a few costs more than it saves (docs/benchmarks.md).
const mysqlMinBatch = 16

// batchOutcome is what a batch found for one order.
type batchOutcome struct {
	closed bool // the batch closed it
	// looked: the batch read its status (found, status); otherwise the
	// close looks it up on its own.
	looked bool
	found  bool
	status sql.NullString
	moved  sql.NullTime // see Closer.statusResult
}

// batchClose closes the orders os (distinct, at least two) in one
// transaction, the release statement run for exactly the orders it
// closed, then reads the status of the others in one query. An error of
// the close is the batch's: nothing was committed, and each close runs
// again on its own. The status query failing only leaves each close to
// look its order up. The batch runs under a context of its own, bounded
// like a close, and not ended by any one caller.
func (c *Closer) batchClose(os []order) ([]batchOutcome, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*c.cfg.StatementTimeout)
	defer cancel()
	closed, err := rerunRolledBack(ctx, func() ([]bool, error) {
		if c.cfg.Driver == DriverMySQL {
			return c.mysqlBatchUpdate(ctx, os)
		}
		return c.pgBatchUpdate(ctx, os)
	})
	if err != nil {
		return nil, err
	}
	out := make([]batchOutcome, len(os))
	var rest []int
	for i := range os {
		out[i].closed = closed[i]
		if !closed[i] {
			rest = append(rest, i)
		}
	}
	if len(rest) > 0 && c.cfg.StatusStatement == "" {
		c.batchLookup(ctx, os, rest, out)
	}
	return out, nil
}

// pgBatchUpdate runs pgBatchClose, in autocommit without a release
// statement, and reports which of os it closed.
func (c *Closer) pgBatchUpdate(ctx context.Context, os []order) ([]bool, error) {
	closed := make([]bool, len(os))
	readN := func(rows *sql.Rows) error {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return err
		}
		if n < 1 || n > int64(len(os)) {
			return fmt.Errorf("update %s: returned position %d of %d", c.cfg.Table, n, len(os))
		}
		closed[n-1] = true
		return nil
	}
	st := c.pgBatch.close
	if c.release.sql == "" {
		return closed, c.queryRows(ctx, c.db, st, os, readN)
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit: sql.ErrTxDone, ignored
	if err := c.queryRows(ctx, tx, st, os, readN); err != nil {
		return nil, err
	}
	return closed, c.releaseAndCommit(ctx, tx, os, closed)
}

// mysqlBatchUpdate locks the orders of os (mysqlBatchLock), closes the
// open ones that their deadline allows by their stored keys
// (mysqlBatchClose) and reports which of os it closed. Two ids of one row
// close it once, for the first of them that may close it. It runs in READ
// COMMITTED, which locks the rows found and no gaps.
//
// A statement that timed out leaves its transaction running on the server,
// holding the locks of the whole batch until the server notices that the
// driver closed the connection (a lock wait can last
// innodb_lock_wait_timeout, 50s by default). The orders of the batch then
// could not close on their own either, so the transaction's connection is
// killed (KILL, which a user may do to its own connections).
func (c *Closer) mysqlBatchUpdate(ctx context.Context, os []order) ([]bool, error) {
	tx, err := c.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit: sql.ErrTxDone, ignored
	var conn int64
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StatementTimeout)
	err = tx.QueryRowContext(sctx, "SELECT CONNECTION_ID()").Scan(&conn)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("connection id: %w", c.timedOut(ctx, err))
	}
	closed, err := c.mysqlBatchTx(ctx, tx, os)
	if errors.Is(err, context.DeadlineExceeded) {
		kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.StatementTimeout)
		_, _ = c.db.ExecContext(kctx, "KILL "+strconv.FormatInt(conn, 10))
		kcancel()
	}
	return closed, err
}

// mysqlBatchTx is mysqlBatchUpdate in the transaction tx.
func (c *Closer) mysqlBatchTx(ctx context.Context, tx *sql.Tx, os []order) ([]bool, error) {
	// first is the first n of each stored key: two ids of one row (under
	// a case-insensitive collation) close it for the first of them.
	first := map[any]int64{}
	var stored []order
	err := c.queryRows(ctx, tx, mysqlBatchLock(c.cfg, len(os)), os, func(rows *sql.Rows) error {
		var n int64
		var open, due sql.NullBool
		key := c.storedKey()
		if err := rows.Scan(&n, key, &open, &due); err != nil {
			return err
		}
		if !open.Valid || !open.Bool || !due.Valid || !due.Bool {
			return nil // not open, or moved: left alone, and looked up after
		}
		k := deref(key)
		if f, ok := first[k]; !ok {
			stored = append(stored, order{key: k})
		} else if f < n {
			return nil
		}
		first[k] = n
		return nil
	})
	closed := make([]bool, len(os))
	for _, n := range first {
		if n >= 1 && n <= int64(len(os)) {
			closed[n-1] = true
		}
	}
	if err != nil || len(stored) == 0 {
		return closed, err // no row to change: the deferred rollback ends it
	}
	st := mysqlBatchClose(c.cfg, len(stored))
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StatementTimeout)
	res, err := tx.ExecContext(sctx, st.sql, st.bindBatch(stored)...)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", c.cfg.Table, c.timedOut(ctx, err))
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(stored)) {
		return nil, fmt.Errorf("update %s: changed %d of the %d rows locked (%v)", c.cfg.Table, n, len(stored), err) //nolint:errorlint // err is nil when only the count is wrong, and %w would print it as %!w(<nil>)
	}
	return closed, c.releaseAndCommit(ctx, tx, os, closed)
}

// storedKey is where a MySQL key column is scanned to, as its keyKind
// binds it.
func (c *Closer) storedKey() any {
	switch c.keyKind {
	case keySigned:
		return new(int64)
	case keyUnsigned:
		return new(uint64)
	}
	return new(string)
}

func deref(p any) any {
	switch v := p.(type) {
	case *int64:
		return *v
	case *uint64:
		return *v
	case *string:
		return *v
	}
	return p
}

// releaseAndCommit runs the release statement for each order of os
// closed, then commits tx.
func (c *Closer) releaseAndCommit(ctx context.Context, tx *sql.Tx, os []order, closed []bool) error {
	if c.release.sql != "" {
		for i, o := range os {
			if !closed[i] {
				continue
			}
			if _, err := c.exec(ctx, tx, c.release, o); err != nil {
				return fmt.Errorf("release %v: %w", o.key, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// batchLookup reads the status (and, with a deadline column, the moved
// deadline) of the orders os[rest] (batchStatus) into out. When it fails,
// out is left as it was.
func (c *Closer) batchLookup(ctx context.Context, os []order, rest []int, out []batchOutcome) {
	sub := make([]order, len(rest))
	for j, i := range rest {
		sub[j] = os[i]
	}
	found := make([]batchOutcome, len(sub))
	st := c.pgBatch.status
	if c.cfg.Driver == DriverMySQL {
		st = batchStatus(c.cfg, "", c.deadlineType, len(sub))
	}
	err := c.queryRows(ctx, c.db, st, sub, func(rows *sql.Rows) error {
		var n int64
		var o batchOutcome
		if err := rows.Scan(&n, &o.status, &o.moved); err != nil {
			return err
		}
		if n >= 1 && n <= int64(len(sub)) {
			o.looked, o.found = true, true
			found[n-1] = o
		}
		return nil
	})
	if err != nil {
		return
	}
	for j, i := range rest {
		found[j].looked = true
		out[i] = found[j]
	}
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryRows runs st for the orders os on q, bounded by StatementTimeout,
// and calls each for each row.
func (c *Closer) queryRows(ctx context.Context, q querier, st statement, os []order, each func(*sql.Rows) error) error {
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StatementTimeout)
	defer cancel()
	rows, err := q.QueryContext(sctx, st.sql, st.bindBatch(os)...)
	if err != nil {
		return c.timedOut(ctx, err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return c.timedOut(ctx, rows.Err())
}
