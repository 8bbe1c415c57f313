package sqlcloser

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// New validates cfg (with defaults applied), opens the connection pool and
// pings the database with ctx, bounded by StatementTimeout. A ping failure
// names the DSN's host and database, never its password. It then looks up
// whether the key column is unique (see keyIsUnique) and, for mysql, the
// key column's type and, when the DSN sets interpolateParams=true, the
// session's character set, which must be one in which escaping is safe.
func New(ctx context.Context, cfg Config) (*Closer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sql closer: invalid config: %w", err)
	}
	dsn, err := cfg.DSN.Resolve()
	if err != nil {
		return nil, fmt.Errorf("sql closer: dsn: %w", err)
	}
	tc, err := cfg.TLS.Config()
	if err != nil {
		return nil, fmt.Errorf("sql closer: %w", err)
	}
	db, where, interpolate, err := open(cfg, dsn, tc)
	if err != nil {
		return nil, fmt.Errorf("sql closer: dsn: %w", err)
	}
	db.SetMaxOpenConns(cfg.MaxOpenConns)
	db.SetMaxIdleConns(cfg.MaxIdleConns)
	db.SetConnMaxLifetime(cfg.ConnMaxLifetime)

	c := &Closer{cfg: cfg, db: db}
	pctx, cancel := context.WithTimeout(ctx, cfg.StatementTimeout)
	defer cancel()
	if err := c.inspect(pctx, where, interpolate); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sql closer: %w", err)
	}
	// MySQL runs the fixed statements prepared; Postgres runs them in
	// pgx's exec mode, one round trip without a named prepared statement.
	prepare := cfg.Driver == DriverMySQL
	c.close = newQuery(closeStatement(cfg, c.deadlineType), prepare)
	c.status = newQuery(statusStatement(cfg, c.deadlineType), prepare)
	c.release = newQuery(releaseStatement(cfg), prepare)
	// Prepare the statements now, so that the first closes do not wait
	// for it. A statement that cannot be prepared yet (the table is not
	// there) is prepared again by the close that needs it, and fails
	// there as it would run.
	for _, q := range []*query{c.close, c.status, c.release} {
		_, _ = q.prepared(pctx, db)
	}
	return c, nil
}

// open opens the connection pool of cfg.Driver on dsn, with TLS config tc
// when not nil. where names the database for errors ("postgres at
// host:port/db"); interpolate is mysql's interpolateParams=true. Its
// errors are the DSN's.
func open(cfg Config, dsn string, tc *tls.Config) (db *sql.DB, where string, interpolate bool, err error) {
	switch cfg.Driver {
	case DriverPostgres:
		db, where, err = openPostgres(cfg, dsn, tc)
	case DriverMySQL:
		db, where, interpolate, err = openMySQL(cfg, dsn, tc)
	}
	return db, where, interpolate, err
}

// openPostgres opens a pgx pool: exec query mode and the server-side
// statement_timeout unless the DSN sets them, and tc, when not nil, with
// no plaintext fallback.
func openPostgres(cfg Config, dsn string, tc *tls.Config) (*sql.DB, string, error) {
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, "", err
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
	where := fmt.Sprintf("postgres at %s/%s", net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port))), pc.Database)
	return stdlib.OpenDB(*pc, stdlib.OptionShouldPing(shouldPing)), where, nil
}

// ioTimeoutMargin is how much longer than StatementTimeout a MySQL
// connection may wait for one read or write (see openMySQL).
const ioTimeoutMargin = time.Second

