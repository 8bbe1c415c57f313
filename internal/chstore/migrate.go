package chstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Table names in Config.Database.
const (
	// OutcomesTable holds one row per close attempt.
	OutcomesTable = "outcomes"
	// MigrationsTable records the applied schema migrations: version,
	// name and when it was applied.
	MigrationsTable = "hourglass_schema_migrations"
)

// Columns are the columns of OutcomesTable, in table order. The first 18
// are outcome.Event's fields under their JSON names; inserted_ms is when the
// row was inserted, day (derived from closed_ms, UTC) partitions the table,
// and dedup_version makes merges keep the first attempt (see the package
// documentation).
var Columns = []string{
	"task_id", "kind", "outcome", "detail", "error", "attempt", "hops", "path",
	"scheduled_ms", "due_ms", "deadline_ms", "forwarded_ms", "closed_ms", "lateness_ms",
	"instance", "topic", "partition", "offset", "inserted_ms", "day", "dedup_version",
}

// columnList is Columns, quoted and comma-separated, for statements.
var columnList = "`" + strings.Join(Columns, "`, `") + "`"

// A migration is one schema change. Its statements must be idempotent (IF
// NOT EXISTS): two processes may apply it at the same time, and a failure
// between a statement and the record of the version applies it again.
type migration struct {
	version uint32
	name    string
	// stmts are run in order; {db} is replaced by the quoted database.
	stmts []string
}

// migrations are the schema's history. Append only: never edit or reorder
// an applied migration, add a new version instead.
var migrations = []migration{
	{1, "outcomes table", []string{`
CREATE TABLE IF NOT EXISTS {db}.outcomes (
    task_id      String,
    kind         String,
    outcome      String,
    detail       String,
    error        String,
    attempt      Int32,
    hops         Int32,
    path         String,
    scheduled_ms Int64,
    due_ms       Int64,
    deadline_ms  Int64,
    forwarded_ms Int64,
    closed_ms    Int64,
    lateness_ms  Int64,
    instance     String,
    topic        String,
    ` + "`partition`" + `  Int32,
    ` + "`offset`" + `     Int64,
    inserted_ms  Int64,
    day          Date DEFAULT toDate(toDateTime(intDiv(closed_ms, 1000), 'UTC')),
    dedup_version UInt64 DEFAULT toUInt64(9223372036854775807 - closed_ms)
) ENGINE = ReplacingMergeTree(dedup_version)
PARTITION BY toYYYYMM(day)
ORDER BY (topic, ` + "`partition`, `offset`" + `)`}},
	{2, "deadline index", []string{`
CREATE TABLE IF NOT EXISTS {db}.deadlines (
    task_id      String,
    kind         String,
    target       String,
    due_ms       Int64,
    scheduled_ms Int64,
    record_ms    Int64,
    topic        String,
    ` + "`partition`" + `  Int32,
    ` + "`offset`" + `     Int64,
    inserted_ms  Int64,
    day          Date DEFAULT toDate(toDateTime(intDiv(inserted_ms, 1000), 'UTC'))
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (task_id, topic, ` + "`partition`, `offset`" + `)`, `
CREATE TABLE IF NOT EXISTS {db}.cancellations (
    task_id      String,
    at_ms        Int64,
    due_ms       Int64,
    withdrawn    UInt8,
    topic        String,
    ` + "`partition`" + `  Int32,
    ` + "`offset`" + `     Int64,
    inserted_ms  Int64,
    day          Date DEFAULT toDate(toDateTime(intDiv(inserted_ms, 1000), 'UTC'))
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (task_id, topic, ` + "`partition`, `offset`" + `)`, `
CREATE TABLE IF NOT EXISTS {db}.dead_letters (
    task_id      String,
    reason       String,
    source       String,
    dead_ms      Int64,
    deadline_ms  Int64,
    topic        String,
    ` + "`partition`" + `  Int32,
    ` + "`offset`" + `     Int64,
    inserted_ms  Int64,
    day          Date DEFAULT toDate(toDateTime(intDiv(inserted_ms, 1000), 'UTC'))
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (task_id, topic, ` + "`partition`, `offset`" + `)`, `
CREATE TABLE IF NOT EXISTS {db}.outcomes_by_task AS {db}.outcomes
ENGINE = ReplacingMergeTree(dedup_version)
PARTITION BY toYYYYMM(day)
ORDER BY (task_id, topic, ` + "`partition`, `offset`" + `)`,
		// The outcomes recorded before the table existed. A row the
		// recorder inserts while this runs, or copied again by a
		// migration run twice, is a copy, and queries count every attempt
		// once.
		"INSERT INTO {db}.outcomes_by_task (" + columnList + ") SELECT " + columnList + " FROM {db}.outcomes",
	}},
}

