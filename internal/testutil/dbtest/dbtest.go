package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Environment variables that override the shared servers' DSNs.
const (
	PostgresEnv = "HOURGLASS_TEST_POSTGRES_DSN"
	MySQLEnv    = "HOURGLASS_TEST_MYSQL_DSN"
)

// Default DSNs of the shared servers.
const (
	DefaultPostgresDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	DefaultMySQLDSN    = "root@tcp(127.0.0.1:3306)/test"
)

// pingTimeout bounds reaching a server.
const pingTimeout = 5 * time.Second

// PostgresDSN returns the DSN of the shared Postgres server
// ($HOURGLASS_TEST_POSTGRES_DSN or DefaultPostgresDSN) after pinging it.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(PostgresEnv)
	if dsn == "" {
		dsn = DefaultPostgresDSN
	}
	db := Open(t, "postgres", dsn)
	ping(t, db, "Postgres", PostgresEnv)
	return dsn
}

// MySQLDSN returns the DSN of the shared MySQL or MariaDB server
// ($HOURGLASS_TEST_MYSQL_DSN or DefaultMySQLDSN) after pinging it.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(MySQLEnv)
	if dsn == "" {
		dsn = DefaultMySQLDSN
	}
	db := Open(t, "mysql", dsn)
	ping(t, db, "MySQL/MariaDB", MySQLEnv)
	return dsn
}

func ping(t testing.TB, db *sql.DB, what, env string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("%s is not reachable (%v): run scripts/deps.sh, or set %s", what, err, env)
	}
}

// Open opens a pool on a "postgres" (pgx) or "mysql" DSN and closes it in
// t.Cleanup. MySQL DSNs get parseTime=true, loc=UTC and, unless they set
// one, the session time_zone '+00:00', as the sql closer does.
func Open(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	var db *sql.DB
	switch driver {
	case "postgres":
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatalf("dbtest: postgres DSN: %v", err)
		}
		db = stdlib.OpenDB(*cfg)
	case "mysql":
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatalf("dbtest: mysql DSN: %v", err)
		}
		cfg.ParseTime = true
		cfg.Loc = time.UTC
		if _, ok := cfg.Params["time_zone"]; !ok {
			if cfg.Params == nil {
				cfg.Params = map[string]string{}
			}
			cfg.Params["time_zone"] = "'+00:00'"
		}
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatalf("dbtest: mysql DSN: %v", err)
		}
		db = sql.OpenDB(conn)
	default:
		t.Fatalf("dbtest: unknown driver %q (postgres or mysql)", driver)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Table returns a table name unique to this run: prefix, "_", and 12
// random lowercase hex digits. Drop the table in t.Cleanup.
func Table(t testing.TB, prefix string) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("dbtest: random table name: %v", err)
	}
	return prefix + "_" + hex.EncodeToString(b)
}
