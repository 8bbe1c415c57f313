package sqlcloser_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/credential"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	const pgDSN = "postgres://shop:sekret@127.0.0.1:5432/shop"
	const myDSN = "shop:sekret@tcp(127.0.0.1:3306)/shop"
	pg := func() sqlcloser.Config {
		return sqlcloser.Config{Driver: sqlcloser.DriverPostgres, DSN: credential.Secret{Value: pgDSN}}
	}
	my := func() sqlcloser.Config {
		return sqlcloser.Config{Driver: sqlcloser.DriverMySQL, DSN: credential.Secret{Value: myDSN}}
	}
	tests := []struct {
		name string
		cfg  func() sqlcloser.Config
		// want are the starts of the errors, in order; none means valid.
		want []string
	}{
		{name: "postgres defaults", cfg: pg},
		{name: "mysql defaults", cfg: my},
		{
			name: "everything set",
			cfg: func() sqlcloser.Config {
				c := pg()
				c.Table, c.KeyColumn, c.StatusColumn = "shop.orders", "order_id", "state"
				c.OpenStatuses, c.ClosedStatus, c.ClosedAtColumn = []string{"UNPAID", "PENDING"}, "CANCELLED", "-"
				c.CloseStatement = "UPDATE orders SET state = 'X' WHERE order_id = $1 AND state = 'UNPAID'"
				c.StatusStatement = "SELECT state FROM orders WHERE order_id = $1"
				c.ReleaseStatement = "SELECT release_stock($1)"
				c.MaxOpenConns, c.MaxIdleConns = 20, 5
				c.ConnMaxLifetime, c.StatementTimeout = time.Hour, time.Second
				c.Reconcile = sqlcloser.ReconcileConfig{CreatedColumn: "placed_at", Deadline: 30 * time.Minute, PageSize: 100}
				return c
			},
		},
		{
			name: "mysql statements",
			cfg: func() sqlcloser.Config {
				c := my()
				c.CloseStatement = "UPDATE orders SET status = 'CLOSED' WHERE id = ? AND status = 'UNPAID'"
				c.ReleaseStatement = "CALL release_stock(?)"
				return c
			},
		},
		{
			name: "driver missing",
			cfg:  func() sqlcloser.Config { c := pg(); c.Driver = ""; return c },
			want: []string{"driver: required"},
		},
		{
			name: "driver unknown",
			cfg:  func() sqlcloser.Config { c := pg(); c.Driver = "oracle"; return c },
			want: []string{`driver: "oracle" is not one of postgres, mysql`},
		},
		{
			name: "dsn missing",
			cfg:  func() sqlcloser.Config { c := pg(); c.DSN = credential.Secret{}; return c },
			want: []string{"dsn: required"},
		},
		{
			name: "dsn environment variable unset",
			cfg: func() sqlcloser.Config {
				c := pg()
				c.DSN = credential.Secret{Env: "HOURGLASS_SQLCLOSER_TEST_UNSET"}
				return c
			},
			want: []string{"dsn: environment variable HOURGLASS_SQLCLOSER_TEST_UNSET is not set"},
		},
		{
			name: "dsn from two places",
			cfg:  func() sqlcloser.Config { c := pg(); c.DSN.File = "/dev/null"; return c },
			want: []string{"dsn: set one of env, file and value"},
		},
		{
			name: "postgres dsn does not parse",
			cfg: func() sqlcloser.Config {
				c := pg()
				c.DSN.Value = "postgres://shop:sekret@127.0.0.1:notaport/shop"
				return c
			},
			want: []string{"dsn: "},
		},
		{
			name: "mysql dsn does not parse",
			cfg: func() sqlcloser.Config {
				c := my()
				c.DSN.Value = "shop:sekret@tcp(127.0.0.1:3306)"
				return c
			},
			want: []string{"dsn: not a go-sql-driver DSN"},
		},
		{
			name: "mysql interpolation with a safe charset",
			cfg: func() sqlcloser.Config {
				c := my()
				c.DSN.Value = myDSN + "?charset=utf8mb4,utf8&interpolateParams=true&character_set_client='latin1'"
				return c
			},
		},
		{
			name: "mysql unsafe charset without interpolation",
			cfg:  func() sqlcloser.Config { c := my(); c.DSN.Value = myDSN + "?charset=gbk"; return c },
		},
		{
			name: "mysql interpolation with gbk",
			cfg: func() sqlcloser.Config {
				c := my()
				c.DSN.Value = myDSN + "?charset=gbk&interpolateParams=true"
				return c
			},
			want: []string{"dsn: interpolateParams=true with charset=gbk: "},
		},
		{
			name: "mysql interpolation with a big5 session",
			cfg: func() sqlcloser.Config {
				c := my()
				c.DSN.Value = myDSN + "?interpolateParams=true&CHARACTER_SET_CLIENT=big5"
				return c
			},
			want: []string{"dsn: interpolateParams=true with CHARACTER_SET_CLIENT=big5: "},
		},
		{
			name: "tls key without certificate",
			cfg:  func() sqlcloser.Config { c := pg(); c.TLS.KeyFile = "/nonexistent/key.pem"; return c },
			want: []string{"tls.cert_file and tls.key_file go together"},
		},
		{
			name: "tls CA file missing",
			cfg:  func() sqlcloser.Config { c := pg(); c.TLS.CAFile = "/nonexistent/ca.pem"; return c },
			want: []string{"tls.ca_file: "},
		},
		{
			name: "identifiers",
			cfg: func() sqlcloser.Config {
				c := pg()
				c.Table, c.KeyColumn, c.StatusColumn = "or ders", "id;", "1st"
				c.ClosedAtColumn, c.Reconcile.CreatedColumn = "closed-at", "o.created_at"
				return c
			},
			want: []string{
				`table: "or ders" is not an identifier`,
				`key_column: "id;" is not an identifier`,
				`status_column: "1st" is not an identifier`,
				`reconcile.created_column: "o.created_at" is not an identifier`,
				`closed_at_column: "closed-at" is not an identifier`,
			},
		},
		{
			name: "deadline column",
			cfg:  func() sqlcloser.Config { c := my(); c.DeadlineColumn = "expires_at"; return c },
		},
		{
			name: "deadline column not an identifier",
			cfg:  func() sqlcloser.Config { c := pg(); c.DeadlineColumn = "expires at"; return c },
			want: []string{`deadline_column: "expires at" is not an identifier (letters, digits and _)`},
		},
		{
			name: "deadline column is the status column",
			cfg: func() sqlcloser.Config {
				c := my()
				c.DeadlineColumn = "Status"
				return c
			},
			want: []string{`deadline_column: "Status" is also the status_column`},
		},
		{
			name: "postgres deadline column differs from the status column by case",
			cfg:  func() sqlcloser.Config { c := pg(); c.DeadlineColumn = "Status"; return c },
		},
		{
			name: "deadline column is the closed_at column",
			cfg:  func() sqlcloser.Config { c := pg(); c.DeadlineColumn = "closed_at"; return c },
			want: []string{`deadline_column: "closed_at" is also the closed_at_column`},
		},
		{
			name: "deadline column with custom statements",
			cfg: func() sqlcloser.Config {
				c := pg()
				c.DeadlineColumn = "expires_at"
				c.CloseStatement = "UPDATE orders SET status = 'CLOSED' WHERE id = $1 AND status = 'UNPAID'"
				c.StatusStatement = "SELECT status FROM orders WHERE id = $1"
				return c
			},
			want: []string{
				"deadline_column: not with a close_statement, which would have to compare the deadline itself",
				"deadline_column: not with a status_statement",
			},
		},
		{
			name: "table with two dots",
			cfg:  func() sqlcloser.Config { c := pg(); c.Table = "db.shop.orders"; return c },
			want: []string{`table: "db.shop.orders" is not an identifier`},
		},
		{
			name: "statuses",
			cfg: func() sqlcloser.Config {
				c := pg()
				c.OpenStatuses = []string{"UNPAID", "", "CLOSED"}
				return c
			},
			want: []string{"open_statuses[1]: empty", `open_statuses[2]: "CLOSED" is the closed_status`},
		},
		{
			name: "postgres statements",
			cfg: func() sqlcloser.Config {
				c := pg()
				c.CloseStatement = "UPDATE orders SET status = $2 WHERE id = $1"
				c.StatusStatement = "SELECT status FROM orders WHERE id = ?"
				c.ReleaseStatement = "SELECT 1"
				return c
			},
			want: []string{
				"close_statement: uses $2; the only parameter is the task id, $1",
				"status_statement: does not use $1",
				"release_statement: does not use $1",
			},
		},
		{
			name: "mysql statements wrong",
			cfg: func() sqlcloser.Config {
				c := my()
				c.CloseStatement = "UPDATE orders SET status = 'CLOSED' WHERE id = $1"
				c.ReleaseStatement = "UPDATE stock SET qty = qty + ? WHERE order_id = ?"
				return c
			},
			want: []string{
				"close_statement: has 0 ? placeholders; it takes one",
				"release_statement: has 2 ? placeholders; it takes one",
			},
		},
		{
			name: "negative numbers",
			cfg: func() sqlcloser.Config {
				c := pg()
				c.MaxOpenConns, c.MaxIdleConns = -1, -2
				c.ConnMaxLifetime, c.StatementTimeout = -time.Second, -time.Second
				c.Reconcile.Deadline, c.Reconcile.PageSize = -time.Minute, -1
				c.MaxBatch = -1
				return c
			},
			want: []string{
				"max_open_conns: -1 is negative",
				"max_idle_conns: -2 is negative",
				"conn_max_lifetime: -1s is negative",
				"statement_timeout: -1s is negative",
				"max_batch: -1 is not between 1 and 10000",
				"reconcile.deadline: -1m0s is negative",
				"reconcile.page_size: -1 is negative",
			},
		},
		{
			name: "more idle than open",
			cfg:  func() sqlcloser.Config { c := pg(); c.MaxOpenConns, c.MaxIdleConns = 5, 6; return c },
			want: []string{"max_idle_conns: 6 is more than max_open_conns 5"},
		},
		{
			name: "batch too large",
			cfg:  func() sqlcloser.Config { c := pg(); c.MaxBatch = 10001; return c },
			want: []string{"max_batch: 10001 is not between 1 and 10000"},
		},
		{
			name: "zero config",
			cfg:  func() sqlcloser.Config { return sqlcloser.Config{} },
			want: []string{"driver: required", "dsn: required"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var errs closer.Problems
			errors.As(tt.cfg().Validate(), &errs)
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
				if strings.Contains(err.Error(), "sekret") {
					t.Errorf("error %q shows the password", err)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Validate() = %q, want %d errors starting %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %d = %q, want it to start with %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  sqlcloser.Config
		want sqlcloser.Config
	}{
		{
			name: "zero",
			want: sqlcloser.Config{
				Table: "orders", KeyColumn: "id", StatusColumn: "status",
				OpenStatuses: []string{"UNPAID"}, ClosedStatus: "CLOSED", ClosedAtColumn: "closed_at",
				MaxOpenConns: 10, MaxIdleConns: 10, ConnMaxLifetime: 30 * time.Minute, StatementTimeout: 5 * time.Second,
				MaxBatch:  500,
				Reconcile: sqlcloser.ReconcileConfig{CreatedColumn: "created_at", PageSize: 500},
			},
		},
		{
			name: "set fields stay; idle follows open",
			cfg: sqlcloser.Config{
				Table: "t", KeyColumn: "k", StatusColumn: "s", OpenStatuses: []string{"A", "B"}, ClosedStatus: "C",
				ClosedAtColumn: "-", MaxOpenConns: 3, ConnMaxLifetime: time.Minute, StatementTimeout: time.Second, MaxBatch: 1,
				Reconcile: sqlcloser.ReconcileConfig{CreatedColumn: "c", Deadline: time.Hour, PageSize: 7},
			},
			want: sqlcloser.Config{
				Table: "t", KeyColumn: "k", StatusColumn: "s", OpenStatuses: []string{"A", "B"}, ClosedStatus: "C",
				ClosedAtColumn: "-", MaxOpenConns: 3, MaxIdleConns: 3, ConnMaxLifetime: time.Minute, StatementTimeout: time.Second, MaxBatch: 1,
				Reconcile: sqlcloser.ReconcileConfig{CreatedColumn: "c", Deadline: time.Hour, PageSize: 7},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.cfg.WithDefaults(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("WithDefaults() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestConfigYAML decodes every key the way the closers file loader does.
func TestConfigYAML(t *testing.T) {
	t.Parallel()
	const doc = `
driver: postgres
dsn: {env: ORDERS_DSN}
tls:
  ca_file: /etc/hourglass/ca.pem
  server_name: db.internal
table: shop.orders
key_column: id
status_column: status
open_statuses: [UNPAID, PENDING]
closed_status: CLOSED
closed_at_column: closed_at
deadline_column: expires_at
close_statement: ""
status_statement: ""
release_statement: UPDATE stock SET qty = qty + 1 WHERE order_id = $1
max_open_conns: 20
max_idle_conns: 5
conn_max_lifetime: 30m
statement_timeout: 2s
max_batch: 100
reconcile:
  created_column: created_at
  deadline: 30m
  page_size: 1000
`
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	var got sqlcloser.Config
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := sqlcloser.Config{
		Driver:           "postgres",
		DSN:              credential.Secret{Env: "ORDERS_DSN"},
		TLS:              credential.TLS{CAFile: "/etc/hourglass/ca.pem", ServerName: "db.internal"},
		Table:            "shop.orders",
		KeyColumn:        "id",
		StatusColumn:     "status",
		OpenStatuses:     []string{"UNPAID", "PENDING"},
		ClosedStatus:     "CLOSED",
		ClosedAtColumn:   "closed_at",
		DeadlineColumn:   "expires_at",
		ReleaseStatement: "UPDATE stock SET qty = qty + 1 WHERE order_id = $1",
		MaxOpenConns:     20,
		MaxIdleConns:     5,
		ConnMaxLifetime:  30 * time.Minute,
		StatementTimeout: 2 * time.Second,
		MaxBatch:         100,
		Reconcile:        sqlcloser.ReconcileConfig{CreatedColumn: "created_at", Deadline: 30 * time.Minute, PageSize: 1000},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, want)
	}
}
