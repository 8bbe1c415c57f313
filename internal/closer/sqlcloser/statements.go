package sqlcloser

import (
	"strconv"
	"strings"
)

// dialect writes the statements of one driver.
type dialect struct {
	driver string
	quote  byte // identifier quote: " or `
	now    string
}

func dialectOf(driver string) dialect {
	if driver == DriverMySQL {
		return dialect{driver: driver, quote: '`', now: "CURRENT_TIMESTAMP(6)"}
	}
	return dialect{driver: driver, quote: '"', now: "now()"}
}

// ident quotes a validated identifier, schema.table included.
func (d dialect) ident(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = string(d.quote) + p + string(d.quote)
	}
	return strings.Join(parts, ".")
}

// statement is SQL with the order of its arguments: each element names what
// goes into that placeholder.
type statement struct {
	sql  string
	args []argRef
}

// argRef names an argument of a statement.
type argRef struct {
	kind  argKind
	value string // for argLiteral
	index int    // for argBatchKey
}

type argKind int

const (
	argKey        argKind = iota // the task id
	argLiteral                   // a configured value (a status)
	argCutoff                    // reconcile: orders created before this are due
	argAfterAt                   // reconcile: created_at of the last row of the previous page
	argAfterKey                  // reconcile: key of the last row of the previous page
	argKeys                      // batch, postgres: the task ids as a text array
	argBatchKey                  // batch, mysql: the task id at index
	argBound                     // deadline guard: the order's bound (see order)
	argBounds                    // batch, postgres: the bounds as a text array
	argBatchBound                // batch, mysql: the bound at index
)

// builder appends SQL and placeholders in the dialect's style.
type builder struct {
	d    dialect
	sb   strings.Builder
	args []argRef
}

func (b *builder) sql(s ...string) *builder {
	for _, x := range s {
		b.sb.WriteString(x)
	}
	return b
}

func (b *builder) ident(name string) *builder { return b.sql(b.d.ident(name)) }

// arg appends a placeholder for a. Postgres reuses the number of an
// argument already bound; MySQL repeats it.
func (b *builder) arg(a argRef) *builder {
	if b.d.driver == DriverMySQL {
		b.args = append(b.args, a)
		return b.sql("?")
	}
	for i, x := range b.args {
		if x == a {
			return b.sql("$", strconv.Itoa(i+1))
		}
	}
	b.args = append(b.args, a)
	return b.sql("$", strconv.Itoa(len(b.args)))
}

// in appends "col IN (...)" over the configured values.
func (b *builder) in(col string, values []string) *builder {
	b.ident(col).sql(" IN (")
	for i, v := range values {
		if i > 0 {
			b.sql(", ")
		}
		b.arg(argRef{kind: argLiteral, value: v})
	}
	return b.sql(")")
}

func (b *builder) statement() statement { return statement{sql: b.sb.String(), args: b.args} }

// due appends the deadline guard of a close: the deadline column of the
// row alias ("" or "o.") is NULL or before the bound that bound appends,
// cast to dlType:
//
//	("expires_at" IS NULL OR "expires_at" < CAST($4 AS pg_catalog.timestamptz))
func (b *builder) due(c Config, alias, dlType string, bound func(*builder)) *builder {
	dl := alias + b.d.ident(c.DeadlineColumn)
	b.sql("(", dl, " IS NULL OR ", dl, " < CAST(")
	bound(b)
	return b.sql(" AS ", dlType, "))")
}

// moved appends the stored deadline of an order that the guard (see due)
// left open, NULL for any other order:
//
//	CASE WHEN "status" IN ($2) AND "expires_at" >= CAST($3 AS pg_catalog.timestamptz) THEN "expires_at" END
func (b *builder) moved(c Config, alias, dlType string, bound func(*builder)) *builder {
	dl := alias + b.d.ident(c.DeadlineColumn)
	b.sql("CASE WHEN ", alias).in(c.StatusColumn, c.OpenStatuses).sql(" AND ", dl, " >= CAST(")
	bound(b)
	return b.sql(" AS ", dlType, ") THEN ", dl, " END")
}

