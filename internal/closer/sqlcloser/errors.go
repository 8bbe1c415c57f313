package sqlcloser

import (
	"context"
	"errors"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hourglass/hourglass/internal/closer"
)

// permanent reports whether err will fail the same way on every retry: the
// statement or the schema is wrong (syntax, undefined table or column,
// missing privilege) or the data is (an id that is not a valid integer, a
// constraint). Everything else (connection errors, timeouts, serialization
// failures and deadlocks, too many connections, a server shutting down,
// errors of unknown kind) is retryable: a later attempt may succeed.
func permanent(err error) bool {
	switch {
	case err == nil:
		return false
	case closer.IsPermanent(err):
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok {
		return pgPermanent(pe.Code)
	}
	if me, ok := errors.AsType[*mysql.MySQLError](err); ok {
		return mysqlPermanent(me)
	}
	return false
}

// pgPermanent classifies a Postgres SQLSTATE
// (https://www.postgresql.org/docs/current/errcodes-appendix.html).
func pgPermanent(code string) bool {
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case "21", // cardinality violation: a subquery returned more than one row
		"22", // data exception: invalid_text_representation for "abc" as bigint, ...
		"23", // integrity constraint violation
		"42", // syntax error or access rule violation: undefined table or column, ...
		"44": // with check option violation
		return true
	case "0A": // feature not supported
		return true
	}
	// 08 connection exception, 40 transaction rollback (40001, 40P01),
	// 53 insufficient resources (53300 too many connections), 55P03 lock
	// not available, 57014 query canceled (statement_timeout), 57P01..57P03
	// admin shutdown, crash shutdown, cannot connect now: retryable.
	return false
}

// MySQL and MariaDB error numbers that are retryable even though their
// SQLSTATE class says otherwise.
var mysqlRetryable = map[uint16]bool{
	1040: true, // ER_CON_COUNT_ERROR: too many connections
	1053: true, // ER_SERVER_SHUTDOWN
	1203: true, // ER_TOO_MANY_USER_CONNECTIONS (SQLSTATE 42000)
	1205: true, // ER_LOCK_WAIT_TIMEOUT
	1213: true, // ER_LOCK_DEADLOCK
	1226: true, // ER_USER_LIMIT_REACHED (SQLSTATE 42000)
	1317: true, // ER_QUERY_INTERRUPTED
	1927: true, // ER_CONNECTION_KILLED (MariaDB)
	1969: true, // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time)
	3024: true, // ER_QUERY_TIMEOUT (MySQL max_execution_time)
}

// MySQL and MariaDB error numbers that are permanent whatever their SQLSTATE.
var mysqlPermanentNumbers = map[uint16]bool{
	1054: true, // ER_BAD_FIELD_ERROR: unknown column
	1064: true, // ER_PARSE_ERROR
	1146: true, // ER_NO_SUCH_TABLE
	1264: true, // ER_WARN_DATA_OUT_OF_RANGE
	1267: true, // ER_CANT_AGGREGATE_2COLLATIONS: an id not valid in the connection charset
	1270: true, // ER_CANT_AGGREGATE_3COLLATIONS
	1271: true, // ER_CANT_AGGREGATE_NCOLLATIONS
	1265: true, // WARN_DATA_TRUNCATED
	1292: true, // ER_TRUNCATED_WRONG_VALUE
	1366: true, // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
	1406: true, // ER_DATA_TOO_LONG
	1451: true, // ER_ROW_IS_REFERENCED_2
	1452: true, // ER_NO_REFERENCED_ROW_2
	1690: true, // ER_DATA_OUT_OF_RANGE
	3819: true, // ER_CHECK_CONSTRAINT_VIOLATED (MySQL)
	4025: true, // ER_CONSTRAINT_FAILED (MariaDB)
}

func mysqlPermanent(e *mysql.MySQLError) bool {
	if mysqlRetryable[e.Number] {
		return false
	}
	if mysqlPermanentNumbers[e.Number] {
		return true
	}
	switch string(e.SQLState[:2]) {
	case "21", "22", "23", "42", "44":
		return true
	}
	return false
}

// rolledBack reports whether err is the database rolling a transaction back
// to break a deadlock or a serialization conflict: Postgres 40001 and 40P01,
// MySQL and MariaDB 1213. Running the transaction again is the documented
// answer.
func rolledBack(err error) bool {
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok {
		return pe.Code == "40001" || pe.Code == "40P01"
	}
	if me, ok := errors.AsType[*mysql.MySQLError](err); ok {
		return me.Number == 1213
	}
	return false
}