// openMySQL opens a go-sql-driver pool: UTC times and session time zone
// (unless the DSN sets time_zone), and tc when not nil. interpolate is the
// DSN's interpolateParams.
func openMySQL(cfg Config, dsn string, tc *tls.Config) (db *sql.DB, where string, interpolate bool, err error) {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, "", false, err
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
	// The driver ends a statement whose context ends by closing its
	// connection, and the server goes on running it: a close whose
	// release statement waits for a lock would keep the order row it
	// updated locked, against the customer's payment, for up to
	// innodb_lock_wait_timeout (50s by default) after the close failed.
	// The server's lock waits end with the statement's (whole seconds).
	if _, ok := mc.Params["innodb_lock_wait_timeout"]; !ok {
		mc.Params["innodb_lock_wait_timeout"] = strconv.FormatInt(int64(max(1, math.Ceil(cfg.StatementTimeout.Seconds()))), 10)
	}
	// The driver ends a statement whose context ends by closing its
	// connection, but COMMIT and ROLLBACK get no context from
	// database/sql: against a server that stops answering (a network
	// partition, a paused host, a failover to another address) they
	// would wait until the TCP stack gives up, about 15 minutes, holding
	// a close, a batch and a pooled connection. An I/O timeout a little
	// above StatementTimeout ends them and leaves every statement, which
	// its context ends first, as it was.
	if mc.ReadTimeout == 0 {
		mc.ReadTimeout = cfg.StatementTimeout + ioTimeoutMargin
	}
	if mc.WriteTimeout == 0 {
		mc.WriteTimeout = cfg.StatementTimeout + ioTimeoutMargin
	}
	if tc != nil {
		mc.TLS = tc
	}
	where = fmt.Sprintf("mysql at %s/%s", mc.Addr, mc.DBName)
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, "", false, err
	}
	return sql.OpenDB(conn), where, interpolate, nil
}

// inspect pings the database named where and looks up what New needs of
// it: the session's character set when interpolate, the key column's type
// (mysql) and whether it is unique (default close statement), the deadline
// column's type when there is one and, when closes are batched, the key
// column's type (postgres).
func (c *Closer) inspect(ctx context.Context, where string, interpolate bool) error {
	cfg := c.cfg
	if err := c.db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s: %w", where, err)
	}
	if interpolate {
		if err := c.checkInterpolation(ctx); err != nil {
			return fmt.Errorf("%s: dsn: %w", where, err)
		}
	}
	var err error
	if cfg.Driver == DriverMySQL {
		if c.keyKind, err = c.mysqlKeyKind(ctx); err != nil {
			return fmt.Errorf("%s: look up the type of %s.%s: %w", where, cfg.Table, cfg.KeyColumn, err)
		}
	}
	if cfg.CloseStatement == "" {
		if c.keyUnique, err = c.keyIsUnique(ctx); err != nil {
			return fmt.Errorf("%s: look up the unique indexes of %s: %w", where, cfg.Table, err)
		}
	}
	if cfg.DeadlineColumn != "" {
		if c.deadlineType, err = c.lookUpDeadlineType(ctx); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	if cfg.MaxBatch > 1 && cfg.CloseStatement == "" && c.keyUnique {
		if cfg.Driver == DriverPostgres {
			// The type's own name, without its modifier: a cast to
			// varchar(8) or character (char(1)) would cut the id short
			// and match another order.
			var keyType string
			if err := c.db.QueryRowContext(ctx, `
				SELECT quote_ident(n.nspname) || '.' || quote_ident(t.typname)
				FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid JOIN pg_namespace n ON n.oid = t.typnamespace
				WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND NOT a.attisdropped`,
				dialectOf(DriverPostgres).ident(cfg.Table), cfg.KeyColumn).Scan(&keyType); err != nil {
				return fmt.Errorf("%s: look up the type of %s.%s: %w", where, cfg.Table, cfg.KeyColumn, err)
			}
			c.pgBatch.close = pgBatchClose(cfg, keyType, c.deadlineType)
			c.pgBatch.status = batchStatus(cfg, keyType, c.deadlineType, 0)
		}
		c.batch = &batcher{run: c.runBatch, max: cfg.MaxBatch, min: 2, flushers: min(batchFlushers, cfg.MaxOpenConns)}
		if cfg.Driver == DriverMySQL {
			c.batch.min = mysqlMinBatch
		}
	}
	return nil
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
