package sqlcloser

import (
	"fmt"
	"strconv"
)

// The statements of a batch join the table, aliased o, with the batch's
// task ids as a table k(v, n): v the id, n its position from 1. Results
// come back by n, so that each order's outcome is its own even when the
// database stores the id in another form than the task's ("042" for 42,
// another letter case under a case-insensitive collation).

// keysTable appends k: on Postgres one text array parameter,
//
//	unnest(CAST($1 AS text[])) WITH ORDINALITY AS k(v, n)
//
// on MySQL n placeholders,
//
//	(SELECT ? AS v, 1 AS n UNION ALL SELECT ?, 2 ...) AS k
func (b *builder) keysTable(n int) *builder {
	if b.d.driver == DriverPostgres {
		return b.sql("unnest(CAST(").arg(argRef{kind: argKeys}).sql(" AS text[])) WITH ORDINALITY AS k(v, n)")
	}
	b.sql("(SELECT ").arg(argRef{kind: argBatchKey}).sql(" AS v, 1 AS n")
	for i := 1; i < n; i++ {
		b.sql(" UNION ALL SELECT ").arg(argRef{kind: argBatchKey, index: i}).sql(", ", strconv.Itoa(i+1))
	}
	return b.sql(") AS k")
}

// keyMatch appends o.key = k.v, on Postgres with v cast to the key
// column's type.
func (b *builder) keyMatch(c Config, pgType string) *builder {
	b.sql("o.").ident(c.KeyColumn).sql(" = ")
	if b.d.driver == DriverPostgres {
		return b.sql("CAST(k.v AS ", pgType, ")")
	}
	return b.sql("k.v")
}

// setClosed appends the SET clause of a close.
func (b *builder) setClosed(c Config) *builder {
	b.sql(" SET ").ident(c.StatusColumn).sql(" = ").arg(argRef{kind: argLiteral, value: c.ClosedStatus})
	if c.ClosedAtColumn != NoColumn {
		b.sql(", ").ident(c.ClosedAtColumn).sql(" = ", b.d.now)
	}
	return b
}

// pgBatchClose closes the open orders of a batch and returns their n:
//
//	UPDATE "orders" AS o SET "status" = $2, "closed_at" = now()
//	FROM (SELECT CAST(v AS pg_catalog.int8) AS v, min(n) AS n
//	      FROM unnest(CAST($1 AS text[])) WITH ORDINALITY AS k(v, n) GROUP BY 1) AS k
//	WHERE o."id" = k.v AND o."status" IN ($3) RETURNING k.n
//
// Two ids of one row (42 and 042) update it once and return the first n.
func pgBatchClose(c Config, pgType string) statement {
	b := &builder{d: dialectOf(DriverPostgres)}
	b.args = []argRef{{kind: argKeys}}
	b.sql("UPDATE ").ident(c.Table).sql(" AS o").setClosed(c).
		sql(" FROM (SELECT CAST(v AS ", pgType, ") AS v, min(n) AS n FROM ").keysTable(0).sql(" GROUP BY 1) AS k").
		sql(" WHERE o.").ident(c.KeyColumn).sql(" = k.v AND o.").in(c.StatusColumn, c.OpenStatuses).
		sql(" RETURNING k.n")
	return b.statement()
}

// mysqlBatchLock reads and locks the orders of a batch of n by their key,
// and returns n, the key as stored and whether the order is open:
//
//	SELECT k.n, o.`id`, o.`status` IN (?) FROM (SELECT ? AS v, 1 AS n UNION ALL ...) AS k
//	JOIN `orders` AS o ON o.`id` = k.v FOR UPDATE
//
// The status is a result, not a condition: with a condition MySQL may
// lock through the status index before the key, the other order from a
// payment's update, and the two deadlock.
func mysqlBatchLock(c Config, n int) statement {
	b := &builder{d: dialectOf(DriverMySQL)}
	b.sql("SELECT k.n, o.").ident(c.KeyColumn).sql(", o.").in(c.StatusColumn, c.OpenStatuses).sql(" FROM ").keysTable(n).
		sql(" JOIN ").ident(c.Table).sql(" AS o ON ").keyMatch(c, "").sql(" FOR UPDATE")
	return b.statement()
}

// mysqlBatchClose closes the n open orders mysqlBatchLock locked, by their
// stored keys, and only by them (no condition on the status, which they
// hold while locked, for the reason above):
//
//	UPDATE `orders` SET `status` = ?, `closed_at` = CURRENT_TIMESTAMP(6) WHERE `id` IN (?, ?)
func mysqlBatchClose(c Config, n int) statement {
	b := &builder{d: dialectOf(DriverMySQL)}
	b.sql("UPDATE ").ident(c.Table).setClosed(c).sql(" WHERE ").ident(c.KeyColumn).sql(" IN (")
	for i := range n {
		if i > 0 {
			b.sql(", ")
		}
		b.arg(argRef{kind: argBatchKey, index: i})
	}
	b.sql(")")
	return b.statement()
}

// batchStatus reads the status of the orders of a batch of n, by n; an n
// without a row is not found:
//
//	SELECT k.n, o."status" FROM unnest(CAST($1 AS text[])) WITH ORDINALITY AS k(v, n)
//	JOIN "orders" AS o ON o."id" = CAST(k.v AS pg_catalog.int8)
func batchStatus(c Config, pgType string, n int) statement {
	b := &builder{d: dialectOf(c.Driver)}
	b.sql("SELECT k.n, o.").ident(c.StatusColumn).sql(" FROM ").keysTable(n).
		sql(" JOIN ").ident(c.Table).sql(" AS o ON ").keyMatch(c, pgType)
	return b.statement()
}

// bindBatch returns the arguments of st for the task ids keys.
func (st statement) bindBatch(keys []any) []any {
	args := make([]any, len(st.args))
	for i, a := range st.args {
		switch a.kind {
		case argKeys:
			ids := make([]string, len(keys))
			for j, k := range keys {
				ids[j] = fmt.Sprint(k)
			}
			args[i] = ids
		case argBatchKey:
			args[i] = keys[a.index]
		case argLiteral:
			args[i] = a.value
		}
	}
	return args
}
