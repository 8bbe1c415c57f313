package sqlcloser

import (
	"reflect"
	"testing"
)

func TestStatements(t *testing.T) {
	t.Parallel()
	key := argRef{kind: argKey}
	lit := func(v string) argRef { return argRef{kind: argLiteral, value: v} }
	cutoff, afterAt, afterKey := argRef{kind: argCutoff}, argRef{kind: argAfterAt}, argRef{kind: argAfterKey}
	pg := Config{Driver: DriverPostgres}.WithDefaults()
	my := Config{Driver: DriverMySQL}.WithDefaults()
	custom := func(c Config) Config {
		c.Table, c.KeyColumn, c.StatusColumn = "shop.orders", "order_id", "state"
		c.OpenStatuses, c.ClosedStatus, c.ClosedAtColumn = []string{"UNPAID", "PENDING"}, "CANCELLED", "-"
		c.Reconcile.CreatedColumn = "placed_at"
		return c
	}
	tests := []struct {
		name string
		got  statement
		want statement
	}{
		{
			name: "postgres close",
			got:  closeStatement(pg),
			want: statement{
				sql:  `UPDATE "orders" SET "status" = $2, "closed_at" = now() WHERE "id" = $1 AND "status" IN ($3)`,
				args: []argRef{key, lit("CLOSED"), lit("UNPAID")},
			},
		},
		{
			name: "mysql close",
			got:  closeStatement(my),
			want: statement{
				sql:  "UPDATE `orders` SET `status` = ?, `closed_at` = CURRENT_TIMESTAMP(6) WHERE `id` = ? AND `status` IN (?)",
				args: []argRef{lit("CLOSED"), key, lit("UNPAID")},
			},
		},
		{
			name: "postgres close, schema, two open statuses, no closed_at",
			got:  closeStatement(custom(pg)),
			want: statement{
				sql:  `UPDATE "shop"."orders" SET "state" = $2 WHERE "order_id" = $1 AND "state" IN ($3, $4)`,
				args: []argRef{key, lit("CANCELLED"), lit("UNPAID"), lit("PENDING")},
			},
		},
		{
			name: "mysql close, schema, two open statuses, no closed_at",
			got:  closeStatement(custom(my)),
			want: statement{
				sql:  "UPDATE `shop`.`orders` SET `state` = ? WHERE `order_id` = ? AND `state` IN (?, ?)",
				args: []argRef{lit("CANCELLED"), key, lit("UNPAID"), lit("PENDING")},
			},
		},
		{
			name: "custom close",
			got:  closeStatement(Config{Driver: DriverPostgres, CloseStatement: "UPDATE x SET y = 1 WHERE id = $1"}),
			want: statement{sql: "UPDATE x SET y = 1 WHERE id = $1", args: []argRef{key}},
		},
		{
			name: "postgres status",
			got:  statusStatement(pg),
			want: statement{sql: `SELECT "status" FROM "orders" WHERE "id" = $1`, args: []argRef{key}},
		},
		{
			name: "mysql status",
			got:  statusStatement(custom(my)),
			want: statement{sql: "SELECT `state` FROM `shop`.`orders` WHERE `order_id` = ?", args: []argRef{key}},
		},
		{
			name: "no release",
			got:  releaseStatement(pg),
			want: statement{},
		},
		{
			name: "postgres first page",
			got:  scanStatement(pg, false, 500),
			want: statement{
				sql:  `SELECT "id", "created_at" FROM "orders" WHERE "status" IN ($1) AND "created_at" < $2 ORDER BY "created_at", "id" LIMIT 500`,
				args: []argRef{lit("UNPAID"), cutoff},
			},
		},
		{
			name: "postgres next page",
			got:  scanStatement(custom(pg), true, 3),
			want: statement{
				sql: `SELECT "order_id", "placed_at" FROM "shop"."orders" WHERE "state" IN ($1, $2) AND "placed_at" < $3` +
					` AND ("placed_at" > $4 OR ("placed_at" = $4 AND "order_id" > $5)) ORDER BY "placed_at", "order_id" LIMIT 3`,
				args: []argRef{lit("UNPAID"), lit("PENDING"), cutoff, afterAt, afterKey},
			},
		},
		{
			name: "mysql next page",
			got:  scanStatement(my, true, 10),
			want: statement{
				sql: "SELECT `id`, `created_at` FROM `orders` WHERE `status` IN (?) AND `created_at` < ?" +
					" AND (`created_at` > ? OR (`created_at` = ? AND `id` > ?)) ORDER BY `created_at`, `id` LIMIT 10",
				args: []argRef{lit("UNPAID"), cutoff, afterAt, afterAt, afterKey},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.got.sql != tt.want.sql {
				t.Errorf("sql\n got %s\nwant %s", tt.got.sql, tt.want.sql)
			}
			if !reflect.DeepEqual(tt.got.args, tt.want.args) {
				t.Errorf("args = %v, want %v", tt.got.args, tt.want.args)
			}
		})
	}
}
