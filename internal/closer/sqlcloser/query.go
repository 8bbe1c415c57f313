package sqlcloser

import (
	"context"
	"database/sql"
	"sync"
)

// query is a statement of the close as it runs. With prepare (MySQL) it
// runs as a server-side prepared statement: database/sql prepares it once
// on each connection of the pool, and a run is then one round trip
// (COM_STMT_EXECUTE), where go-sql-driver/mysql runs a statement with
// arguments unprepared in three (prepare, execute, close) unless it
// interpolates the arguments into the text, which is not safe in every
// character set. Either way the arguments travel apart from the SQL text.
// Without prepare (Postgres, whose pgx exec mode already takes one round
// trip without a named prepared statement) it runs as text with arguments.
type query struct {
	statement
	prepare bool

	mu   sync.Mutex
	stmt *sql.Stmt // nil until prepared
}

func newQuery(st statement, prepare bool) *query {
	return &query{statement: st, prepare: prepare && st.sql != ""}
}

// prepared returns q's prepared statement, preparing it on first use, or
// nil without an error when q does not run prepared. A failed prepare is
// tried again by the next call. It takes a connection of its own, so it
// must not be called while a transaction holds one: the pool may have no
// other.
func (q *query) prepared(ctx context.Context, db *sql.DB) (*sql.Stmt, error) {
	if !q.prepare {
		return nil, nil
	}
	if stmt := q.cached(); stmt != nil {
		return stmt, nil
	}
	stmt, err := db.PrepareContext(ctx, q.sql)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stmt != nil { // a concurrent first use was quicker
		_ = stmt.Close()
		return q.stmt, nil
	}
	q.stmt = stmt
	return stmt, nil
}

// cached returns q's prepared statement, nil when it is not prepared yet.
func (q *query) cached() *sql.Stmt {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stmt
}

// exec runs q with args in tx, or on its own when tx is nil. In a
// transaction it uses the prepared statement only when it is already
// prepared (see prepared); otherwise it runs unprepared.
func (q *query) exec(ctx context.Context, db *sql.DB, tx *sql.Tx, args []any) (sql.Result, error) {
	if tx != nil {
		stmt := q.cached()
		if stmt == nil {
			return tx.ExecContext(ctx, q.sql, args...)
		}
		// Reuses the statement prepared on the transaction's connection,
		// or prepares it there.
		ts := tx.StmtContext(ctx, stmt)
		defer func() { _ = ts.Close() }()
		return ts.ExecContext(ctx, args...)
	}
	stmt, err := q.prepared(ctx, db)
	if err != nil {
		return nil, err
	}
	if stmt != nil {
		return stmt.ExecContext(ctx, args...)
	}
	return db.ExecContext(ctx, q.sql, args...)
}

// stop closes the prepared statement.
func (q *query) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stmt != nil {
		_ = q.stmt.Close()
		q.stmt = nil
	}
}