// Applied is a migration recorded in MigrationsTable.
type Applied struct {
	Version uint32
	Name    string
	At      time.Time
}

// Migrate creates the database and applies every migration not yet
// recorded, in version order, recording each after its statements
// succeeded. It returns the versions it applied (none when the schema is
// current). It is safe to run from several processes at once: the
// statements are idempotent, and a version recorded twice counts once.
func (s *Store) Migrate(ctx context.Context) ([]uint32, error) {
	return s.migrate(ctx, migrations)
}

func (s *Store) migrate(ctx context.Context, ms []migration) ([]uint32, error) {
	if err := s.conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+s.db); err != nil {
		return nil, fmt.Errorf("migrate: create database %s: %w", s.cfg.Database, err)
	}
	err := s.conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.table(MigrationsTable)+` (
    version    UInt32,
    name       String,
    applied_at DateTime
) ENGINE = ReplacingMergeTree ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("migrate: create %s: %w", MigrationsTable, err)
	}
	done, err := s.Migrations(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	have := make(map[uint32]bool, len(done))
	for _, a := range done {
		have[a.Version] = true
	}
	ms = slices.Clone(ms)
	slices.SortFunc(ms, func(a, b migration) int { return int(a.version) - int(b.version) })
	var applied []uint32
	for _, m := range ms {
		if have[m.version] {
			continue
		}
		for i, stmt := range m.stmts {
			if err := s.conn.Exec(ctx, strings.ReplaceAll(stmt, "{db}", s.db)); err != nil {
				return applied, fmt.Errorf("migrate: version %d (%s), statement %d: %w", m.version, m.name, i+1, err)
			}
		}
		// INSERT ... SELECT: over the native protocol, an old server waits
		// for data blocks after INSERT ... VALUES.
		err := s.conn.Exec(ctx, fmt.Sprintf("INSERT INTO %s (version, name, applied_at) SELECT %d, %s, toDateTime(%d)",
			s.table(MigrationsTable), m.version, quote(m.name), s.clock.Now().Unix()))
		if err != nil {
			return applied, fmt.Errorf("migrate: record version %d (%s): %w", m.version, m.name, err)
		}
		applied = append(applied, m.version)
	}
	return applied, nil
}

// Migrations returns the recorded migrations, by version; a version
// recorded more than once (by concurrent Migrates) is listed once, with its
// first time.
func (s *Store) Migrations(ctx context.Context) ([]Applied, error) {
	rows, err := s.conn.Query(ctx, `SELECT version, any(name), min(applied_at) FROM `+s.table(MigrationsTable)+
		` GROUP BY version ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", MigrationsTable, err)
	}
	defer rows.Close()
	var out []Applied
	for rows.Next() {
		var a Applied
		if err := rows.Scan(&a.Version, &a.Name, &a.At); err != nil {
			return nil, fmt.Errorf("read %s: %w", MigrationsTable, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", MigrationsTable, err)
	}
	return out, nil
}

// SchemaVersion is the version of the newest migration this build knows.
func SchemaVersion() uint32 { return migrations[len(migrations)-1].version }

// quote returns s as a ClickHouse string literal.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(s) + "'"
}
