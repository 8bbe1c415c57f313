package sqlcloser

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/credential"
)

// Drivers.
const (
	// DriverPostgres is PostgreSQL through pgx.
	DriverPostgres = "postgres"
	// DriverMySQL is MySQL and MariaDB through go-sql-driver/mysql.
	DriverMySQL = "mysql"
)

// Defaults that Config.WithDefaults fills in for zero fields.
const (
	DefaultTable            = "orders"
	DefaultKeyColumn        = "id"
	DefaultStatusColumn     = "status"
	DefaultOpenStatus       = "UNPAID"
	DefaultClosedStatus     = "CLOSED"
	DefaultClosedAtColumn   = "closed_at"
	DefaultMaxOpenConns     = 10
	DefaultConnMaxLifetime  = 30 * time.Minute
	DefaultStatementTimeout = 5 * time.Second
	DefaultCreatedColumn    = "created_at"
	DefaultPageSize         = 500
	DefaultMaxBatch         = 500
	// MaxMaxBatch bounds Config.MaxBatch: a MySQL batch takes a
	// placeholder per order, and a statement at most 65,535.
	MaxMaxBatch = 10000
)

// NoColumn as ClosedAtColumn means the table has no close-time column.
const NoColumn = "-"

// Config configures the sql closer. Fields left zero take the default their
// doc states (see WithDefaults).
type Config struct {
	// Driver is "postgres" or "mysql" (MySQL and MariaDB). Required.
	Driver string `yaml:"driver"`
	// DSN is the data source name. Required.
	//
	// postgres: a pgx connection string or URL,
	// postgres://user:pass@host:5432/shop?sslmode=verify-full. Statements
	// run in pgx's "exec" query mode (no named prepared statements, so
	// PgBouncer in transaction mode works) unless the DSN sets
	// default_query_exec_mode itself.
	//
	// mysql: a go-sql-driver DSN, user:pass@tcp(127.0.0.1:3306)/shop.
	// parseTime=true and loc=UTC are forced, and the session time_zone is
	// set to '+00:00' unless the DSN sets time_zone: NOW() and the
	// timestamps the closer reads and compares are UTC. The session's
	// innodb_lock_wait_timeout is StatementTimeout in whole seconds (at
	// least 1) unless the DSN sets it: the server goes on running a
	// statement whose connection the driver closed, and its lock wait
	// would hold the order row a close updated. readTimeout and
	// writeTimeout default to StatementTimeout + 1s, so that a COMMIT the
	// server never answers (which no context bounds) fails instead of
	// waiting for the TCP stack. The close, status
	// and release statements run as prepared statements (prepared once
	// per connection, then one round trip each), the task id sent apart
	// from the SQL text. interpolateParams=true, which has the driver
	// escape arguments into the text instead, is accepted only when the
	// connection's character set is utf8, utf8mb4, utf8mb3, latin1, ascii
	// or binary: with charset=gbk, big5, sjis or cp932 an id can end its
	// string literal and rewrite the statement. Another charset in the DSN
	// (charset, character_set_client) is reported by Validate, another
	// one in the session by New.
	DSN credential.Secret `yaml:"dsn"`
	// TLS, when set, replaces the DSN's own TLS settings and makes TLS
	// required (no plaintext fallback). Default: the DSN's (sslmode, tls).
	TLS credential.TLS `yaml:"tls"`

	// Table is the order table, optionally schema-qualified
	// (shop.orders). Default "orders". Identifiers are quoted, so in
	// Postgres they are case-sensitive: write them as stored.
	Table string `yaml:"table"`
	// KeyColumn holds the task id; it should be unique (the primary key).
	// New looks it up: when the key column is the primary key or has a
	// unique index of its own (not partial, not on an expression), the
	// default close is one UPDATE in autocommit. Otherwise (or when New
	// cannot tell: a view, a table with inheritance children) it runs in
	// a transaction, and a close that would change more than one row is
	// rolled back and fails permanently, naming how many rows matched.
	// Default "id".
	KeyColumn string `yaml:"key_column"`
	// StatusColumn holds the order state. Default "status".
	StatusColumn string `yaml:"status_column"`
	// OpenStatuses are the states a close may change. Default ["UNPAID"].
	OpenStatuses []string `yaml:"open_statuses"`
	// ClosedStatus is the state a close sets. Default "CLOSED".
	ClosedStatus string `yaml:"closed_status"`
	// ClosedAtColumn is set to the database's current time by a close;
	// "-" means the table has none. Default "closed_at".
	ClosedAtColumn string `yaml:"closed_at_column"`
	// DeadlineColumn, when set, names the order's own deadline, a
	// timestamp column (timestamptz or timestamp on Postgres, DATETIME
	// or TIMESTAMP on MySQL, read as UTC), and guards a moved deadline:
	// a close applies only when the stored deadline, to the millisecond,
	// is not after the record's (hourglass-deadline on a retry, else
	// hourglass-due), compared with the record's time, not the clock's.
	// An order still open whose stored deadline is later is left as it
	// is, outcome.Moved with the stored deadline as Detail; a NULL
	// deadline guards nothing (the order closes as without the column).
	// New checks the column's type. Not with CloseStatement or
	// StatusStatement. Default: none (no guard).
	DeadlineColumn string `yaml:"deadline_column"`

	// CloseStatement replaces the default conditional update for unusual
	// schemas. Its only parameter is the task id, written $1 (postgres) or
	// ? (mysql); it must change one row when it closes and none otherwise.
	// What it matches is its author's responsibility: New does not look
	// at it. It runs in a transaction that is rolled back, with a
	// permanent error, when it changed more than one row; rows a trigger
	// or a cascade changes are not counted.
	// The id is bound as a string, also to the status and release
	// statements; for mysql compare it to an integer column through
	// CAST(? AS UNSIGNED) or similar (MySQL compares an integer with a
	// string as floating-point numbers). Default: built from the fields
	// above, and for mysql an integer key column gets the id as an integer.
	CloseStatement string `yaml:"close_statement"`
	// StatusStatement replaces the default status lookup
	// (SELECT status FROM table WHERE key = $1). It returns one row with
	// one column, the current state, for the task id; no row means not
	// found.
	StatusStatement string `yaml:"status_statement"`
	// ReleaseStatement, when set, runs in the same transaction right after
	// a close changed a row, with the task id as its only parameter: return
	// the stock the order held, for instance. If it fails, the close is
	// rolled back and reported as failed. Default: none.
	ReleaseStatement string `yaml:"release_statement"`

	// MaxOpenConns bounds the pool; batches (see MaxBatch) take at most
	// two of its connections at once. Default 10.
	MaxOpenConns int `yaml:"max_open_conns"`
	// MaxIdleConns is how many idle connections the pool keeps; at most
	// MaxOpenConns. Default MaxOpenConns.
	MaxIdleConns int `yaml:"max_idle_conns"`
	// ConnMaxLifetime recycles connections older than this. Default 30m.
	ConnMaxLifetime time.Duration `yaml:"conn_max_lifetime"`
	// StatementTimeout bounds each statement (and the connect of New).
	// Postgres also gets it as the server-side statement_timeout unless
	// the DSN sets one. Default 5s.
	StatementTimeout time.Duration `yaml:"statement_timeout"`

	// MaxBatch bounds how many closes go out together. Two batches run at
	// once; the closes that are ready when one starts (at most MaxBatch)
	// close in one transaction: one statement for all (and the release
	// statement for each order closed), then one status query for those
	// it did not change. On MySQL fewer than 16 close on their own
	// instead: a MySQL batch takes several round trips. Nothing waits for
	// a batch to fill: a close that finds a batch free goes out at once,
	// alone, and batches grow only while earlier ones run. A batch that
	// fails runs again order by order, so that one bad row fails only
	// itself. 1 turns batching off; it is off anyway with a CloseStatement
	// or a key column not proven unique. At most 10000. Default 500.
	MaxBatch int `yaml:"max_batch"`

	// Reconcile configures the reconcile scan.
	Reconcile ReconcileConfig `yaml:"reconcile"`
}

