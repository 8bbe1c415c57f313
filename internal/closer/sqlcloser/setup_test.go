package sqlcloser_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/testutil/dbtest"
)

// drivers are the databases every behaviour test runs against.
var drivers = []string{sqlcloser.DriverPostgres, sqlcloser.DriverMySQL}

// bundle is what a test needs next to the Closer: the database it closes
// in, the order table and the driver's dialect.
type bundle struct {
	driver string
	dsn    string
	db     *sql.DB // a pool of the test's own, for seeding and checks
	table  string
	// closedAt is what row reads as closed_at: the column, or NULL when
	// a test dropped it.
	closedAt string
}

func dsnOf(t testing.TB, driver string) string {
	t.Helper()
	if driver == sqlcloser.DriverMySQL {
		return dbtest.MySQLDSN(t)
	}
	return dbtest.PostgresDSN(t)
}

// newBundle creates a unique order table (dropped in t.Cleanup):
// id bigint primary key, status, created_at, closed_at, and changes, a
// column that counts updates when countChanges installed its trigger.
func newBundle(t testing.TB, driver string) *bundle {
	t.Helper()
	b := &bundle{driver: driver, dsn: dsnOf(t, driver), closedAt: "closed_at"}
	b.db = dbtest.Open(t, driver, b.dsn)
	b.db.SetMaxOpenConns(10)
	b.db.SetMaxIdleConns(2)
	b.table = dbtest.Table(t, "orders")
	if driver == sqlcloser.DriverMySQL {
		b.exec(t, `CREATE TABLE `+b.table+` (
			id BIGINT PRIMARY KEY,
			status VARCHAR(16) NOT NULL,
			created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
			closed_at DATETIME(6) NULL,
			changes INT NOT NULL DEFAULT 0,
			KEY status_created (status, created_at)
		) ENGINE=InnoDB`)
	} else {
		b.exec(t, `CREATE TABLE `+b.table+` (
			id bigint PRIMARY KEY,
			status text NOT NULL,
			created_at timestamptz NOT NULL DEFAULT now(),
			closed_at timestamptz,
			changes int NOT NULL DEFAULT 0
		)`)
		b.exec(t, `CREATE INDEX ON `+b.table+` (status, created_at)`)
	}
	b.drop(t, b.table)
	return b
}

// drop drops a table in t.Cleanup.
func (b *bundle) drop(t testing.TB, table string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := b.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
			t.Errorf("drop %s: %v", table, err)
		}
	})
}

// countChanges makes every update of a row increment its changes column.
func (b *bundle) countChanges(t testing.TB) {
	t.Helper()
	name := b.table + "_count"
	if b.driver == sqlcloser.DriverMySQL {
		b.exec(t, `CREATE TRIGGER `+name+` BEFORE UPDATE ON `+b.table+
			` FOR EACH ROW SET NEW.changes = OLD.changes + 1`)
		return
	}
	b.exec(t, `CREATE FUNCTION `+name+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN NEW.changes := OLD.changes + 1; RETURN NEW; END $$`)
	t.Cleanup(func() { _, _ = b.db.Exec("DROP FUNCTION IF EXISTS " + name + "() CASCADE") })
	b.exec(t, `CREATE TRIGGER `+name+` BEFORE UPDATE ON `+b.table+
		` FOR EACH ROW EXECUTE FUNCTION `+name+`()`)
}

var pgArg = regexp.MustCompile(`\$[0-9]+`)

// q writes a test statement, written with $n placeholders used in order,
// in the driver's dialect.
func (b *bundle) q(query string) string {
	if b.driver == sqlcloser.DriverMySQL {
		return pgArg.ReplaceAllString(query, "?")
	}
	return query
}

func (b *bundle) exec(t testing.TB, query string, args ...any) sql.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := b.db.ExecContext(ctx, b.q(query), args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return res
}

// insert adds an order created at created (now when zero).
func (b *bundle) insert(t testing.TB, id int64, status string, created time.Time) {
	t.Helper()
	if created.IsZero() {
		created = time.Now()
	}
	b.exec(t, `INSERT INTO `+b.table+` (id, status, created_at) VALUES ($1, $2, $3)`, id, status, created.UTC())
}

// row is an order as stored.
type row struct {
	status   string
	closedAt sql.NullTime
	changes  int
}

func (b *bundle) row(t testing.TB, id int64) (row, bool) {
	t.Helper()
	var r row
	err := b.db.QueryRow(b.q(`SELECT status, `+b.closedAt+`, changes FROM `+b.table+` WHERE id = $1`), id).
		Scan(&r.status, &r.closedAt, &r.changes)
	if err == sql.ErrNoRows {
		return r, false
	}
	if err != nil {
		t.Fatalf("read order %d: %v", id, err)
	}
	return r, true
}

// config is the Config of a closer on b's table.
func (b *bundle) config() sqlcloser.Config {
	return sqlcloser.Config{
		Driver: b.driver,
		DSN:    credential.Secret{Value: b.dsn},
		Table:  b.table,
	}
}

// newCloser opens a Closer on cfg and stops it in t.Cleanup.
func newCloser(t testing.TB, cfg sqlcloser.Config) *sqlcloser.Closer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := sqlcloser.New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

// setup returns a Closer on a fresh order table and its bundle; cfg, when
// set, adjusts the Config first.
func setup(t testing.TB, driver string, cfg func(*sqlcloser.Config, *bundle)) (*sqlcloser.Closer, *bundle) {
	t.Helper()
	b := newBundle(t, driver)
	c := b.config()
	if cfg != nil {
		cfg(&c, b)
	}
	return newCloser(t, c), b
}

func closeOne(t testing.TB, c closer.Closer, id string) (closer.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Close(ctx, closer.Task{ID: id, Kind: "order-timeout", Attempt: 1})
}

func mustClose(t testing.TB, c closer.Closer, id string) closer.Result {
	t.Helper()
	res, err := closeOne(t, c, id)
	if err != nil {
		t.Fatalf("Close(%s): %v", id, err)
	}
	return res
}

func id(n int64) string { return fmt.Sprint(n) }

// contains reports whether s holds every one of subs.
func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