// boundArg appends the bound of a single close as a parameter.
func boundArg(b *builder) { b.arg(argRef{kind: argBound}) }

// closeStatement is the conditional update, with a deadline column
// guarded (dlType is what the bound is cast to; see Closer.lookUpDeadlineType):
//
//	UPDATE "orders" SET "status" = $2, "closed_at" = now() WHERE "id" = $1 AND "status" IN ($3)
//	  AND ("expires_at" IS NULL OR "expires_at" < CAST($4 AS pg_catalog.timestamptz))
func closeStatement(c Config, dlType string) statement {
	if c.CloseStatement != "" {
		return statement{sql: c.CloseStatement, args: []argRef{{kind: argKey}}}
	}
	b := &builder{d: dialectOf(c.Driver)}
	if b.d.driver == DriverPostgres {
		b.args = []argRef{{kind: argKey}} // $1 is the task id, as in custom statements
	}
	b.sql("UPDATE ").ident(c.Table).sql(" SET ").ident(c.StatusColumn).sql(" = ").
		arg(argRef{kind: argLiteral, value: c.ClosedStatus})
	if c.ClosedAtColumn != NoColumn {
		b.sql(", ").ident(c.ClosedAtColumn).sql(" = ", b.d.now)
	}
	b.sql(" WHERE ").ident(c.KeyColumn).sql(" = ").arg(argRef{kind: argKey}).sql(" AND ").
		in(c.StatusColumn, c.OpenStatuses)
	if c.DeadlineColumn != "" {
		b.sql(" AND ").due(c, "", dlType, boundArg)
	}
	return b.statement()
}

// statusStatement looks up the current state of one order, and with a
// deadline column the stored deadline when that is what left it open
// (see builder.moved):
//
//	SELECT "status", CASE WHEN ... END FROM "orders" WHERE "id" = $1
func statusStatement(c Config, dlType string) statement {
	if c.StatusStatement != "" {
		return statement{sql: c.StatusStatement, args: []argRef{{kind: argKey}}}
	}
	b := &builder{d: dialectOf(c.Driver)}
	if b.d.driver == DriverPostgres {
		b.args = []argRef{{kind: argKey}}
	}
	b.sql("SELECT ").ident(c.StatusColumn)
	if c.DeadlineColumn != "" {
		b.sql(", ").moved(c, "", dlType, boundArg)
	}
	b.sql(" FROM ").ident(c.Table).sql(" WHERE ").ident(c.KeyColumn).sql(" = ").arg(argRef{kind: argKey})
	return b.statement()
}

// releaseStatement is the configured release statement, if any.
func releaseStatement(c Config) statement {
	if c.ReleaseStatement == "" {
		return statement{}
	}
	return statement{sql: c.ReleaseStatement, args: []argRef{{kind: argKey}}}
}

// scanStatement reads one page of due orders in (created_at, key) order,
// after the last row of the previous page when after is set:
//
//	SELECT "id", "created_at" FROM "orders"
//	WHERE "status" IN ($1) AND "created_at" < $2
//	  AND ("created_at" > $3 OR ("created_at" = $3 AND "id" > $4))
//	ORDER BY "created_at", "id" LIMIT 500
func scanStatement(c Config, after bool, limit int) statement {
	key, created := c.KeyColumn, c.Reconcile.CreatedColumn
	b := &builder{d: dialectOf(c.Driver)}
	b.sql("SELECT ").ident(key).sql(", ").ident(created).sql(" FROM ").ident(c.Table).
		sql(" WHERE ").in(c.StatusColumn, c.OpenStatuses).
		sql(" AND ").ident(created).sql(" < ").arg(argRef{kind: argCutoff})
	if after {
		b.sql(" AND (").ident(created).sql(" > ").arg(argRef{kind: argAfterAt}).
			sql(" OR (").ident(created).sql(" = ").arg(argRef{kind: argAfterAt}).
			sql(" AND ").ident(key).sql(" > ").arg(argRef{kind: argAfterKey}).sql("))")
	}
	b.sql(" ORDER BY ").ident(created).sql(", ").ident(key).sql(" LIMIT ", strconv.Itoa(limit))
	return b.statement()
}
