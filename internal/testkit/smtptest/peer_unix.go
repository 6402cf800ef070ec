//go:build unix

package smtptest

import (
	"errors"
	"syscall"
)

// peerGone reports whether the client has closed or reset the connection,
// without reading what it may have pipelined: a peek that does not wait.
func (c *faultConn) peerGone() bool {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	_ = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = (n == 0 && err == nil) || errors.Is(err, syscall.ECONNRESET)
		return true // never wait for readiness
	})
	return gone
}
