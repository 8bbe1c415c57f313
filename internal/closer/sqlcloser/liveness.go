package sqlcloser

import (
	"context"
	"crypto/tls"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// idlePing is how long a pooled Postgres connection may sit unused before it
// is pinged on reuse; pgx's database/sql adapter uses the same figure.
const idlePing = time.Second

// shouldPing decides whether database/sql pings a pooled Postgres connection
// before reusing it: after idlePing unused, as pgx does by default, and also
// whenever the server has sent something while the connection was idle. An
// idle server sends nothing unless it is closing the connection (a restart,
// a failover, an idle-session timeout: an error message and then EOF), so
// bytes or EOF waiting on the socket mean the connection is probably dead,
// and the ping, which reads them, finds out for certain and has the pool
// drop it. Without this, a close on a connection used just before a
// database restart fails with "unexpected EOF" although a fresh connection
// would work. The check is one non-blocking peek, no round trip.
// go-sql-driver/mysql checks its connections the same way
// (checkConnLiveness).
func shouldPing(_ context.Context, p stdlib.ShouldPingParams) bool {
	return p.IdleDuration > idlePing || p.Conn.IsClosed() || pendingInput(p.Conn.PgConn().Conn())
}

// pendingInput reports whether conn's socket has bytes to read or has been
// closed by the peer, without consuming anything and without blocking.
// Connections whose socket cannot be reached (not TCP or Unix) report false.
//
// It peeks through RawConn.Control, which takes no lock, and not
// RawConn.Read, which takes the socket's read lock: after a write slower
// than 15ms pgx leaves its background reader blocked in a read of the
// socket, holding that lock until the server sends something, which it
// does not do to an idle connection, and the check would wait forever.
// Bytes that the background reader has already taken from the socket are
// not seen; EOF stays visible.
func pendingInput(conn net.Conn) bool {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	pending := false
	err = raw.Control(func(fd uintptr) { pending = peek(fd) })
	return pending || err != nil
}
