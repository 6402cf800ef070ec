package smtptest

import (
	"crypto/tls"
	"net"
	"sync/atomic"

	"github.com/emersion/go-smtp"
)

// listener wraps accepted connections so a reply can be followed by a
// hang-up, and counts sessions.
type listener struct {
	net.Listener
	s *Server
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	id := l.s.sessions.Add(1)
	fc := &faultConn{Conn: c, id: int(id), s: l.s}
	l.s.connMu.Lock()
	l.s.conns[fc] = struct{}{}
	l.s.connMu.Unlock()
	return fc, nil
}

// faultConn closes itself after the next write once hangUp is set, so that
// a 421 reply reaches the client before the connection drops.
type faultConn struct {
	net.Conn
	id     int
	s      *Server
	hangUp atomic.Bool
}

// Close closes the connection and forgets it.
func (c *faultConn) Close() error {
	c.s.connMu.Lock()
	delete(c.s.conns, c)
	c.s.connMu.Unlock()
	return c.Conn.Close()
}

func (c *faultConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.hangUp.Load() {
		_ = c.Close()
	}
	return n, err
}

// rawConn finds our faultConn under a go-smtp connection (which may have
// been upgraded to TLS).
func rawConn(c *smtp.Conn) *faultConn {
	nc := c.Conn()
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	fc, _ := nc.(*faultConn)
	return fc
}
