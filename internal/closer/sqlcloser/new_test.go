package sqlcloser_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/dbtest"
)

func TestNewErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cfg    sqlcloser.Config
		wantIn []string
	}{
		{
			name:   "invalid config",
			cfg:    sqlcloser.Config{Driver: "postgres", Table: "a b"},
			wantIn: []string{"invalid config", "dsn: required", `table: "a b"`},
		},
		{
			name: "postgres unreachable",
			cfg: sqlcloser.Config{Driver: "postgres",
				DSN: credential.Secret{Value: "postgres://shop:sekret@127.0.0.1:1/shop?sslmode=disable"}},
			wantIn: []string{"ping postgres at 127.0.0.1:1/shop"},
		},
		{
			name: "postgres wrong password",
			cfg: sqlcloser.Config{Driver: "postgres",
				DSN: credential.Secret{Value: "postgres://nosuchuser:sekret@127.0.0.1:5432/nosuchdb?sslmode=disable"}},
			wantIn: []string{"ping postgres at 127.0.0.1:5432/nosuchdb"},
		},
		{
			name: "mysql unreachable",
			cfg: sqlcloser.Config{Driver: "mysql",
				DSN: credential.Secret{Value: "shop:sekret@tcp(127.0.0.1:1)/shop"}},
			wantIn: []string{"ping mysql at 127.0.0.1:1/shop"},
		},
		{
			name: "mysql wrong password",
			cfg: sqlcloser.Config{Driver: "mysql",
				DSN: credential.Secret{Value: "nosuchuser:sekret@tcp(127.0.0.1:3306)/test"}},
			wantIn: []string{"ping mysql at 127.0.0.1:3306/test"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := sqlcloser.New(ctx, tt.cfg)
			if err == nil {
				_ = c.Stop()
				t.Fatal("New succeeded")
			}
			t.Log(err)
			if !contains(err.Error(), tt.wantIn...) {
				t.Errorf("error %q does not hold %q", err, tt.wantIn)
			}
			if strings.Contains(err.Error(), "sekret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// TestNewTLS checks that tls is applied, verified and required.
func TestNewTLS(t *testing.T) {
	t.Parallel()
	pg := dbtest.StartPostgres(t, dbtest.WithTLS())

	t.Run("postgres verified", func(t *testing.T) {
		t.Parallel()
		// sslmode=disable in the DSN: tls wins.
		cfg := sqlcloser.Config{Driver: sqlcloser.DriverPostgres, TLS: credential.TLS{CAFile: pg.CAFile}}
		cfg.DSN.Value = pg.DSN
		c := newCloser(t, cfg)
		var ssl bool
		if err := c.DB().QueryRow("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil {
			t.Fatal(err)
		}
		if !ssl {
			t.Error("the connection is not encrypted")
		}
	})

	for _, tt := range []struct {
		name string
		cfg  sqlcloser.Config
	}{
		{
			name: "postgres wrong server name",
			cfg: sqlcloser.Config{Driver: sqlcloser.DriverPostgres, DSN: credential.Secret{Value: pg.DSN},
				TLS: credential.TLS{CAFile: pg.CAFile, ServerName: "db.example"}},
		},
		{
			// The shared server has no TLS or another certificate: either
			// way no plaintext fallback.
			name: "postgres other server",
			cfg: sqlcloser.Config{Driver: sqlcloser.DriverPostgres, DSN: credential.Secret{Value: dbtest.PostgresDSN(t)},
				TLS: credential.TLS{CAFile: pg.CAFile}},
		},
		{
			name: "mysql other server",
			cfg: sqlcloser.Config{Driver: sqlcloser.DriverMySQL, DSN: credential.Secret{Value: dbtest.MySQLDSN(t)},
				TLS: credential.TLS{CAFile: pg.CAFile}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := sqlcloser.New(ctx, tt.cfg)
			if err == nil {
				_ = c.Stop()
				t.Fatal("New succeeded without a verified TLS connection")
			}
			t.Log(err)
		})
	}
}

// TestCloseMySQLKeys: MySQL compares an integer column with a string as
// doubles; the closer binds integers, so neighbouring big ids and ids with
// trailing junk do not match. A string key column binds strings.
func TestCloseMySQLKeys(t *testing.T) {
	t.Parallel()
	t.Run("big integer ids", func(t *testing.T) {
		t.Parallel()
		c, b := setup(t, sqlcloser.DriverMySQL, nil)
		const big = int64(1) << 53
		b.insert(t, big, "UNPAID", time.Time{})
		b.insert(t, 42, "UNPAID", time.Time{})
		if got := mustClose(t, c, id(big+1)); got.Outcome != outcome.NotFound {
			t.Errorf("close %d = %+v, want not_found", big+1, got)
		}
		if r, _ := b.row(t, big); r.status != "UNPAID" {
			t.Errorf("order %d is %q: a neighbour's close changed it", big, r.status)
		}
		if res, err := closeOne(t, c, "42abc"); !closer.IsPermanent(err) {
			t.Errorf("close 42abc = %+v, %v; want a permanent error", res, err)
		}
		if r, _ := b.row(t, 42); r.status != "UNPAID" {
			t.Errorf("order 42 is %q after closing 42abc", r.status)
		}
		if got := mustClose(t, c, id(big)); got.Outcome != outcome.Closed {
			t.Errorf("close %d = %+v", big, got)
		}
	})
	t.Run("unsigned", func(t *testing.T) {
		t.Parallel()
		b := newBundle(t, sqlcloser.DriverMySQL)
		b.exec(t, `ALTER TABLE `+b.table+` MODIFY id BIGINT UNSIGNED NOT NULL`)
		c := newCloser(t, b.config())
		b.exec(t, `INSERT INTO `+b.table+` (id, status) VALUES (18446744073709551615, 'UNPAID')`)
		if got := mustClose(t, c, "18446744073709551615"); got.Outcome != outcome.Closed {
			t.Errorf("close max uint64 = %+v", got)
		}
		if res, err := closeOne(t, c, "-1"); !closer.IsPermanent(err) {
			t.Errorf("close -1 = %+v, %v; want a permanent error", res, err)
		}
	})
	t.Run("string ids", func(t *testing.T) {
		t.Parallel()
		b := newBundle(t, sqlcloser.DriverMySQL)
		table := b.table + "_s"
		b.exec(t, `CREATE TABLE `+table+` (id VARCHAR(40) PRIMARY KEY, status VARCHAR(16) NOT NULL, closed_at DATETIME(6) NULL)`)
		b.drop(t, table)
		b.exec(t, `INSERT INTO `+table+` (id, status) VALUES ('ord-1', 'UNPAID'), ('1', 'UNPAID')`)
		cfg := b.config()
		cfg.Table = table
		c := newCloser(t, cfg)
		if got := mustClose(t, c, "ord-1"); got.Outcome != outcome.Closed {
			t.Errorf("close ord-1 = %+v", got)
		}
		if got := mustClose(t, c, "1.0"); got.Outcome != outcome.NotFound {
			t.Errorf("close 1.0 = %+v, want not_found", got)
		}
	})
}
