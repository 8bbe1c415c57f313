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
			got:  closeStatement(pg, ""),
			want: statement{
				sql:  `UPDATE "orders" SET "status" = $2, "closed_at" = now() WHERE "id" = $1 AND "status" IN ($3)`,
				args: []argRef{key, lit("CLOSED"), lit("UNPAID")},
			},
		},
		{
			name: "mysql close",
			got:  closeStatement(my, ""),
			want: statement{
				sql:  "UPDATE `orders` SET `status` = ?, `closed_at` = CURRENT_TIMESTAMP(6) WHERE `id` = ? AND `status` IN (?)",
				args: []argRef{lit("CLOSED"), key, lit("UNPAID")},
			},
		},
		{
			name: "postgres close, schema, two open statuses, no closed_at",
			got:  closeStatement(custom(pg), ""),
			want: statement{
				sql:  `UPDATE "shop"."orders" SET "state" = $2 WHERE "order_id" = $1 AND "state" IN ($3, $4)`,
				args: []argRef{key, lit("CANCELLED"), lit("UNPAID"), lit("PENDING")},
			},
		},
		{
			name: "mysql close, schema, two open statuses, no closed_at",
			got:  closeStatement(custom(my), ""),
			want: statement{
				sql:  "UPDATE `shop`.`orders` SET `state` = ? WHERE `order_id` = ? AND `state` IN (?, ?)",
				args: []argRef{lit("CANCELLED"), key, lit("UNPAID"), lit("PENDING")},
			},
		},
		{
			name: "custom close",
			got:  closeStatement(Config{Driver: DriverPostgres, CloseStatement: "UPDATE x SET y = 1 WHERE id = $1"}, ""),
			want: statement{sql: "UPDATE x SET y = 1 WHERE id = $1", args: []argRef{key}},
		},
		{
			name: "postgres status",
			got:  statusStatement(pg, ""),
			want: statement{sql: `SELECT "status" FROM "orders" WHERE "id" = $1`, args: []argRef{key}},
		},
		{
			name: "mysql status",
			got:  statusStatement(custom(my), ""),
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

// TestDeadlineStatements: with a deadline column, the close is guarded by
// the stored deadline and the status lookup returns it when it kept an
// open order from closing, one by one and in batches.
func TestDeadlineStatements(t *testing.T) {
	t.Parallel()
	key, bound := argRef{kind: argKey}, argRef{kind: argBound}
	keys, bounds := argRef{kind: argKeys}, argRef{kind: argBounds}
	lit := func(v string) argRef { return argRef{kind: argLiteral, value: v} }
	batchKey := func(i int) argRef { return argRef{kind: argBatchKey, index: i} }
	batchBound := func(i int) argRef { return argRef{kind: argBatchBound, index: i} }
	pg := Config{Driver: DriverPostgres, DeadlineColumn: "expires_at"}.WithDefaults()
	my := Config{Driver: DriverMySQL, DeadlineColumn: "expires_at"}.WithDefaults()
	const tstz = "pg_catalog.timestamptz"
	tests := []struct {
		name string
		got  statement
		want statement
	}{
		{
			name: "postgres close",
			got:  closeStatement(pg, tstz),
			want: statement{
				sql: `UPDATE "orders" SET "status" = $2, "closed_at" = now() WHERE "id" = $1 AND "status" IN ($3)` +
					` AND ("expires_at" IS NULL OR "expires_at" < CAST($4 AS pg_catalog.timestamptz))`,
				args: []argRef{key, lit("CLOSED"), lit("UNPAID"), bound},
			},
		},
		{
			name: "mysql close",
			got:  closeStatement(my, mysqlDeadlineType),
			want: statement{
				sql: "UPDATE `orders` SET `status` = ?, `closed_at` = CURRENT_TIMESTAMP(6) WHERE `id` = ? AND `status` IN (?)" +
					" AND (`expires_at` IS NULL OR `expires_at` < CAST(? AS DATETIME(6)))",
				args: []argRef{lit("CLOSED"), key, lit("UNPAID"), bound},
			},
		},
		{
			name: "postgres status",
			got:  statusStatement(pg, tstz),
			want: statement{
				sql: `SELECT "status", CASE WHEN "status" IN ($2) AND "expires_at" >= CAST($3 AS pg_catalog.timestamptz)` +
					` THEN "expires_at" END FROM "orders" WHERE "id" = $1`,
				args: []argRef{key, lit("UNPAID"), bound},
			},
		},
		{
			name: "mysql status",
			got:  statusStatement(my, mysqlDeadlineType),
			want: statement{
				sql: "SELECT `status`, CASE WHEN `status` IN (?) AND `expires_at` >= CAST(? AS DATETIME(6))" +
					" THEN `expires_at` END FROM `orders` WHERE `id` = ?",
				args: []argRef{lit("UNPAID"), bound, key},
			},
		},
		{
			name: "postgres batch close",
			got:  pgBatchClose(pg, "pg_catalog.int8", tstz),
			want: statement{
				sql: `UPDATE "orders" AS o SET "status" = $2, "closed_at" = now()` +
					` FROM (SELECT CAST(v AS pg_catalog.int8) AS v, array_agg(n ORDER BY n) AS n,` +
					` array_agg(CAST(b AS pg_catalog.timestamptz) ORDER BY n) AS b` +
					` FROM unnest(CAST($1 AS text[]), CAST($3 AS text[])) WITH ORDINALITY AS k(v, b, n) GROUP BY 1) AS k` +
					` WHERE o."id" = k.v AND o."status" IN ($4) AND (o."expires_at" IS NULL OR o."expires_at" < ANY (k.b))` +
					` RETURNING (SELECT min(u.n) FROM unnest(k.n, k.b) AS u(n, b) WHERE o."expires_at" IS NULL OR o."expires_at" < u.b)`,
				args: []argRef{keys, lit("CLOSED"), bounds, lit("UNPAID")},
			},
		},
		{
			name: "mysql batch lock",
			got:  mysqlBatchLock(my, 2),
			want: statement{
				sql: "SELECT k.n, o.`id`, o.`status` IN (?), (o.`expires_at` IS NULL OR o.`expires_at` < CAST(k.b AS DATETIME(6)))" +
					" FROM (SELECT ? AS v, ? AS b, 1 AS n UNION ALL SELECT ?, ?, 2) AS k JOIN `orders` AS o ON o.`id` = k.v FOR UPDATE",
				args: []argRef{lit("UNPAID"), batchKey(0), batchBound(0), batchKey(1), batchBound(1)},
			},
		},
		{
			name: "postgres batch status",
			got:  batchStatus(pg, "pg_catalog.int8", tstz, 2),
			want: statement{
				sql: `SELECT k.n, o."status", CASE WHEN o."status" IN ($1) AND o."expires_at" >= CAST(k.b AS pg_catalog.timestamptz)` +
					` THEN o."expires_at" END FROM unnest(CAST($2 AS text[]), CAST($3 AS text[])) WITH ORDINALITY AS k(v, b, n)` +
					` JOIN "orders" AS o ON o."id" = CAST(k.v AS pg_catalog.int8)`,
				args: []argRef{lit("UNPAID"), keys, bounds},
			},
		},
		{
			name: "mysql batch status",
			got:  batchStatus(my, "", mysqlDeadlineType, 1),
			want: statement{
				sql: "SELECT k.n, o.`status`, CASE WHEN o.`status` IN (?) AND o.`expires_at` >= CAST(k.b AS DATETIME(6))" +
					" THEN o.`expires_at` END FROM (SELECT ? AS v, ? AS b, 1 AS n) AS k JOIN `orders` AS o ON o.`id` = k.v",
				args: []argRef{lit("UNPAID"), batchKey(0), batchBound(0)},
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
