package sqlcloser_test

import (
	"fmt"
	"testing"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/outcome"
)

// keyTable is an order table whose key column id is whatever ddl makes of
// it: ddl creates the table named by its argument (and its indexes).
type keyTable struct {
	name string
	// ddl are the statements that create the table; %[1]s in them is its
	// name.
	ddl []string
	// view: the table is a view of the table %[1]s_base.
	view bool
	// unique: New proves the key column unique and closes in autocommit.
	unique bool
	// dupes: two open orders with id 5 can be stored.
	dupes bool
}

var keyTables = map[string][]keyTable{
	sqlcloser.DriverPostgres: {
		{name: "primary key", unique: true,
			ddl: []string{`CREATE TABLE %[1]s (id bigint PRIMARY KEY, status text NOT NULL, closed_at timestamptz, created_at timestamptz NOT NULL DEFAULT now())`}},
		{name: "unique constraint", unique: true,
			ddl: []string{`CREATE TABLE %[1]s (id bigint NOT NULL UNIQUE, status text NOT NULL, closed_at timestamptz, created_at timestamptz NOT NULL DEFAULT now())`}},
		{name: "unique index with included columns", unique: true,
			ddl: []string{`CREATE TABLE %[1]s (id bigint, status text NOT NULL, closed_at timestamptz, created_at timestamptz NOT NULL DEFAULT now())`,
				`CREATE UNIQUE INDEX ON %[1]s (id) INCLUDE (status)`}},
		{name: "no index", dupes: true,
			ddl: []string{`CREATE TABLE %[1]s (id bigint, status text NOT NULL, closed_at timestamptz, created_at timestamptz NOT NULL DEFAULT now())`}},
		{name: "index not unique", dupes: true,
			ddl: []string{`CREATE TABLE %[1]s (id bigint, status text NOT NULL, closed_at timestamptz, created_at timestamptz NOT NULL DEFAULT now())`,
				`CREATE INDEX ON %[1]s (id)`}},
		{name: "unique on two columns", dupes: true,
			ddl: []string{`CREATE TABLE %[1]s (id bigint, status text NOT NULL, closed_at timestamptz, created_at timestamptz NOT NULL DEFAULT now(), UNIQUE (id, created_at))`}},
		{name: "partial unique index", dupes: true,
			ddl: []string{`CREATE TABLE %[1]s (id bigint, status text NOT NULL, closed_at timestamptz, created_at timestamptz NOT NULL DEFAULT now())`,
				`CREATE UNIQUE INDEX ON %[1]s (id) WHERE status = 'PAID'`}},
		{name: "unique expression index", dupes: true,
			ddl: []string{`CREATE TABLE %[1]s (id bigint, status text NOT NULL, closed_at timestamptz, created_at timestamptz NOT NULL DEFAULT now(), n serial)`,
				`CREATE UNIQUE INDEX ON %[1]s ((id * 1000 + n))`}},
		{name: "primary key of a parent table", dupes: true,
			ddl: []string{`CREATE TABLE %[1]s (id bigint PRIMARY KEY, status text NOT NULL, closed_at timestamptz, created_at timestamptz NOT NULL DEFAULT now())`,
				`CREATE TABLE %[1]s_child () INHERITS (%[1]s)`}},
		{name: "partitioned by the key", unique: true,
			ddl: []string{`CREATE TABLE %[1]s (id bigint PRIMARY KEY, status text NOT NULL, closed_at timestamptz, created_at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (id)`,
				`CREATE TABLE %[1]s_p0 PARTITION OF %[1]s FOR VALUES FROM (MINVALUE) TO (MAXVALUE)`}},
		{name: "a view", dupes: true, view: true,
			ddl: []string{`CREATE TABLE %[1]s_base (id bigint, status text NOT NULL, closed_at timestamptz, created_at timestamptz NOT NULL DEFAULT now())`,
				`CREATE VIEW %[1]s AS SELECT * FROM %[1]s_base`}},
	},
	sqlcloser.DriverMySQL: {
		{name: "primary key", unique: true,
			ddl: []string{"CREATE TABLE %[1]s (id BIGINT PRIMARY KEY, status VARCHAR(16) NOT NULL, closed_at DATETIME(6) NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"}},
		{name: "unique key", unique: true,
			ddl: []string{"CREATE TABLE %[1]s (pk INT AUTO_INCREMENT PRIMARY KEY, id BIGINT NULL, status VARCHAR(16) NOT NULL, closed_at DATETIME(6) NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), UNIQUE KEY (id))"}},
		{name: "unique prefix of a string key", unique: true,
			ddl: []string{"CREATE TABLE %[1]s (id VARCHAR(40) NOT NULL, status VARCHAR(16) NOT NULL, closed_at DATETIME(6) NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), UNIQUE KEY (id(8)))"}},
		{name: "no index", dupes: true,
			ddl: []string{"CREATE TABLE %[1]s (id BIGINT NOT NULL, status VARCHAR(16) NOT NULL, closed_at DATETIME(6) NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"}},
		{name: "index not unique", dupes: true,
			ddl: []string{"CREATE TABLE %[1]s (id BIGINT NOT NULL, status VARCHAR(16) NOT NULL, closed_at DATETIME(6) NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), KEY (id))"}},
		{name: "unique on two columns", dupes: true,
			ddl: []string{"CREATE TABLE %[1]s (id BIGINT NOT NULL, status VARCHAR(16) NOT NULL, closed_at DATETIME(6) NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), UNIQUE KEY (id, created_at))"}},
		{name: "a view", dupes: true, view: true,
			ddl: []string{"CREATE TABLE %[1]s_base (id BIGINT NOT NULL, status VARCHAR(16) NOT NULL, closed_at DATETIME(6) NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
				"CREATE VIEW %[1]s AS SELECT * FROM %[1]s_base"}},
	},
}

