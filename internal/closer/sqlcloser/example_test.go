package sqlcloser_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/testutil/dbtest"
)

// A close of an unpaid order, its duplicate, a paid order and an unknown
// one, against the Postgres of scripts/deps.sh.
func ExampleCloser_Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := os.Getenv(dbtest.PostgresEnv)
	if dsn == "" {
		dsn = dbtest.DefaultPostgresDSN
	}
	table := "orders_example_" + rand.Text()[:8]

	c, err := sqlcloser.New(ctx, sqlcloser.Config{
		Driver: sqlcloser.DriverPostgres,
		DSN:    credential.Secret{Value: dsn}, // in a closers file: dsn: {env: ORDERS_DSN}
		Table:  table,
	})
	if err != nil {
		fmt.Println(err, "(run scripts/deps.sh)")
		return
	}
	defer func() { _ = c.Stop() }()
	db := c.DB()
	for _, stmt := range []string{
		`CREATE TABLE "` + table + `" (id bigint PRIMARY KEY, status text NOT NULL, closed_at timestamptz)`,
		`INSERT INTO "` + table + `" (id, status) VALUES (1, 'UNPAID'), (2, 'PAID')`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			fmt.Println(err)
			return
		}
	}
	defer func() { _, _ = db.ExecContext(ctx, `DROP TABLE "`+table+`"`) }()

	for _, id := range []string{"1", "1", "2", "3"} {
		res, err := c.Close(ctx, closer.Task{ID: id, Kind: "order-timeout"})
		if err != nil {
			fmt.Println(err)
			return
		}
		if res.Detail != "" {
			fmt.Println(id, res.Outcome, res.Detail)
		} else {
			fmt.Println(id, res.Outcome)
		}
	}
	// Output:
	// 1 closed
	// 1 already_closed
	// 2 skipped PAID
	// 3 not_found
}

func ExampleConfig_Validate() {
	cfg := sqlcloser.Config{
		Driver:       sqlcloser.DriverPostgres,
		DSN:          credential.Secret{Value: "postgres://127.0.0.1:5432/shop"},
		Table:        "or ders",
		OpenStatuses: []string{"UNPAID", "CLOSED"},
		MaxOpenConns: 5,
		MaxIdleConns: 10,
	}
	fmt.Println(cfg.Validate())
	// Output:
	// table: "or ders" is not an identifier (letters, digits and _, optionally schema.table)
	// open_statuses[1]: "CLOSED" is the closed_status
	// max_idle_conns: 10 is more than max_open_conns 5
}
