package sqlcloser

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// order is what one close is for: the task id, as given and as bound to
// the statements, and with a deadline column the bound of its guard.
type order struct {
	id  string
	key any // the task id as bound (see keyArg)
	// bound is set with Config.DeadlineColumn: the record's deadline
	// truncated to the millisecond, plus one millisecond, as SQL text
	// in UTC (see timeText). The close applies when the stored deadline
	// is NULL or before it, that is when the stored deadline, to the
	// millisecond, is not after the record's.
	bound string
}

// batchKey is what makes two closes of a batch one: the same task id as
// bound, and the same deadline.
type batchKey struct {
	key   any
	bound string
}

func (o order) batchKey() batchKey { return batchKey{key: o.key, bound: o.bound} }

// checkDeadline checks deadline_column: an identifier, none of the columns
// a close reads or sets, and the built-in statements, which compare it.
func (c Config) checkDeadline(p *closer.Problems) {
	col := c.DeadlineColumn
	if col == "" {
		return
	}
	if !identRE.MatchString(col) {
		p.Add("deadline_column", "%q is not an identifier (letters, digits and _)", col)
	}
	for _, other := range []struct{ key, val string }{
		{"key_column", c.KeyColumn}, {"status_column", c.StatusColumn}, {"closed_at_column", c.ClosedAtColumn},
	} {
		// MySQL column names are not case-sensitive; quoted Postgres
		// ones are.
		if col == other.val || c.Driver == DriverMySQL && strings.EqualFold(col, other.val) {
			p.Add("deadline_column", "%q is also the %s", col, other.key)
		}
	}
	for _, st := range []struct{ key, val string }{
		{"close_statement", c.CloseStatement}, {"status_statement", c.StatusStatement},
	} {
		if st.val != "" {
			p.Add("deadline_column", "not with a %s, which would have to compare the deadline itself", st.key)
		}
	}
}

// recordDeadline is the deadline of the record behind a task: its first
// due time, which a retry carries in hourglass-deadline, else
// hourglass-due. Zero when the task has neither.
func recordDeadline(m tiers.Meta) time.Time {
	if !m.Deadline.IsZero() {
		return m.Deadline
	}
	return m.Due
}

// orderOf is the order of a close of t whose id binds as key; with a
// deadline column, a task without a deadline is a permanent error.
func (c *Closer) orderOf(t closer.Task, key any) (order, error) {
	o := order{id: t.ID, key: key}
	if c.cfg.DeadlineColumn == "" {
		return o, nil
	}
	d := recordDeadline(t.Meta)
	if d.IsZero() {
		return o, fmt.Errorf("the task has no deadline (hourglass-due) to compare with deadline_column %s", c.cfg.DeadlineColumn)
	}
	o.bound = timeText(c.cfg.Driver, d.Truncate(time.Millisecond).Add(time.Millisecond))
	return o, nil
}

// timeText writes t in UTC as SQL text that the driver's CAST reads as
// that instant: with the zone for Postgres (a timestamp without time zone
// ignores it and takes the UTC wall clock), without for MySQL, whose
// session runs in UTC.
func timeText(driver string, t time.Time) string {
	if driver == DriverMySQL {
		return t.UTC().Format("2006-01-02 15:04:05.000000")
	}
	return t.UTC().Format("2006-01-02 15:04:05.000000Z07:00")
}

// movedDetail is the Detail of a moved outcome: the stored deadline, UTC,
// to the millisecond.
func movedDetail(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// mysqlDeadlineType is what MySQL statements cast a bound to.
const mysqlDeadlineType = "DATETIME(6)"

// lookUpDeadlineType looks up the type of the deadline column and returns what
// the statements cast a bound to: the column's own type on Postgres
// (timestamptz or timestamp, so that a timestamp column compares UTC wall
// clocks whatever the session's time zone), DATETIME(6) on MySQL (for a
// DATETIME or TIMESTAMP column). A missing column or another type is an
// error naming deadline_column.
func (c *Closer) lookUpDeadlineType(ctx context.Context) (string, error) {
	col := c.cfg.DeadlineColumn
	var typ string
	var err error
	if c.cfg.Driver == DriverMySQL {
		schema, table := c.mysqlTable()
		err = c.db.QueryRowContext(ctx,
			`SELECT DATA_TYPE FROM information_schema.COLUMNS
			 WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? AND COLUMN_NAME = ?`,
			schema, table, col).Scan(&typ)
	} else {
		err = c.db.QueryRowContext(ctx, `
			SELECT t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
			WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND NOT a.attisdropped`,
			dialectOf(DriverPostgres).ident(c.cfg.Table), col).Scan(&typ)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", fmt.Errorf("deadline_column: %s has no column %s", c.cfg.Table, col)
	case err != nil:
		return "", fmt.Errorf("deadline_column: look up the type of %s.%s: %w", c.cfg.Table, col, err)
	}
	switch typ = strings.ToLower(typ); typ {
	case "timestamptz", "timestamp":
		if c.cfg.Driver == DriverPostgres {
			return "pg_catalog." + typ, nil
		}
		return mysqlDeadlineType, nil
	case "datetime":
		if c.cfg.Driver == DriverMySQL {
			return mysqlDeadlineType, nil
		}
	}
	return "", fmt.Errorf("deadline_column: %s.%s is %s, not a timestamp", c.cfg.Table, col, typ)
}
