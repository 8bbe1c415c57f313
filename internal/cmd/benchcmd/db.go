package benchcmd

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/hourglass/hourglass/internal/canceller"
)

// The closers of --closer.
const (
	closerLog      = "log"
	closerPostgres = "postgres"
	closerMySQL    = "mysql"
)

// defaultDSN is the --dsn of each database closer: the local test
// databases.
var defaultDSN = map[string]string{
	closerPostgres: "postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
	closerMySQL:    "root@tcp(127.0.0.1:3306)/test",
}

// fillChunk is how many rows one INSERT of the orders table adds;
// fillProgress how many between two progress lines.
const (
	fillChunk    = 10_000
	fillProgress = 100_000
)

// statementTimeout bounds each statement the bench runs itself.
const statementTimeout = 2 * time.Minute

// checkLoopback reports an error unless every host of dsn is a loopback
// address (or localhost): a benchmark creates, fills and drops tables, and
// must not do it to a database elsewhere.
func checkLoopback(driver, dsn string) error {
	var hosts []string
	switch driver {
	case closerPostgres:
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return fmt.Errorf("postgres DSN: %w", err)
		}
		hosts = append(hosts, cfg.Host)
		for _, f := range cfg.Fallbacks {
			hosts = append(hosts, f.Host)
		}
	case closerMySQL:
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return fmt.Errorf("mysql DSN: %w", err)
		}
		if cfg.Net != "tcp" {
			return fmt.Errorf("mysql DSN: network %q: the bench connects over TCP to a loopback address only", cfg.Net)
		}
		host, _, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			host = cfg.Addr
		}
		hosts = append(hosts, host)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("%s DSN: host %q is not a loopback address: the bench creates and drops tables, on this machine only (127.0.0.1, ::1 or localhost)", driver, h)
		}
	}
	return nil
}

// ordersTable is the table of unpaid orders a database bench closes: ids
// 0 to rows-1, status UNPAID, and a changes column that a trigger
// increments on every update, so that the check can tell a row closed
// once from one closed twice.
type ordersTable struct {
	driver, name string
	db           *sql.DB
	dir          string // holds the closers file
	rows         int
	fillTook     time.Duration
}

// dbResult is the "db" object of the bench's JSON line.
type dbResult struct {
	Driver      string  `json:"driver"`
	Table       string  `json:"table"`
	Rows        int     `json:"rows"`
	FillSeconds float64 `json:"fill_s"`
	Closed      int     `json:"closed"`      // rows CLOSED after the run
	ClosedOnce  int     `json:"closed_once"` // rows CLOSED that were updated exactly once
	MaxChanges  int     `json:"max_changes"` // most updates of one row
}

// createOrders creates a table with a unique name in c.dsn, fills it with
// rows unpaid orders and writes the closers file that points the
// canceller's sql closer at it. On an error it drops what it created.
func createOrders(ctx context.Context, c *benchConfig, rows int, stderr io.Writer) (_ *ordersTable, err error) {
	driver := map[string]string{closerPostgres: "pgx", closerMySQL: "mysql"}[c.closer]
	db, err := sql.Open(driver, c.dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: open %s: %w", c.closer, err)
	}
	o := &ordersTable{driver: c.closer, name: tableName(), db: db, rows: rows}
	defer func() {
		if err != nil {
			o.drop(false, stderr)
		}
	}()
	for _, q := range o.ddl() {
		if err := o.exec(ctx, q); err != nil {
			return nil, err
		}
	}
	if err := o.fill(ctx, stderr); err != nil {
		return nil, err
	}
	if o.dir, err = os.MkdirTemp("", "hourglass-bench-"); err != nil {
		return nil, fmt.Errorf("bench: closers file: %w", err)
	}
	dsn, _ := json.Marshal(c.dsn) // a JSON string is a YAML string
	file := fmt.Sprintf("closers:\n  %s:\n    sql:\n      driver: %s\n      dsn: {value: %s}\n      table: %s\n",
		canceller.DefaultKind, c.closer, dsn, o.name)
	if err := os.WriteFile(o.closersFile(), []byte(file), 0o600); err != nil {
		return nil, fmt.Errorf("bench: closers file: %w", err)
	}
	return o, nil
}

// tableName is a table name unique to this run.
func tableName() string {
	b := make([]byte, 3)
	rand.Read(b)
	return "hourglass_bench_" + time.Now().UTC().Format("20060102_150405") + "_" + hex.EncodeToString(b)
}