// TestCloseKeyNotUnique: when New cannot prove the key column unique, the
// default close runs in a transaction, and a close that would change two
// orders with the same id changes none and fails permanently, naming how
// many rows matched. One order with its id is closed as usual. When the
// key is unique, the close runs alone and closes exactly once.
func TestCloseKeyNotUnique(t *testing.T) {
	t.Parallel()
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			for _, kt := range keyTables[driver] {
				t.Run(kt.name, func(t *testing.T) {
					t.Parallel()
					b := newBundle(t, driver)
					table := b.table + "_k"
					for _, ddl := range kt.ddl {
						b.exec(t, fmt.Sprintf(ddl, table))
					}
					t.Cleanup(func() {
						drops := []string{"DROP TABLE IF EXISTS " + table}
						switch {
						case kt.view:
							drops = []string{"DROP VIEW " + table, "DROP TABLE " + table + "_base"}
						case driver == sqlcloser.DriverPostgres:
							drops[0] += " CASCADE" // with its children and partitions
						}
						for _, d := range drops {
							if _, err := b.db.Exec(d); err != nil {
								t.Errorf("%s: %v", d, err)
							}
						}
					})
					insert := `INSERT INTO ` + table + ` (id, status) VALUES ($1, 'UNPAID')`
					if kt.name == "primary key of a parent table" {
						b.exec(t, `INSERT INTO `+table+` (id, status) VALUES (5, 'UNPAID')`)
						insert = `INSERT INTO ` + table + `_child (id, status) VALUES ($1, 'UNPAID')`
					} else {
						b.exec(t, insert, 5)
					}
					b.exec(t, `INSERT INTO `+table+` (id, status) VALUES (6, 'UNPAID')`)
					if kt.dupes {
						b.exec(t, insert, 5)
					}

					cfg := b.config()
					cfg.Table = table
					c := newCloser(t, cfg)
					if got := sqlcloser.KeyUnique(c); got != kt.unique {
						t.Errorf("key column proven unique = %v, want %v", got, kt.unique)
					}
					if got := sqlcloser.Batching(c); got != kt.unique {
						t.Errorf("batching = %v, want it only with a key proven unique (%v)", got, kt.unique)
					}

					res, err := closeOne(t, c, "5")
					if kt.dupes {
						if err == nil || !closer.IsPermanent(err) || res.Outcome != outcome.Failed || !contains(err.Error(), `close "5"`, "2 rows") {
							t.Errorf("close 5 = %+v, %v; want failed, a permanent error naming 2 rows", res, err)
						}
						t.Log(err)
					} else if err != nil || res.Outcome != outcome.Closed {
						t.Errorf("close 5 = %+v, %v; want closed", res, err)
					}
					wantOpen := map[bool]int{true: 2, false: 0}[kt.dupes]
					if n := count(t, b, `SELECT count(*) FROM `+table+` WHERE id = 5 AND status = 'UNPAID' AND closed_at IS NULL`); n != wantOpen {
						t.Errorf("%d orders 5 still open, want %d", n, wantOpen)
					}
					if got := mustClose(t, c, "6"); got.Outcome != outcome.Closed {
						t.Errorf("close 6 = %+v", got)
					}
					if got := mustClose(t, c, "6"); got.Outcome != outcome.AlreadyClosed {
						t.Errorf("second close 6 = %+v", got)
					}
					if n := count(t, b, `SELECT count(*) FROM `+table+` WHERE status = 'CLOSED'`); n != 1+map[bool]int{true: 0, false: 1}[kt.dupes] {
						t.Errorf("%d orders closed", n)
					}
					if kt.unique {
						got := closeBatch(t, c, "5", "6", "404")
						want := []outcome.Outcome{outcome.AlreadyClosed, outcome.AlreadyClosed, outcome.NotFound}
						for i := range got {
							if got[i].Outcome != want[i] {
								t.Errorf("batch close %d = %+v, want %s", i, got[i], want[i])
							}
						}
					}
				})
			}
		})
	}
}

func count(t testing.TB, b *bundle, query string) int {
	t.Helper()
	var n int
	if err := b.db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestKeyUniqueMySQLMerge: the primary key of a MERGE table does not span
// the tables it merges, which may hold the same id each.
func TestKeyUniqueMySQLMerge(t *testing.T) {
	t.Parallel()
	b := newBundle(t, sqlcloser.DriverMySQL)
	table := b.table + "_m"
	b.exec(t, `CREATE TABLE `+table+`_a (id BIGINT PRIMARY KEY, status VARCHAR(16) NOT NULL, closed_at DATETIME(6) NULL) ENGINE=MyISAM`)
	b.exec(t, `CREATE TABLE `+table+`_b LIKE `+table+`_a`)
	b.exec(t, `CREATE TABLE `+table+` (id BIGINT NOT NULL, status VARCHAR(16) NOT NULL, closed_at DATETIME(6) NULL, PRIMARY KEY (id))
		ENGINE=MERGE UNION=(`+table+`_a, `+table+`_b) INSERT_METHOD=LAST`)
	for _, name := range []string{table + "_b", table + "_a", table} { // run in reverse
		b.drop(t, name)
	}
	cfg := b.config()
	cfg.Table = table
	if c := newCloser(t, cfg); sqlcloser.KeyUnique(c) {
		t.Error("the primary key of a MERGE table is taken for unique")
	}
}
