// Package hung gives tests a broker that accepts connections and never
// answers: a hung broker, or a wrong port behind a proxy.
package hung

import (
	"net"
	"testing"
)

// Listen listens on 127.0.0.1, accepts every connection and holds it open
// without a byte in reply until the test ends, and returns its address.
func Listen(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return ln.Addr().String()
}
