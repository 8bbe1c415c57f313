// Package chstore keeps Hourglass's outcome events in ClickHouse: the
// connection (native protocol, clickhouse-go), versioned schema migrations,
// the batched insert the recorder uses, and the deduplicating queries the
// report and the dashboard are built on.
//
// # Compatibility
//
// The schema and the queries stay within what ClickHouse 18.16 (Debian
// bookworm's package) knows, and work on current servers too: times are
// unix milliseconds in Int64 columns (no DateTime64), every INSERT names its
// columns, rows are inserted as native blocks, and statements that carry
// their own data use INSERT ... SELECT (an old server waits for data blocks
// after INSERT ... VALUES on the native protocol). Tables are always named
// with their database, so Open works before Migrate has created it.
//
// # Schema
//
// Database Config.Database (default "hourglass") holds:
//
//   - outcomes: one row per close attempt, the columns of outcome.Event
//     (task_id, kind, outcome, detail, error, attempt, hops, path,
//     scheduled_ms, due_ms, deadline_ms, forwarded_ms, closed_ms, lateness_ms,
//     instance, topic, partition, offset) plus inserted_ms (when the
//     recorder inserted it), day (the UTC date of closed_ms, which partitions
//     the table by month) and dedup_version (see below);
//   - outcomes_by_task: the same rows ordered by task id, for lookups of
//     one task; the recorder inserts every event into both tables (a
//     table, not a materialized view: one over outcomes doubled the
//     inserts after a restart of an 18.16 server);
//   - deadlines, cancellations and dead_letters, the deadline index: one
//     row per scheduled deadline (its first record in a delay topic), per
//     record of the cancellations topic and per dead letter, each keyed by
//     (task_id, topic, partition, offset) and partitioned by the month it
//     was inserted (ReplacingMergeTree: a row inserted twice is one
//     record, and queries group by record whatever the merges did).
//     Store.Task reads what they hold of one task in a few granules of
//     each; Store.Forecast counts the open deadlines due per minute;
//   - hourglass_schema_migrations: version, name and applied_at of every
//     applied migration.
//
// Migrate applies the migrations not yet recorded, in version order, and
// records each after its statements succeeded. Every statement is idempotent
// (CREATE ... IF NOT EXISTS), so two processes migrating at once, or a crash
// between a statement and its record, do no harm; a version recorded twice is
// read once.
//
// ClickHouse has no row TTL before 19.6: drop old months with
// ALTER TABLE hourglass.outcomes DROP PARTITION 202405 (and the same of
// outcomes_by_task; the index tables' months are those of insertion, so
// keep the months of the longest delay).
//
// # Duplicates
//
// An attempt is identified by its cancel record, (topic, partition,
// offset). It can be recorded more than once: a canceller that crashes
// after closing but before committing closes the record again and sends a
// second event, usually with another outcome (already_closed after closed)
// and a later closed_ms; a recorder that crashes after inserting but before
// committing inserts the same events again. The first row (smallest
// closed_ms) is the truth; the others must not count.
//
// Two things make that so. The table is a ReplacingMergeTree ordered by
// (topic, partition, offset) with the version column dedup_version =
// 2^63-1 - closed_ms, so background merges keep the attempt's first row (a
// ReplacingMergeTree without a version would keep the last inserted one:
// the replay). But merges happen at unknown times and only within a
// partition, so no query relies on them (nor on FINAL, which has the same
// partition limit): every query reads attempts through a subquery that
// groups the rows by (topic, partition, offset) and takes each column with
// argMin(column, closed_ms) (a View). An attempt belongs to a window [from,
// to) when its first row closed in it; its other rows are read even when
// they lie outside the window, so a replay never counts in the window it
// landed in. To find them without scanning the table, a View first looks up
// the range of offsets of the window's rows per (topic, partition) and reads
// the rows whose key lies in those ranges, which the primary key serves
// (keys in a range whose first row is outside the window drop out in the
// grouping). The counts are thus exact whether or not merges have run; only
// the Duplicates counters (rows ignored) fall to zero once merges have
// removed the copies. The Grafana dashboard
// (deploy/grafana/hourglass-clickhouse.json) runs the same grouping once
// per refresh, in one query whose sections its panels share, finding the
// keys by blocks of 4096 offsets.
//
// The benchmarks of the insert and of a report's queries are in
// docs/benchmarks.md, with how to run them.
//
// Lateness quantiles are exact (quantilesExact: the element at index
// floor(level*n) of the sorted values) and cover the final outcomes
// (FinalOutcomes: closed, already_closed, skipped, not_found, moved).
package chstore
