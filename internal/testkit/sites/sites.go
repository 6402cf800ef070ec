// Package sites is a small web of made-up hosts for tests: one plain-HTTP
// and one TLS listener on loopback, virtual hosts chosen by the Host header
// (and by SNI for certificates), a resolver for fetcher.Config.Dial that
// maps "host:80" and "host:443" onto those listeners and fails unknown names
// as DNS does, a test CA with a certificate per host (expired on demand), and
// a log of every request so a test can count what a publisher would see.
// Scenarios holds the table of moved and dead feeds built on it from the
// corpus's real feed files.
//
// Test infrastructure: never linked into cmd/feedmail. It never reaches a
// host but its own listeners, and it writes no file.
package sites

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// Request is one request a host received.
type Request struct {
	Time   time.Time // the Sites clock at arrival
	Scheme string    // "http" or "https"
	Host   string    // the host name, lowercased, without port
	Path   string    // the request URI: path and raw query
	Status int       // the status answered
}

// Sites is a running web of virtual hosts. Create it with New or Start,
// stop it with Close.
type Sites struct {
	clk   clock.Clock
	ca    *authority
	plain struct {
		ln  net.Listener
		srv *http.Server
	}
	secure struct {
		ln  net.Listener
		srv *http.Server
	}

	mu    sync.Mutex
	hosts map[string]*Host
	log   []Request
	conns map[net.Conn]bool // open client connections, closed by Reset
}

// New starts the two listeners on 127.0.0.1 with no host registered.
// clk dates the request log (nil: the real clock).
func New(clk clock.Clock) (*Sites, error) {
	if clk == nil {
		clk = clock.Real{}
	}
	ca, err := newAuthority()
	if err != nil {
		return nil, err
	}
	s := &Sites{clk: clk, ca: ca, hosts: map[string]*Host{}, conns: map[net.Conn]bool{}}
	quiet := log.New(io.Discard, "", 0) // handshake failures are what some tests are about
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sites: listen: %w", err)
	}
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		pln.Close()
		return nil, fmt.Errorf("sites: listen: %w", err)
	}
	s.plain.ln, s.secure.ln = pln, tln
	s.plain.srv = &http.Server{Handler: s.handler("http"), ReadHeaderTimeout: 10 * time.Second, ErrorLog: quiet,
		ConnState: s.track}
	s.secure.srv = &http.Server{Handler: s.handler("https"), ReadHeaderTimeout: 10 * time.Second, ErrorLog: quiet,
		ConnState: s.track, TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certificate}}
	go func() { _ = s.plain.srv.Serve(pln) }()
	go func() { _ = s.secure.srv.ServeTLS(tln, "", "") }()
	return s, nil
}

// Start is New for a test: it fails the test when the listeners cannot be
// had and closes them when the test ends.
func Start(t testing.TB) *Sites {
	t.Helper()
	s, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Close stops both listeners.
func (s *Sites) Close() {
	_ = s.plain.srv.Close()
	_ = s.secure.srv.Close()
}

// Host returns the virtual host name (lowercased), registering it (so it
// resolves) with no page on first use.
func (s *Sites) Host(name string) *Host {
	name = strings.ToLower(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hosts[name]
	if h == nil {
		h = newHost(name)
		s.hosts[name] = h
	}
	return h
}

// Remove unregisters a host: its name no longer resolves.
func (s *Sites) Remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.hosts, strings.ToLower(name))
}

// Reset unregisters every host, empties the request log and closes every
// open connection (a scenario's "before" web replaced by its
// "after" one: a client must dial again, and meet the new names, ports and
// certificates).
func (s *Sites) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts = map[string]*Host{}
	s.log = nil
	for c := range s.conns {
		c.Close()
	}
	clear(s.conns)
}

// track keeps the set of open connections for Reset.
func (s *Sites) track(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
	}
}

func (s *Sites) lookup(name string) *Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hosts[strings.ToLower(name)]
}

// Dial is the resolver for fetcher.Config.Dial: "host:80" maps to the
// plain listener and "host:443" to the TLS one when host is registered
// (a refused connection when the host has that port off, or for any other
// port); an unknown name fails with a *net.DNSError, as a name with no
// record does.
func (s *Sites) Dial(_ context.Context, network, hostport string) (string, error) {
	name, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", fmt.Errorf("sites: dial %q: %w", hostport, err)
	}
	h := s.lookup(name)
	if h == nil {
		return "", &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	refused := &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	httpOn, httpsOn := h.ports()
	switch {
	case port == "80" && httpOn:
		return s.plain.ln.Addr().String(), nil
	case port == "443" && httpsOn:
		return s.secure.ln.Addr().String(), nil
	}
	return "", refused
}

// RootCAs returns the pool holding the test CA, for fetcher.Config.RootCAs.
func (s *Sites) RootCAs() *x509.CertPool { return s.ca.pool }

// FetcherConfig returns a fetcher configuration that reaches these sites:
// Dial and RootCAs set, the guard open to loopback, a short timeout.
func (s *Sites) FetcherConfig() fetcher.Config {
	return fetcher.Config{BaseURL: "https://feedmail.test", AllowPrivate: true,
		Timeout: 20 * time.Second, Dial: s.Dial, RootCAs: s.ca.pool}
}

// Requests returns a copy of the request log, in order of arrival.
func (s *Sites) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Count returns how many requests host received; "" counts every host.
func (s *Sites) Count(host string) int {
	n := 0
	for _, r := range s.Requests() {
		if host == "" || r.Host == strings.ToLower(host) {
			n++
		}
	}
	return n
}

// ResetLog empties the request log.
func (s *Sites) ResetLog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

func (s *Sites) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	h := s.lookup(hello.ServerName)
	if h == nil {
		return nil, errors.New("sites: no such host " + hello.ServerName)
	}
	return s.ca.leaf(h.name, h.expired())
}

func (s *Sites) handler(scheme string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.ToLower(r.Host)
		if hn, _, err := net.SplitHostPort(name); err == nil {
			name = hn
		}
		h := s.lookup(name)
		if h != nil && h.off(scheme) {
			// A port turned off after a client connected: drop the kept-alive
			// connection, as a server that went away would.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
		}
		rec := &testutil.StatusWriter{ResponseWriter: w}
		if h != nil {
			h.serve(rec, r)
		} else {
			http.Error(rec, "no such site", http.StatusMisdirectedRequest)
		}
		s.mu.Lock()
		s.log = append(s.log, Request{Time: s.clk.Now(), Scheme: scheme, Host: name, Path: r.URL.RequestURI(), Status: rec.Code()})
		s.mu.Unlock()
	})
}
