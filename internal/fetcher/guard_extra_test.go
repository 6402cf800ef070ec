package fetcher

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeDNS is a resolver whose answers come from a table, served in process
// over net.Pipe (the Go resolver speaks DNS over TCP framing to a conn that
// is not a PacketConn): no packet leaves the test. Names not in the table
// are NXDOMAIN.
type fakeDNS struct {
	mu      sync.Mutex
	records map[string][]netip.Addr // lower-case name with the final dot
	asked   []string
}

func newFakeDNS(records map[string][]string) *fakeDNS {
	d := &fakeDNS{records: map[string][]netip.Addr{}}
	for name, addrs := range records {
		for _, a := range addrs {
			d.records[strings.ToLower(name)+"."] = append(d.records[strings.ToLower(name)+"."], netip.MustParseAddr(a))
		}
	}
	return d
}

func (d *fakeDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go d.serve(server)
		return client, nil
	}}
}

func (d *fakeDNS) serve(c net.Conn) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		resp, err := d.answer(q)
		if err != nil {
			return
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

func (d *fakeDNS) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 {
		return nil, errors.New("want one question")
	}
	q := qs[0]
	name := strings.ToLower(q.Name.String())
	d.mu.Lock()
	d.asked = append(d.asked, name)
	addrs, known := d.records[name]
	d.mu.Unlock()
	msg := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true},
		Questions: qs,
	}
	if !known {
		msg.Header.RCode = dnsmessage.RCodeNameError
	}
	for _, a := range addrs {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
		switch {
		case a.Is4() && q.Type == dnsmessage.TypeA:
			rh.Type = dnsmessage.TypeA
			msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: rh, Body: &dnsmessage.AResource{A: a.As4()}})
		case a.Is6() && q.Type == dnsmessage.TypeAAAA:
			rh.Type = dnsmessage.TypeAAAA
			msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: rh, Body: &dnsmessage.AAAAResource{AAAA: a.As16()}})
		}
	}
	return msg.Pack()
}

// dialLog is a beforeConnect hook that records every address the guard let
// through and connects only to the allowed ones.
type dialLog struct {
	mu      sync.Mutex
	allowed map[netip.AddrPort]bool
	seen    []netip.AddrPort
}

func (l *dialLog) hook(ap netip.AddrPort) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, ap)
	if l.allowed[ap] {
		return nil
	}
	return errors.New("test: no connection to " + ap.String())
}

func (l *dialLog) passed() []netip.AddrPort {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]netip.AddrPort(nil), l.seen...)
}

// feedServer is a loopback server playing the private target; it counts
// requests.
func feedServer(t *testing.T) (*httptest.Server, *atomic.Int32, string) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = w.Write([]byte(feedBody))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits, srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
}

