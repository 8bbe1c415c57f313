package dbtest_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/testutil/dbtest"
)

func TestSharedServers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		driver string
		dsn    func(testing.TB) string
	}{
		{"postgres", dbtest.PostgresDSN},
		{"mysql", dbtest.MySQLDSN},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			db := dbtest.Open(t, tc.driver, tc.dsn(t))
			table := dbtest.Table(t, "dbtest")
			ctx := context.Background()
			if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (id INT PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = db.ExecContext(ctx, "DROP TABLE "+table) })
			if _, err := db.ExecContext(ctx, "INSERT INTO "+table+" VALUES (1)"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTable(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^orders_[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		name := dbtest.Table(t, "orders")
		if !re.MatchString(name) {
			t.Fatalf("Table = %q, want orders_ and 12 hex digits", name)
		}
		if seen[name] {
			t.Fatalf("Table returned %q twice", name)
		}
		seen[name] = true
	}
}

func TestStartPostgres(t *testing.T) {
	t.Parallel()
	start := time.Now()
	p := dbtest.StartPostgres(t)
	t.Logf("started in %s", time.Since(start))
	db := dbtest.Open(t, "postgres", p.DSN)
	ctx := context.Background()
	pingCtx := func() error {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return db.PingContext(c)
	}
	if err := pingCtx(); err != nil {
		t.Fatalf("ping after start: %v", err)
	}

	p.Stop(t)
	if err := pingCtx(); err == nil {
		t.Fatal("ping after stop succeeded")
	}

	start = time.Now()
	p.Start(t)
	t.Logf("restarted in %s", time.Since(start))
	if err := pingCtx(); err != nil {
		t.Fatalf("ping after restart: %v", err)
	}
}

func TestStartPostgresTLS(t *testing.T) {
	t.Parallel()
	p := dbtest.StartPostgres(t, dbtest.WithTLS())
	if p.CAFile == "" {
		t.Fatal("CAFile not set")
	}
	dsn := strings.Replace(p.DSN, "sslmode=disable", "sslmode=verify-full&sslrootcert="+p.CAFile, 1)
	db := dbtest.Open(t, "postgres", dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ssl bool
	if err := db.QueryRowContext(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil {
		t.Fatal(err)
	}
	if !ssl {
		t.Error("connection is not encrypted")
	}
}
