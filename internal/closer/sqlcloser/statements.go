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
	argKey      argKind = iota // the task id
	argLiteral                 // a configured value (a status)
	argCutoff                  // reconcile: orders created before this are due
	argAfterAt                 // reconcile: created_at of the last row of the previous page
	argAfterKey                // reconcile: key of the last row of the previous page
	argKeys                    // batch, postgres: the task ids as a text array
	argBatchKey                // batch, mysql: the task id at index
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

// closeStatement is the conditional update:
//
//	UPDATE "orders" SET "status" = $2, "closed_at" = now() WHERE "id" = $1 AND "status" IN ($3)
func closeStatement(c Config) statement {
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
	return b.statement()
}

// statusStatement looks up the current state of one order.
func statusStatement(c Config) statement {
	if c.StatusStatement != "" {
		return statement{sql: c.StatusStatement, args: []argRef{{kind: argKey}}}
	}
	b := &builder{d: dialectOf(c.Driver)}
	b.sql("SELECT ").ident(c.StatusColumn).sql(" FROM ").ident(c.Table).sql(" WHERE ").
		ident(c.KeyColumn).sql(" = ").arg(argRef{kind: argKey})
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