// TestGuardRefusesPublicNamesThatResolvePrivate: a public-looking host name
// whose DNS answer is loopback, private, link-local (the cloud metadata
// address), an IPv4-mapped loopback, or a mix of a public and a loopback
// address, is refused after resolution; no private address ever reaches
// connect(2), and the loopback server sees nothing. With AllowPrivate the
// same names connect, which shows the fake DNS really resolves them.
func TestGuardRefusesPublicNamesThatResolvePrivate(t *testing.T) {
	srv, hits, port := feedServer(t)
	target := netip.MustParseAddrPort("127.0.0.1:" + port)
	dns := newFakeDNS(map[string][]string{
		"loopback.feeds.example":    {"127.0.0.1"},
		"loop6.feeds.example":       {"::1"},
		"mapped.feeds.example":      {"::ffff:127.0.0.1"},
		"private.feeds.example":     {"10.20.30.40"},
		"metadata.feeds.example":    {"169.254.169.254"},
		"mixed.feeds.example":       {"93.184.216.34", "127.0.0.1"},
		"mixed6.feeds.example":      {"2606:2800:220:1:248:1893:25c8:1946", "::1"},
		"ula.feeds.example":         {"fd00::1"},
		"cgnat.feeds.example":       {"100.64.0.1"},
		"unspecified.feeds.example": {"0.0.0.0"},
	})
	for _, name := range []string{"loopback", "loop6", "mapped", "private", "metadata", "mixed", "mixed6", "ula", "cgnat", "unspecified"} {
		t.Run(name, func(t *testing.T) {
			dl := &dialLog{}
			c := testClient(t, Config{}, hooks{resolver: dns.resolver(), beforeConnect: dl.hook})
			u := "http://" + name + ".feeds.example:" + port + "/feed"
			resp, err := c.Fetch(t.Context(), Request{URL: u})
			if !strings.HasPrefix(name, "mixed") && !errors.Is(err, ErrPrivateAddress) {
				t.Fatalf("%s: %v (kind %q), want private_address", u, err, KindOf(err))
			}
			if KindOf(err) == KindDNS {
				t.Fatalf("%s did not resolve: %v", u, err)
			}
			if err == nil || resp.Status != 0 {
				t.Fatalf("%s fetched: status %d", u, resp.Status)
			}
			for _, ap := range dl.passed() {
				if CheckAddr(ap.Addr()) != nil {
					t.Errorf("the guard let %s through to connect", ap)
				}
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server got %d requests", n)
	}

	// Control: with the guard off the fake DNS answer is used.
	dl := &dialLog{allowed: map[netip.AddrPort]bool{target: true}}
	c := testClient(t, Config{AllowPrivate: true}, hooks{resolver: dns.resolver(), beforeConnect: dl.hook})
	resp, err := c.Fetch(t.Context(), Request{URL: "http://loopback.feeds.example:" + port + "/feed"})
	if err != nil || resp.Status != http.StatusOK || hits.Load() != 1 {
		t.Fatalf("with AllowPrivate: %v, status %d, hits %d", err, resp.Status, hits.Load())
	}
	_ = srv
}

// TestGuardOnRedirectToEachPrivateTarget: a public feed (the one exempt
// test server) redirects, with each redirect status, to loopback, IPv6
// loopback, a 10/8 address, the cloud metadata service, a public name that
// resolves to loopback, "localhost", 0.0.0.0 and an IPv4-mapped loopback.
// Every hop is refused by the guard in the dialer: the error names the hop,
// and nothing but the public server is ever connected to.
func TestGuardOnRedirectToEachPrivateTarget(t *testing.T) {
	_, hits, port := feedServer(t)
	dns := newFakeDNS(map[string][]string{"loopback.feeds.example": {"127.0.0.1"}})
	var to atomic.Value
	var status atomic.Int32
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to.Load().(string), int(status.Load()))
	}))
	t.Cleanup(outer.Close)
	outerAddr := netip.MustParseAddrPort(strings.TrimPrefix(outer.URL, "http://"))
	targets := []string{
		"http://127.0.0.1:" + port + "/admin",
		"http://[::1]:" + port + "/admin",
		"http://10.0.0.1/feed",
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"http://loopback.feeds.example:" + port + "/admin",
		"http://localhost:" + port + "/admin",
		"http://0.0.0.0:" + port + "/admin",
		"http://[::ffff:127.0.0.1]:" + port + "/admin",
	}
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, target := range targets {
			t.Run(http.StatusText(code)+" to "+target, func(t *testing.T) {
				to.Store(target)
				status.Store(int32(code))
				dl := &dialLog{allowed: map[netip.AddrPort]bool{outerAddr: true}}
				c := testClient(t, Config{}, hooks{resolver: dns.resolver(), beforeConnect: dl.hook,
					exempt: func(ap netip.AddrPort) bool { return ap == outerAddr }})
				resp, err := c.Fetch(t.Context(), Request{URL: outer.URL + "/feed"})
				if !errors.Is(err, ErrPrivateAddress) {
					t.Fatalf("%v (kind %q), want private_address", err, KindOf(err))
				}
				var fe *Error
				if !errors.As(err, &fe) || fe.URL != target {
					t.Errorf("error names %q, want the hop %q", fe.URL, target)
				}
				if len(resp.Redirects) != 1 || resp.Redirects[0].To != target || resp.PermanentURL != "" {
					t.Errorf("hops %+v, permanent %q", resp.Redirects, resp.PermanentURL)
				}
				for _, ap := range dl.passed() {
					if ap != outerAddr {
						t.Errorf("connected to %s", ap)
					}
				}
			})
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("a redirect reached the private server %d times", n)
	}
}

// TestHubClientGuard: the client for WebSub hubs (NewHTTPClient) refuses a
// hub whose name resolves to loopback and a public hub that redirects to
// the metadata service or to loopback.
func TestHubClientGuard(t *testing.T) {
	_, hits, port := feedServer(t)
	dns := newFakeDNS(map[string][]string{"hub.feeds.example": {"127.0.0.1"}})
	var to atomic.Value
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to.Load().(string), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(outer.Close)
	outerAddr := netip.MustParseAddrPort(strings.TrimPrefix(outer.URL, "http://"))
	for _, tc := range []struct{ name, hub, redirect string }{
		{"name resolving to loopback", "http://hub.feeds.example:" + port + "/hub", ""},
		{"redirect to metadata", outer.URL + "/hub", "http://169.254.169.254/latest/meta-data/"},
		{"redirect to loopback", outer.URL + "/hub", "http://127.0.0.1:" + port + "/hub"},
		{"redirect to a name resolving to loopback", outer.URL + "/hub", "http://hub.feeds.example:" + port + "/hub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.redirect != "" {
				to.Store(tc.redirect)
			}
			dl := &dialLog{allowed: map[netip.AddrPort]bool{outerAddr: true}}
			hc := newHTTPClient(Config{BaseURL: base}, hooks{resolver: dns.resolver(), beforeConnect: dl.hook,
				exempt: func(ap netip.AddrPort) bool { return ap == outerAddr }})
			defer hc.CloseIdleConnections()
			resp, err := hc.Post(tc.hub, "application/x-www-form-urlencoded", strings.NewReader("hub.mode=subscribe"))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("hub request succeeded: %d", resp.StatusCode)
			}
			if !errors.Is(err, ErrPrivateAddress) {
				t.Fatalf("%v, want private_address", err)
			}
			for _, ap := range dl.passed() {
				if ap != outerAddr {
					t.Errorf("connected to %s", ap)
				}
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback hub got %d requests", n)
	}
}
