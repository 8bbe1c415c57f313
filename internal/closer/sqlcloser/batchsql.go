package sqlcloser

import (
	"fmt"
	"strconv"
)

// The statements of a batch join the table, aliased o, with the batch's
// task ids as a table k(v, n): v the id, n its position from 1, and with a
// deadline column k(v, b, n), b the order's bound as text (see order).
// Results come back by n, so that each order's outcome is its own even
// when the database stores the id in another form than the task's ("042"
// for 42, another letter case under a case-insensitive collation).

// keysTable appends k: on Postgres one text array parameter (two with
// bounds),
//
//	unnest(CAST($1 AS text[])) WITH ORDINALITY AS k(v, n)
//	unnest(CAST($1 AS text[]), CAST($2 AS text[])) WITH ORDINALITY AS k(v, b, n)
//
// on MySQL n placeholders (2n with bounds),
//
//	(SELECT ? AS v, 1 AS n UNION ALL SELECT ?, 2 ...) AS k
//	(SELECT ? AS v, ? AS b, 1 AS n UNION ALL SELECT ?, ?, 2 ...) AS k
func (b *builder) keysTable(n int, bounds bool) *builder {
	if b.d.driver == DriverPostgres {
		b.sql("unnest(CAST(").arg(argRef{kind: argKeys}).sql(" AS text[])")
		if bounds {
			return b.sql(", CAST(").arg(argRef{kind: argBounds}).sql(" AS text[])) WITH ORDINALITY AS k(v, b, n)")
		}
		return b.sql(") WITH ORDINALITY AS k(v, n)")
	}
	for i := range n {
		if i == 0 {
			b.sql("(SELECT ").arg(argRef{kind: argBatchKey}).sql(" AS v")
		} else {
			b.sql(" UNION ALL SELECT ").arg(argRef{kind: argBatchKey, index: i})
		}
		if bounds {
			b.sql(", ").arg(argRef{kind: argBatchBound, index: i})
			if i == 0 {
				b.sql(" AS b")
			}
		}
		b.sql(", ", strconv.Itoa(i+1))
		if i == 0 {
			b.sql(" AS n")
		}
	}
	return b.sql(") AS k")
}

// batchBound appends the bound of a batch's order, k.b.
func batchBound(b *builder) { b.sql("k.b") }

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
// With a deadline column (dlType its type), an order closes when the
// bound of one of its ids is after its stored deadline, or that is NULL,
// and returns the first such n:
//
//	UPDATE "orders" AS o SET ...
//	FROM (SELECT CAST(v AS pg_catalog.int8) AS v, array_agg(n ORDER BY n) AS n,
//	             array_agg(CAST(b AS pg_catalog.timestamptz) ORDER BY n) AS b
//	      FROM unnest(CAST($1 AS text[]), CAST($3 AS text[])) WITH ORDINALITY AS k(v, b, n) GROUP BY 1) AS k
//	WHERE o."id" = k.v AND o."status" IN ($4) AND (o."expires_at" IS NULL OR o."expires_at" < ANY (k.b))
//	RETURNING (SELECT min(u.n) FROM unnest(k.n, k.b) AS u(n, b) WHERE o."expires_at" IS NULL OR o."expires_at" < u.b)
func pgBatchClose(c Config, pgType, dlType string) statement {
	b := &builder{d: dialectOf(DriverPostgres)}
	b.args = []argRef{{kind: argKeys}}
	guard := c.DeadlineColumn != ""
	b.sql("UPDATE ").ident(c.Table).sql(" AS o").setClosed(c).sql(" FROM (SELECT CAST(v AS ", pgType, ") AS v, ")
	if !guard {
		b.sql("min(n) AS n FROM ").keysTable(0, false).sql(" GROUP BY 1) AS k").
			sql(" WHERE o.").ident(c.KeyColumn).sql(" = k.v AND o.").in(c.StatusColumn, c.OpenStatuses).
			sql(" RETURNING k.n")
		return b.statement()
	}
	dl := "o." + b.d.ident(c.DeadlineColumn)
	b.sql("array_agg(n ORDER BY n) AS n, array_agg(CAST(b AS ", dlType, ") ORDER BY n) AS b FROM ").
		keysTable(0, true).sql(" GROUP BY 1) AS k").
		sql(" WHERE o.").ident(c.KeyColumn).sql(" = k.v AND o.").in(c.StatusColumn, c.OpenStatuses).
		sql(" AND (", dl, " IS NULL OR ", dl, " < ANY (k.b))").
		sql(" RETURNING (SELECT min(u.n) FROM unnest(k.n, k.b) AS u(n, b) WHERE ", dl, " IS NULL OR ", dl, " < u.b)")
	return b.statement()
}

// mysqlBatchLock reads and locks the orders of a batch of n by their key,
// and returns n, the key as stored, whether the order is open and whether
// its deadline allows the close (always without a deadline column; see
// builder.due):
//
//	SELECT k.n, o.`id`, o.`status` IN (?), TRUE FROM (SELECT ? AS v, 1 AS n UNION ALL ...) AS k
//	JOIN `orders` AS o ON o.`id` = k.v FOR UPDATE
//
// The status is a result, not a condition: with a condition MySQL may
// lock through the status index before the key, the other order from a
// payment's update, and the two deadlock. So is the deadline.
func mysqlBatchLock(c Config, n int) statement {
	b := &builder{d: dialectOf(DriverMySQL)}
	b.sql("SELECT k.n, o.").ident(c.KeyColumn).sql(", o.").in(c.StatusColumn, c.OpenStatuses).sql(", ")
	if c.DeadlineColumn == "" {
		b.sql("TRUE")
	} else {
		b.due(c, "o.", mysqlDeadlineType, batchBound)
	}
	b.sql(" FROM ").keysTable(n, c.DeadlineColumn != "").
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

// batchStatus reads the status of the orders of a batch of n (on Postgres
// any n: the ids are one array), by n, and with a deadline column (dlType
// its cast) the stored deadline of those it kept open (see builder.moved);
// an n without a row is not found:
//
//	SELECT k.n, o."status", NULL FROM unnest(CAST($1 AS text[])) WITH ORDINALITY AS k(v, n)
//	JOIN "orders" AS o ON o."id" = CAST(k.v AS pg_catalog.int8)
func batchStatus(c Config, pgType, dlType string, n int) statement {
	b := &builder{d: dialectOf(c.Driver)}
	b.sql("SELECT k.n, o.").ident(c.StatusColumn).sql(", ")
	if c.DeadlineColumn == "" {
		b.sql("NULL")
	} else {
		b.moved(c, "o.", dlType, batchBound)
	}
	b.sql(" FROM ").keysTable(n, c.DeadlineColumn != "").
		sql(" JOIN ").ident(c.Table).sql(" AS o ON ").keyMatch(c, pgType)
	return b.statement()
}

// bindBatch returns the arguments of st for the orders os.
func (st statement) bindBatch(os []order) []any {
	args := make([]any, len(st.args))
	for i, a := range st.args {
		switch a.kind {
		case argKeys:
			ids := make([]string, len(os))
			for j, o := range os {
				ids[j] = fmt.Sprint(o.key)
			}
			args[i] = ids
		case argBounds:
			bounds := make([]string, len(os))
			for j, o := range os {
				bounds[j] = o.bound
			}
			args[i] = bounds
		case argBatchKey:
			args[i] = os[a.index].key
		case argBatchBound:
			args[i] = os[a.index].bound
		case argLiteral:
			args[i] = a.value
		}
	}
	return args
}
