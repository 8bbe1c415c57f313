//go:build unix

package sqlcloser

import "syscall"

// peek reports whether the socket fd has input or end-of-file pending.
func peek(fd uintptr) bool {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	// Nothing to read is EAGAIN; data, EOF (n == 0) and socket errors all
	// mean the connection needs a look.
	return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR
}
