package sqlcloser

import (
	"context"
	"database/sql"
	"errors"
)

// keyIsUnique reports whether the database guarantees that no two rows of
// the table have the same key: the key column is the primary key or has a
// unique index on exactly that column, which is valid, not partial and not
// on an expression. Only then does the default close run on its own, in
// autocommit; otherwise a close that matches several rows would change
// them all before its row count could be checked, so it runs in a
// transaction instead (see update). A table that is not found, a view, and
// a Postgres table with inheritance children (an UPDATE of the parent
// changes their rows too, which its indexes do not cover) are not proven
// unique, nor is a MySQL MERGE table (its indexes do not span the tables
// it merges).
func (c *Closer) keyIsUnique(ctx context.Context) (bool, error) {
	var unique bool
	var err error
	switch c.cfg.Driver {
	case DriverPostgres:
		// indkey[0] is the first column of the index, indnkeyatts counts
		// its key columns (INCLUDE columns are not part of the unique
		// key). The partitions of a partitioned table are its children
		// too; a unique index of a partitioned table spans them.
		err = c.db.QueryRowContext(ctx, `
			SELECT EXISTS (
				SELECT FROM pg_index i
				JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
				WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indisvalid
				  AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL
				  AND a.attname = $2 AND NOT a.attisdropped
			) AND NOT EXISTS (
				SELECT FROM pg_inherits h JOIN pg_class p ON p.oid = h.inhparent
				WHERE h.inhparent = to_regclass($1) AND p.relkind <> 'p'
			)`, dialectOf(DriverPostgres).ident(c.cfg.Table), c.cfg.KeyColumn).Scan(&unique)
	case DriverMySQL:
		// An index whose first column is the key column and that has no
		// second one. A unique prefix index (the first n characters) is
		// stricter than the column's uniqueness.
		schema, table := c.mysqlTable()
		err = c.db.QueryRowContext(ctx, `
			SELECT COUNT(*) > 0 FROM information_schema.STATISTICS s
			JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = s.TABLE_SCHEMA AND t.TABLE_NAME = s.TABLE_NAME
			WHERE s.TABLE_SCHEMA = COALESCE(?, DATABASE()) AND s.TABLE_NAME = ?
			  AND s.NON_UNIQUE = 0 AND s.SEQ_IN_INDEX = 1 AND s.COLUMN_NAME = ?
			  AND t.TABLE_TYPE = 'BASE TABLE' AND UPPER(t.ENGINE) <> 'MRG_MYISAM'
			  AND NOT EXISTS (
				SELECT 1 FROM information_schema.STATISTICS o
				WHERE o.TABLE_SCHEMA = s.TABLE_SCHEMA AND o.TABLE_NAME = s.TABLE_NAME
				  AND o.INDEX_NAME = s.INDEX_NAME AND o.SEQ_IN_INDEX > 1
			  )`, schema, table, c.cfg.KeyColumn).Scan(&unique)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return unique, err
}
