package embedded

import (
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Latency makes the broker's answers reach its clients d later than it
// writes them, in order and without slowing its connections, as the
// answers of a broker across a network do: on loopback a round trip takes
// microseconds, and what a service pays per round trip does not show.
func Latency(d time.Duration) kfake.Opt {
	return kfake.ListenFn(func(network, address string) (net.Listener, error) {
		l, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		return latentListener{Listener: l, d: d}, nil
	})
}

type latentListener struct {
	net.Listener
	d time.Duration
}

func (l latentListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &latentConn{Conn: c, d: l.d, q: make(chan chunk, 4096), closed: make(chan struct{})}
	go lc.deliver()
	return lc, nil
}

// latentConn holds what is written to it for d, then writes it on.
type latentConn struct {
	net.Conn
	d      time.Duration
	q      chan chunk
	closed chan struct{}
	once   sync.Once
}

// chunk is what one Write wrote, and when it is to be written on.
type chunk struct {
	at time.Time
	b  []byte
}

func (c *latentConn) Write(b []byte) (int, error) {
	select {
	case c.q <- chunk{at: time.Now().Add(c.d), b: append([]byte(nil), b...)}:
		return len(b), nil
	case <-c.closed:
		return 0, net.ErrClosed
	}
}

// deliver writes each chunk on at its time, until the connection closes
// or a write fails (which closes it).
func (c *latentConn) deliver() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		var ch chunk
		select {
		case <-c.closed:
			return
		case ch = <-c.q:
		}
		t.Reset(time.Until(ch.at))
		select {
		case <-c.closed:
			return
		case <-t.C:
		}
		if _, err := c.Conn.Write(ch.b); err != nil {
			c.Close()
			return
		}
	}
}

func (c *latentConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
