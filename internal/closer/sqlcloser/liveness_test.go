package sqlcloser

import (
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/testutil/poll"
)

// livenessBound bounds every wait of TestPendingInput.
const livenessBound = 10 * time.Second

// TestPendingInput: pendingInput sees bytes and end-of-file waiting on an
// idle connection's socket, nothing on a quiet one, and never waits, not
// even for a goroutine blocked reading the same connection, as pgx's
// background reader stays after a write slower than 15ms: it holds the
// socket's read lock until the server sends something, which an idle
// server never does.
func TestPendingInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		// reader: a goroutine is blocked reading the client's end.
		reader bool
		// peer acts on the server's end; nil does nothing.
		peer func(t *testing.T, server net.Conn)
		want bool
	}{
		{name: "quiet"},
		{name: "bytes waiting", want: true, peer: func(t *testing.T, server net.Conn) {
			if _, err := server.Write([]byte("E")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "closed by the server", want: true, peer: func(t *testing.T, server net.Conn) { server.Close() }},
		{name: "quiet with a blocked reader", reader: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := loopbackPair(t)
			if tc.reader {
				go readBlocked(client)
				poll.Until(t, livenessBound, "the reader to block", readerBlocked, nil)
				// Release the reader at the end: one byte, then EOF.
				t.Cleanup(func() { _, _ = server.Write([]byte("x")) })
			}
			if tc.peer != nil {
				tc.peer(t, server)
			}
			check := func() bool {
				got := make(chan bool, 1)
				go func() { got <- pendingInput(client) }()
				select {
				case v := <-got:
					return v
				case <-time.After(livenessBound):
					t.Fatalf("pendingInput did not return within %v", livenessBound)
					return false
				}
			}
			if tc.want {
				// The bytes or the FIN cross the loopback on their own time.
				poll.Until(t, livenessBound, "pendingInput to see the server's end", check, nil)
				return
			}
			if check() {
				t.Error("pendingInput = true on a quiet connection")
			}
		})
	}
}

// loopbackPair returns the two ends of a TCP connection on 127.0.0.1,
// closed at the end of the test.
func loopbackPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// readBlocked reads c until it fails, as pgx's background reader does.
func readBlocked(c net.Conn) {
	buf := make([]byte, 64)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// readerBlocked reports whether readBlocked waits in a read.
func readerBlocked() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[IO wait") && strings.Contains(g, "sqlcloser.readBlocked") {
			return true
		}
	}
	return false
}
