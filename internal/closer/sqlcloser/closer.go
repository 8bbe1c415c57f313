package sqlcloser

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

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

// New validates cfg (with defaults applied), opens the connection pool and
// pings the database with ctx, bounded by StatementTimeout. A ping failure
// names the DSN's host and database, never its password. It then looks up
// whether the key column is unique (see keyIsUnique) and, for mysql, the
// key column's type and, when the DSN sets interpolateParams=true, the
// session's character set, which must be one in which escaping is safe.
func New(ctx context.Context, cfg Config) (*Closer, error) {
	cfg = cfg.WithDefaults()
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("sql closer: invalid config: %w", errors.Join(errs...))
	}
	dsn, err := cfg.DSN.Resolve()
	if err != nil {
		return nil, fmt.Errorf("sql closer: dsn: %w", err)
	}
	tc, err := cfg.TLS.Config()
	if err != nil {
		return nil, fmt.Errorf("sql closer: %w", err)
	}

	var (
		db          *sql.DB
		where       string
		interpolate bool // mysql interpolateParams=true
	)
	switch cfg.Driver {
	case DriverPostgres:
		pc, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("sql closer: dsn: %w", err)
		}
		if !strings.Contains(dsn, "default_query_exec_mode") {
			// One round trip per statement and no named prepared
			// statements, so PgBouncer in transaction mode works.
			pc.DefaultQueryExecMode = pgx.QueryExecModeExec
		}
		if _, ok := pc.RuntimeParams["statement_timeout"]; !ok {
			pc.RuntimeParams["statement_timeout"] = strconv.FormatInt(cfg.StatementTimeout.Milliseconds(), 10)
		}
		if tc != nil {
			if tc.ServerName == "" && !tc.InsecureSkipVerify {
				tc.ServerName = pc.Host
			}
			pc.TLSConfig = tc
			pc.Fallbacks = nil // TLS is required: no plaintext fallback
		}
		where = fmt.Sprintf("postgres at %s/%s", net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port))), pc.Database)
		db = stdlib.OpenDB(*pc, stdlib.OptionShouldPing(shouldPing))
	case DriverMySQL:
		mc, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, fmt.Errorf("sql closer: dsn: %w", err)
		}
		mc.ParseTime = true
		mc.Loc = time.UTC
		// InterpolateParams stays as the DSN sets it (false by default):
		// the fixed statements run as prepared statements instead, one
		// round trip each (see query). Validate refused interpolation
		// with an unsafe charset in the DSN; New checks the session's.
		interpolate = mc.InterpolateParams
		if _, ok := mc.Params["time_zone"]; !ok {
			if mc.Params == nil {
				mc.Params = map[string]string{}
			}
			mc.Params["time_zone"] = "'+00:00'"
		}
		if tc != nil {
			mc.TLS = tc
		}
		where = fmt.Sprintf("mysql at %s/%s", mc.Addr, mc.DBName)
		conn, err := mysql.NewConnector(mc)
		if err != nil {
			return nil, fmt.Errorf("sql closer: dsn: %w", err)
		}
		db = sql.OpenDB(conn)
	}
	db.SetMaxOpenConns(cfg.MaxOpenConns)
	db.SetMaxIdleConns(cfg.MaxIdleConns)
	db.SetConnMaxLifetime(cfg.ConnMaxLifetime)

	// MySQL runs the fixed statements prepared; Postgres runs them in
	// pgx's exec mode, one round trip without a named prepared statement.
	prepare := cfg.Driver == DriverMySQL
	c := &Closer{
		cfg:     cfg,
		db:      db,
		close:   newQuery(closeStatement(cfg), prepare),
		status:  newQuery(statusStatement(cfg), prepare),
		release: newQuery(releaseStatement(cfg), prepare),
	}
	fail := func(format string, args ...any) (*Closer, error) {
		_ = c.Stop()
		return nil, fmt.Errorf("sql closer: "+format, args...)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.StatementTimeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		return fail("ping %s: %w", where, err)
	}
	if interpolate {
		if err := c.checkInterpolation(pctx); err != nil {
			return fail("%s: dsn: %w", where, err)
		}
	}
	if cfg.Driver == DriverMySQL {
		if c.keyKind, err = c.mysqlKeyKind(pctx); err != nil {
			return fail("%s: look up the type of %s.%s: %w", where, cfg.Table, cfg.KeyColumn, err)
		}
	}
	if cfg.CloseStatement == "" {
		if c.keyUnique, err = c.keyIsUnique(pctx); err != nil {
			return fail("%s: look up the unique indexes of %s: %w", where, cfg.Table, err)
		}
	}
	// Prepare the statements now, so that the first closes do not wait
	// for it. A statement that cannot be prepared yet (the table is not
	// there) is prepared again by the close that needs it, and fails
	// there as it would run.
	for _, q := range []*query{c.close, c.status, c.release} {
		_, _ = q.prepared(pctx, db)
	}
	return c, nil
}