// ddl returns the statements that create the table and its trigger.
func (o *ordersTable) ddl() []string {
	if o.driver == closerMySQL {
		return []string{
			"CREATE TABLE " + o.name + " (id BIGINT PRIMARY KEY, status VARCHAR(16) NOT NULL, closed_at DATETIME(3) NULL, changes INT NOT NULL DEFAULT 0)",
			"CREATE TRIGGER " + o.name + "_count BEFORE UPDATE ON " + o.name + " FOR EACH ROW SET NEW.changes = OLD.changes + 1",
		}
	}
	return []string{
		"CREATE TABLE " + o.name + " (id BIGINT PRIMARY KEY, status VARCHAR(16) NOT NULL, closed_at TIMESTAMPTZ NULL, changes INT NOT NULL DEFAULT 0)",
		"CREATE FUNCTION " + o.name + "_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.changes := OLD.changes + 1; RETURN NEW; END $$",
		"CREATE TRIGGER " + o.name + "_count BEFORE UPDATE ON " + o.name + " FOR EACH ROW EXECUTE FUNCTION " + o.name + "_count()",
	}
}

func (o *ordersTable) exec(ctx context.Context, q string) error {
	ctx, cancel := context.WithTimeout(ctx, statementTimeout)
	defer cancel()
	if _, err := o.db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("bench: %s %s: %.60s...: %w", o.driver, o.name, q, err)
	}
	return nil
}

// fill inserts the unpaid orders, fillChunk rows per INSERT, with progress
// on stderr for large tables.
func (o *ordersTable) fill(ctx context.Context, stderr io.Writer) error {
	start := time.Now()
	var q strings.Builder
	for lo := 0; lo < o.rows; lo += fillChunk {
		q.Reset()
		q.WriteString("INSERT INTO " + o.name + " (id, status) VALUES ")
		for id := lo; id < min(lo+fillChunk, o.rows); id++ {
			if id > lo {
				q.WriteByte(',')
			}
			q.WriteString("(" + strconv.Itoa(id) + ",'UNPAID')")
		}
		if err := o.exec(ctx, q.String()); err != nil {
			return err
		}
		if done := min(lo+fillChunk, o.rows); done%fillProgress == 0 || done == o.rows && o.rows >= fillProgress {
			fmt.Fprintf(stderr, "bench: %s %s: %d/%d unpaid orders in %.1fs\n", o.driver, o.name, done, o.rows, time.Since(start).Seconds())
		}
	}
	o.fillTook = time.Since(start)
	return nil
}

func (o *ordersTable) closersFile() string { return filepath.Join(o.dir, "closers.yaml") }

// check counts the rows closed, and those updated exactly once. It runs
// after --timeout too, with its own bound.
func (o *ordersTable) check(ctx context.Context) (dbResult, error) {
	res := dbResult{Driver: o.driver, Table: o.name, Rows: o.rows, FillSeconds: round(o.fillTook.Seconds())}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statementTimeout)
	defer cancel()
	err := o.db.QueryRowContext(ctx, "SELECT COALESCE(SUM(CASE WHEN status = 'CLOSED' THEN 1 ELSE 0 END), 0),"+
		" COALESCE(SUM(CASE WHEN status = 'CLOSED' AND changes = 1 THEN 1 ELSE 0 END), 0),"+
		" COALESCE(MAX(changes), 0) FROM "+o.name).Scan(&res.Closed, &res.ClosedOnce, &res.MaxChanges)
	if err != nil {
		return res, fmt.Errorf("bench: check %s %s: %w", o.driver, o.name, err)
	}
	return res, nil
}

// drop drops the table (unless keep) and its trigger, removes the closers
// file and closes the connection pool. It runs after the bench's context
// may have ended, so it has its own bound.
func (o *ordersTable) drop(keep bool, stderr io.Writer) {
	if keep {
		fmt.Fprintf(stderr, "bench: kept table %s\n", o.name)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), statementTimeout)
		defer cancel()
		qs := []string{"DROP TABLE IF EXISTS " + o.name}
		if o.driver == closerPostgres {
			qs = append(qs, "DROP FUNCTION IF EXISTS "+o.name+"_count()")
		}
		for _, q := range qs {
			if err := o.exec(ctx, q); err != nil {
				fmt.Fprintln(stderr, err)
			}
		}
	}
	if o.dir != "" {
		os.RemoveAll(o.dir)
	}
	o.db.Close()
}

// checked is check, with an error unless each of the want rows was closed
// exactly once.
func (o *ordersTable) checked(ctx context.Context, want int) (*dbResult, error) {
	res, err := o.check(ctx)
	if err != nil {
		return nil, err
	}
	if res.ClosedOnce != want || res.Closed != want || res.MaxChanges > 1 {
		return &res, fmt.Errorf("bench: %s %s: %d of %d rows closed, %d of them exactly once (most updates of one row: %d)",
			o.driver, o.name, res.Closed, want, res.ClosedOnce, res.MaxChanges)
	}
	return &res, nil
}