// ReconcileConfig configures Closer.Reconcile.
type ReconcileConfig struct {
	// CreatedColumn holds the order's creation time; (StatusColumn,
	// CreatedColumn) should be indexed. Default "created_at".
	CreatedColumn string `yaml:"created_column"`
	// Deadline is how long after creation an unpaid order is due.
	// Required to reconcile; zero disables Reconcile.
	Deadline time.Duration `yaml:"deadline"`
	// PageSize is how many orders one scan query reads. Default 500.
	PageSize int `yaml:"page_size"`
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	setString(&c.Table, DefaultTable)
	setString(&c.KeyColumn, DefaultKeyColumn)
	setString(&c.StatusColumn, DefaultStatusColumn)
	if len(c.OpenStatuses) == 0 {
		c.OpenStatuses = []string{DefaultOpenStatus}
	} else {
		c.OpenStatuses = slices.Clone(c.OpenStatuses)
	}
	setString(&c.ClosedStatus, DefaultClosedStatus)
	setString(&c.ClosedAtColumn, DefaultClosedAtColumn)
	if c.MaxOpenConns == 0 {
		c.MaxOpenConns = DefaultMaxOpenConns
	}
	if c.MaxIdleConns == 0 {
		c.MaxIdleConns = c.MaxOpenConns
	}
	if c.ConnMaxLifetime == 0 {
		c.ConnMaxLifetime = DefaultConnMaxLifetime
	}
	if c.StatementTimeout == 0 {
		c.StatementTimeout = DefaultStatementTimeout
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	setString(&c.Reconcile.CreatedColumn, DefaultCreatedColumn)
	if c.Reconcile.PageSize == 0 {
		c.Reconcile.PageSize = DefaultPageSize
	}
	return c
}

func setString(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

var (
	identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	tableRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
	pgArgRE = regexp.MustCompile(`\$([0-9]+)`)
)

// Validate reports every problem of c with defaults applied, as
// closer.Problems, each message starting with the YAML key. It resolves the
// DSN secret and parses it, so an unset environment variable is reported
// here.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var p closer.Problems
	c.checkConnection(&p)
	c.checkSchema(&p)
	c.checkStatements(&p)
	c.checkLimits(&p)
	return p.Err()
}

// checkConnection checks driver, dsn and tls.
func (c Config) checkConnection(p *closer.Problems) {
	switch c.Driver {
	case DriverPostgres, DriverMySQL:
	case "":
		p.Add("driver", "required (%s or %s)", DriverPostgres, DriverMySQL)
	default:
		p.Add("driver", "%q is not one of %s, %s", c.Driver, DriverPostgres, DriverMySQL)
	}

	if c.DSN.IsZero() {
		p.Add("dsn", "required")
	} else if err := c.DSN.Validate(); err != nil {
		p.Add("dsn", "%v", err)
	} else if dsn, _ := c.DSN.Resolve(); dsn == "" {
		p.Add("dsn", "empty")
	} else if err := parseDSN(c.Driver, dsn); err != nil {
		p.Add("dsn", "%v", err)
	}
	p.AddNamed(c.TLS.Validate()...)
}

// checkSchema checks the table, the column names and the statuses.
func (c Config) checkSchema(p *closer.Problems) {
	if !tableRE.MatchString(c.Table) {
		p.Add("table", "%q is not an identifier (letters, digits and _, optionally schema.table)", c.Table)
	}
	for _, col := range []struct{ key, val string }{
		{"key_column", c.KeyColumn},
		{"status_column", c.StatusColumn},
		{"reconcile.created_column", c.Reconcile.CreatedColumn},
	} {
		if !identRE.MatchString(col.val) {
			p.Add(col.key, "%q is not an identifier (letters, digits and _)", col.val)
		}
	}
	if c.ClosedAtColumn != NoColumn && !identRE.MatchString(c.ClosedAtColumn) {
		p.Add("closed_at_column", "%q is not an identifier (letters, digits and _) or %q", c.ClosedAtColumn, NoColumn)
	}
	c.checkDeadline(p)
	for i, s := range c.OpenStatuses {
		switch s {
		case "":
			p.Add(fmt.Sprintf("open_statuses[%d]", i), "empty")
		case c.ClosedStatus:
			p.Add(fmt.Sprintf("open_statuses[%d]", i), "%q is the closed_status", s)
		}
	}
}

// checkStatements checks that each custom statement set takes the task id
// as its one parameter.
func (c Config) checkStatements(p *closer.Problems) {
	for _, st := range []struct{ key, val string }{
		{"close_statement", c.CloseStatement},
		{"status_statement", c.StatusStatement},
		{"release_statement", c.ReleaseStatement},
	} {
		if st.val == "" {
			continue
		}
		if err := checkOneParam(c.Driver, st.val); err != nil {
			p.Add(st.key, "%v", err)
		}
	}
}

// checkLimits checks the pool sizes, the durations and the page size.
func (c Config) checkLimits(p *closer.Problems) {
	if c.MaxOpenConns < 0 {
		p.Add("max_open_conns", "%d is negative", c.MaxOpenConns)
	}
	if c.MaxIdleConns < 0 {
		p.Add("max_idle_conns", "%d is negative", c.MaxIdleConns)
	} else if c.MaxOpenConns > 0 && c.MaxIdleConns > c.MaxOpenConns {
		p.Add("max_idle_conns", "%d is more than max_open_conns %d", c.MaxIdleConns, c.MaxOpenConns)
	}
	if c.ConnMaxLifetime < 0 {
		p.Add("conn_max_lifetime", "%s is negative", c.ConnMaxLifetime)
	}
	if c.StatementTimeout < 0 {
		p.Add("statement_timeout", "%s is negative", c.StatementTimeout)
	}
	if c.MaxBatch < 0 || c.MaxBatch > MaxMaxBatch {
		p.Add("max_batch", "%d is not between 1 and %d", c.MaxBatch, MaxMaxBatch)
	}
	if c.Reconcile.Deadline < 0 {
		p.Add("reconcile.deadline", "%s is negative", c.Reconcile.Deadline)
	}
	if c.Reconcile.PageSize < 0 {
		p.Add("reconcile.page_size", "%d is negative", c.Reconcile.PageSize)
	}
}

// parseDSN checks that dsn parses for driver; its errors never hold the
// password.
func parseDSN(driver, dsn string) error {
	switch driver {
	case DriverPostgres:
		if _, err := pgx.ParseConfig(dsn); err != nil {
			return err // pgconn redacts the password
		}
	case DriverMySQL:
		mc, err := mysql.ParseDSN(dsn)
		if err != nil {
			return fmt.Errorf("not a go-sql-driver DSN (user:pass@tcp(host:3306)/db): %w", err)
		}
		if mc.InterpolateParams {
			return checkInterpolationDSN(dsn)
		}
	}
	return nil
}

// checkOneParam reports a custom statement that does not take exactly the
// task id as its parameter.
func checkOneParam(driver, stmt string) error {
	switch driver {
	case DriverPostgres:
		seen := false
		for _, m := range pgArgRE.FindAllStringSubmatch(stmt, -1) {
			if m[1] != "1" {
				return fmt.Errorf("uses $%s; the only parameter is the task id, $1", m[1])
			}
			seen = true
		}
		if !seen {
			return fmt.Errorf("does not use $1, the task id")
		}
	case DriverMySQL:
		if n := strings.Count(stmt, "?"); n != 1 {
			return fmt.Errorf("has %d ? placeholders; it takes one, the task id", n)
		}
	}
	return nil
}
