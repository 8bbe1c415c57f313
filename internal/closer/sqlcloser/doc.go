// Package sqlcloser is the sql closer: it closes an order with one
// conditional update in the service's own database, Postgres (through pgx)
// or MySQL/MariaDB (through go-sql-driver/mysql), both through
// database/sql. Its Reconcile scan is the safety net run as
// `hourglass reconcile`.
//
// # The close
//
// For the default configuration Close runs
//
//	UPDATE "orders" SET "status" = $2, "closed_at" = now()
//	WHERE "id" = $1 AND "status" IN ($3)        -- $2 = 'CLOSED', $3 = 'UNPAID'
//
// in autocommit, one round trip, when New proved the key column unique:
// the primary key, or a unique index on exactly that column that is valid,
// not partial and not on an expression (pg_index, or MySQL's
// information_schema.STATISTICS). Otherwise (no such index, a view, a
// table with inheritance children) the update runs in a transaction, and
// when it changed more than one row it is rolled back and fails
// permanently, naming how many rows matched: a duplicated id never closes
// two orders.
//
// With a release statement (return the order's stock, say), the update and
// the release run in one transaction, the release only when the update
// changed the row: a closed order never keeps its stock, and stock is
// returned exactly once. A custom close statement also runs in a
// transaction, rolled back if it changed more than one row; what it
// matches is its author's responsibility. One row changed is
// outcome.Closed. No row changed is followed by a status lookup
// outside the transaction: no row is outcome.NotFound, the closed status
// outcome.AlreadyClosed, anything else outcome.Skipped with the status as
// Result.Detail ("PAID").
//
// The update is conditional, so a close delivered twice, or racing a
// payment (UPDATE ... SET status = 'PAID' WHERE id = $1 AND status =
// 'UNPAID'), changes the row at most once and never closes a paid order:
// the row lock orders the two, and the loser's condition no longer holds.
//
// # Batches
//
// Closes that are ready at the same moment close together (group
// commit): Close queues its order, and one of two flushers (at most
// max_open_conns) takes everything queued at that moment, at most
// max_batch (default 500; 1 turns batching off), and closes it together.
// A close that finds a flusher free goes out at once, on the caller's
// goroutine, as the single close above: nothing waits for a batch to
// fill, and on a quiet day a close takes as long as unbatched. While both
// flushers run, the closes that come queue up, so batches grow with the
// load (docs/closers.md has the figures). On MySQL, where a batch takes
// several round trips, fewer than 16 orders close on their own, at once. On Postgres, with the ids as one text array:
//
//	UPDATE "orders" AS o SET "status" = $2, "closed_at" = now()
//	FROM (SELECT CAST(v AS pg_catalog.int8) AS v, min(n) AS n
//	      FROM unnest(CAST($1 AS text[])) WITH ORDINALITY AS k(v, n) GROUP BY 1) AS k
//	WHERE o."id" = k.v AND o."status" IN ($3) RETURNING k.n
//
// (int8 is the key column's type, which New looks up, without its
// modifier: a cast to varchar(8) would cut a long id short). On MySQL and
// MariaDB, in a READ COMMITTED transaction,
//
//	SELECT k.n, o.`id` FROM (SELECT ? AS v, 1 AS n UNION ALL SELECT ?, 2 ...) AS k
//	JOIN `orders` AS o ON o.`id` = k.v WHERE o.`status` IN (?) FOR UPDATE
//	UPDATE `orders` SET ... WHERE `id` IN (the ids locked) AND `status` IN (?)
//
// With a release statement (and always on MySQL) the update runs in a
// transaction with the release statement run for exactly the orders it
// closed. Then one query reads the status of the others:
//
//	SELECT k.n, o."status" FROM (the ids, numbered) AS k JOIN "orders" AS o ON o."id" = k.v
//
// Each order's outcome comes back by its position n, not by the id as
// stored, so it is the one the order would have had alone: closed,
// already_closed, skipped with the status, not_found. Duplicates of one
// order in a batch (also "42" and "042", or ids that a case-insensitive
// collation matches to one row) close it once, for the first of them, and
// the others are already_closed, as one close after the other would be.
// Batches take row locks like single closes, so the race with a payment
// ends the same way. When the batch fails (a release that breaks a
// constraint, an id that is not a valid key, a lock wait past
// statement_timeout), nothing of it is committed and each of its closes
// runs again on its own, so that one bad row fails only itself. (A MySQL
// batch whose statement timed out kills its connection first: the server
// would otherwise keep the transaction, and the locks of every order in
// it, until it noticed the closed connection.) A
// failed status query leaves each close to look its order up. The batch
// runs under a context of its own, bounded by statement_timeout like a
// single close: a caller whose ctx ends stops waiting, and its close may
// still be committed, as a single close may be. Batching is off with a
// custom close statement and when the key column is not proven unique; a
// custom status statement runs once per order not closed.
//
// MySQL uses ? placeholders, backquoted identifiers and
// CURRENT_TIMESTAMP(6), and runs the close, status and release statements
// as prepared statements: database/sql prepares each once per connection,
// and a close is then one round trip, the task id sent apart from the SQL
// text. The driver's interpolateParams=true, which escapes the id into the
// text instead, is refused unless the connection's character set is utf8,
// utf8mb4, utf8mb3, latin1, ascii or binary: in GBK, Big5, SJIS or CP932
// the id "\xbf' OR 1=1 -- " escapes its quote and would close every order
// (Validate reports such a charset in the DSN, New one set in the session).
//
// MySQL and MariaDB compare an integer column with a string as
// floating-point numbers (so '42abc' matches 42, and ids above
// 2^53 may match their neighbours), so New looks up the key column's type
// and, for an integer column, binds the task id as an integer parsed
// strictly; an id that does not parse is a permanent error.
//
// # Moved deadlines
//
// With deadline_column (the order's own deadline, a timestamp column), the
// database guards a deadline moved later: the close applies only when the
// stored deadline, to the millisecond, is not after the record's
// (hourglass-deadline on a retry, else hourglass-due). It compares with
// the record's time, not the clock's, so a replayed record ends the same
// way:
//
//	UPDATE "orders" SET "status" = $2, "closed_at" = now()
//	WHERE "id" = $1 AND "status" IN ($3)
//	  AND ("expires_at" IS NULL OR "expires_at" < CAST($4 AS pg_catalog.timestamptz))
//
// $4 is the record's deadline truncated to the millisecond, plus one
// millisecond, as UTC text, cast to the column's own type on Postgres
// (New looks it up: timestamptz compares instants, and timestamp UTC wall
// clocks whatever the session's time zone) and to DATETIME(6) on MySQL,
// whose session runs in UTC. A NULL deadline guards nothing: the order
// closes as without the column. An order that the guard left open is
// outcome.Moved, with the stored deadline (UTC, RFC 3339 to the
// millisecond) as Result.Detail; the status lookup reads it,
//
//	SELECT "status", CASE WHEN "status" IN ($2) AND "expires_at" >= CAST($3 AS ...)
//	       THEN "expires_at" END FROM "orders" WHERE "id" = $1
//
// and a paid or closed order is skipped or already_closed as before,
// whatever its deadline. A batch compares each order with its own
// record's deadline (a second text array on Postgres, a second column of
// the ids' table on MySQL); two records of one order with different
// deadlines in one batch end as if the one that closes it ran first. A
// task without a deadline fails permanently. Reconcile gives its closes
// the run's start minus the grace as their deadline.
//
// # Errors
//
// Errors wrap the operation and the task id. Those a retry cannot fix are
// marked closer.Permanent: Postgres SQLSTATE classes 21, 22, 23, 42, 44 and
// 0A (syntax error, undefined table or column, an id that is not a valid
// integer, a constraint), MySQL 1054, 1064, 1146, 1292, 1366 and the like.
// Everything else is retryable: connection refused or reset, timeouts,
// serialization failures and deadlocks (40001, 40P01, 1213, 1205), too many
// connections (53300, 1040), a server shutting down (57P01..57P03, 1053),
// "bad connection". When the caller's ctx ends, the error wraps ctx's
// error.
//
// # Reconcile
//
// Reconcile closes the orders the pipeline missed: those still open whose
// created_at + reconcile.deadline is before now - grace, now taken from an
// injected clock, not the database. It reads
//
//	SELECT "id", "created_at" FROM "orders"
//	WHERE "status" IN ($1) AND "created_at" < $2
//	  AND ("created_at" > $3 OR ("created_at" = $3 AND "id" > $4))
//	ORDER BY "created_at", "id" LIMIT 500
//
// page by page (keyset pagination, served by an index on (status,
// created_at)) and closes each order through a closer.Closer, normally the
// Closer itself.
//
// # Time zones
//
// Postgres timestamptz columns compare correctly whatever the zones. For a
// timestamp (without time zone) or a MySQL DATETIME column, the values are
// taken as UTC: the MySQL session runs with time_zone '+00:00' and the
// driver with loc=UTC and parseTime=true.
package sqlcloser
