// Package dbproxy is a TCP proxy for tests that must lose the database for
// a moment at an exact step: Cut closes every connection through it and
// refuses new ones for a while, as a restarting server or a cut network
// would, without touching the server other tests share. It is test
// infrastructure: nothing in the product imports it.
package dbproxy

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Proxy forwards connections from its loopback address to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	conns     map[net.Conn]struct{}
	downUntil time.Time
	wg        sync.WaitGroup
}

// Start listens on a free loopback port and forwards to target
// (host:port) until the test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dbproxy: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// Through returns dsn (a URL such as postgres://user@host:port/db) with
// its host and port replaced by the proxy's.
func (p *Proxy) Through(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("dbproxy: %v", err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// Cut closes every connection open through the proxy and, for d, closes
// each new one as soon as it is accepted.
func (p *Proxy) Cut(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.downUntil = time.Now().Add(d)
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := time.Now().Before(p.downUntil)
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { pipe(c, s) })
		p.wg.Go(func() { pipe(s, c) })
	}
}

// pipe copies from src to dst and closes both when either side ends.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.Cut(0)
	p.wg.Wait()
}