// mysqlKeyKind finds whether the key column is an integer. MySQL and MariaDB
// compare an integer column with a string as floating-point numbers, so
// '42abc' would match order 42 and ids above 2^53 might match their
// neighbours; an integer key column is therefore compared with an integer
// parsed (strictly) from the task id. A table not found binds strings, and
// the close then fails as the statement would.
func (c *Closer) mysqlKeyKind(ctx context.Context) (keyKind, error) {
	schema, table := c.mysqlTable()
	var dataType, columnType string
	err := c.db.QueryRowContext(ctx,
		`SELECT DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS
		 WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? AND COLUMN_NAME = ?`,
		schema, table, c.cfg.KeyColumn).Scan(&dataType, &columnType)
	if errors.Is(err, sql.ErrNoRows) {
		return keyString, nil
	}
	if err != nil {
		return keyString, err
	}
	switch strings.ToLower(dataType) {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		if strings.Contains(strings.ToLower(columnType), "unsigned") {
			return keyUnsigned, nil
		}
		return keySigned, nil
	}
	return keyString, nil
}

// mysqlTable splits Config.Table for information_schema lookups: schema
// is nil (the DSN's database) unless the table is schema-qualified.
func (c *Closer) mysqlTable() (schema any, table string) {
	if s, t, ok := strings.Cut(c.cfg.Table, "."); ok {
		return s, t
	}
	return nil, c.cfg.Table
}

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

// bind returns the arguments of st.
func (st *statement) bind(key any) []any {
	args := make([]any, len(st.args))
	for i, a := range st.args {
		switch a.kind {
		case argKey:
			args[i] = key
		case argLiteral:
			args[i] = a.value
		}
	}
	return args
}

// Close closes the order t.ID: the conditional update (and the release
// statement, in the same transaction) and, when it changed no row, a status
// lookup that tells AlreadyClosed, Skipped (Detail is the state) and
// NotFound apart. Errors are wrapped with the operation and the task id;
// the ones that will not go away on a retry are marked closer.Permanent.
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
	n, err := c.update(ctx, key)
	if err != nil {
		return failed, c.wrap(ctx, "close", t.ID, err)
	}
	if n == 1 {
		return closer.Result{Outcome: outcome.Closed}, nil
	}

	status, err := c.lookup(ctx, key)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return closer.Result{Outcome: outcome.NotFound}, nil
	case err != nil:
		return failed, c.wrap(ctx, "look up status of", t.ID, err)
	case status.Valid && status.String == c.cfg.ClosedStatus:
		return closer.Result{Outcome: outcome.AlreadyClosed}, nil
	case !status.Valid:
		return closer.Result{Outcome: outcome.Skipped, Detail: "NULL"}, nil
	default:
		return closer.Result{Outcome: outcome.Skipped, Detail: status.String}, nil
	}
}

// lookup reads the status of an order.
func (c *Closer) lookup(ctx context.Context, key any) (sql.NullString, error) {
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StatementTimeout)
	defer cancel()
	var status sql.NullString
	stmt, err := c.status.prepared(sctx, c.db)
	switch {
	case err != nil:
	case stmt != nil:
		err = stmt.QueryRowContext(sctx, c.status.bind(key)...).Scan(&status)
	default:
		err = c.db.QueryRowContext(sctx, c.status.sql, c.status.bind(key)...).Scan(&status)
	}
	return status, c.timedOut(ctx, err)
}

// update runs the close statement and, when it changed a row, the release
// statement, in one transaction, and returns the rows the close changed.
// More than one is a permanent error, and nothing is committed.
//
// The default close statement on a key column New proved unique, without a
// release statement, runs on its own (autocommit: one round trip instead of
// three); it changes at most one row.
func (c *Closer) update(ctx context.Context, key any) (int64, error) {
	if c.release.sql == "" && c.cfg.CloseStatement == "" && c.keyUnique {
		res, err := c.exec(ctx, nil, c.close, key)
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

	// The transaction lives at most as long as its statements may:
	// prepare, begin, close, release, commit.
	tctx, cancel := context.WithTimeout(ctx, 5*c.cfg.StatementTimeout)
	defer cancel()
	// Prepare before the transaction holds a connection (see
	// query.prepared); a statement that does not prepare runs unprepared
	// in the transaction, and fails there as it would.
	for _, q := range []*query{c.close, c.release} {
		if q.prepare && q.cached() == nil {
			pctx, pcancel := context.WithTimeout(tctx, c.cfg.StatementTimeout)
			_, _ = q.prepared(pctx, c.db)
			pcancel()
		}
	}
	tx, err := c.db.BeginTx(tctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit: sql.ErrTxDone, ignored

	res, err := c.exec(tctx, tx, c.close, key)
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
	case n > 1 && c.cfg.CloseStatement == "":
		return 0, closer.Permanent(fmt.Errorf("update %s: %d rows have this %s and are open; %s is not unique, and none was closed",
			c.cfg.Table, n, c.cfg.KeyColumn, c.cfg.KeyColumn))
	case n > 1:
		return 0, closer.Permanent(fmt.Errorf("update %s: the close statement changed %d rows; it must change one, and none was closed",
			c.cfg.Table, n))
	}
	if c.release.sql != "" {
		if _, err := c.exec(tctx, tx, c.release, key); err != nil {
			return 0, fmt.Errorf("release: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return n, nil
}

// exec runs q in tx, or on its own when tx is nil, bounded by
// StatementTimeout.
func (c *Closer) exec(ctx context.Context, tx *sql.Tx, q *query, key any) (sql.Result, error) {
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StatementTimeout)
	defer cancel()
	res, err := q.exec(sctx, c.db, tx, q.bind(key))
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
		return fmt.Errorf("%s %q: %w (%v)", op, id, cerr, err)
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
