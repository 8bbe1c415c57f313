package sqlcloser

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hourglass/hourglass/internal/closer"
)

func TestPermanent(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return &pgconn.PgError{Code: code, Message: "pg"} }
	my := func(n uint16, state string) error {
		e := &mysql.MySQLError{Number: n, Message: "mysql"}
		copy(e.SQLState[:], state)
		return e
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"marked permanent", closer.Permanent(errors.New("bad")), true},
		{"context canceled", fmt.Errorf("close: %w", context.Canceled), false},
		{"context deadline", context.DeadlineExceeded, false},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), false},
		{"unexpected EOF", io.ErrUnexpectedEOF, false},
		{"bad connection", driver.ErrBadConn, false},
		{"mysql invalid connection", mysql.ErrInvalidConn, false},
		{"unknown error", errors.New("something"), false},

		{"pg serialization failure", pg("40001"), false},
		{"pg deadlock", pg("40P01"), false},
		{"pg too many connections", pg("53300"), false},
		{"pg admin shutdown", pg("57P01"), false},
		{"pg crash shutdown", pg("57P02"), false},
		{"pg cannot connect now", pg("57P03"), false},
		{"pg query canceled (statement_timeout)", pg("57014"), false},
		{"pg lock not available", pg("55P03"), false},
		{"pg connection failure", pg("08006"), false},
		{"pg invalid password", pg("28P01"), false},
		{"pg syntax error", pg("42601"), true},
		{"pg undefined table", pg("42P01"), true},
		{"pg undefined column", pg("42703"), true},
		{"pg insufficient privilege", pg("42501"), true},
		{"pg invalid text representation", pg("22P02"), true},
		{"pg numeric out of range", pg("22003"), true},
		{"pg check violation", pg("23514"), true},
		{"pg cardinality violation", pg("21000"), true},
		{"pg feature not supported", pg("0A000"), true},
		{"pg wrapped", fmt.Errorf("close %q: update: %w", "1", pg("42P01")), true},

		{"mysql deadlock", my(1213, "40001"), false},
		{"mysql lock wait timeout", my(1205, "HY000"), false},
		{"mysql too many connections", my(1040, "08004"), false},
		{"mysql too many user connections", my(1203, "42000"), false},
		{"mysql server shutdown", my(1053, "08S01"), false},
		{"mariadb statement timeout", my(1969, "70100"), false},
		{"mysql syntax error", my(1064, "42000"), true},
		{"mysql unknown column", my(1054, "42S22"), true},
		{"mysql no such table", my(1146, "42S02"), true},
		{"mysql incorrect integer value", my(1366, "HY000"), true},
		{"mysql truncated wrong value", my(1292, "22007"), true},
		{"mysql duplicate entry", my(1062, "23000"), true},
		{"mysql illegal mix of collations", my(1267, "HY000"), true},
		{"mysql unknown number, SQLSTATE class 22", my(9999, "22999"), true},
		{"mysql unknown number and class", my(9999, "HY000"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := permanent(tt.err); got != tt.want {
				t.Errorf("permanent(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestRolledBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"pg serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"pg deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"pg wrapped deadlock", fmt.Errorf("close: %w", &pgconn.PgError{Code: "40P01"}), true},
		{"pg lock not available", &pgconn.PgError{Code: "55P03"}, false},
		{"mysql deadlock", &mysql.MySQLError{Number: 1213}, true},
		{"mysql lock wait timeout", &mysql.MySQLError{Number: 1205}, false},
		{"other", errors.New("connection refused"), false},
	} {
		if got := rolledBack(tc.err); got != tc.want {
			t.Errorf("%s: rolledBack = %v, want %v", tc.name, got, tc.want)
		}
	}
}
