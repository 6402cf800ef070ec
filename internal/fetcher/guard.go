package fetcher

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// refused lists the address ranges the guard refuses, with the reason shown
// in the error. IsLoopback, IsPrivate, IsLinkLocalUnicast, IsUnspecified and
// IsMulticast of netip cover most of the rest; these are the ranges netip
// has no predicate for. Documentation and benchmarking ranges are refused
// too: nothing legitimate is served from them, and a feed that resolves
// there is a misconfiguration or a probe.
var refused = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network (0.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT, 100.64.0.0/10)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation (192.0.2.0/24)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation (198.51.100.0/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation (203.0.113.0/24)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4, includes broadcast)"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible IPv6 (::/96)"},
	{netip.MustParsePrefix("100::/64"), "discard-only (100::/64)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (2001:db8::/32)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (fec0::/10)"},
}

// Prefixes that embed an IPv4 address in the IPv6 one; the embedded address
// is checked too, so NAT64 or 6to4 spellings of 127.0.0.1 are refused.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64loc  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// CheckAddr returns an ErrPrivateAddress error when ip is not a public
// unicast address: loopback (127/8, ::1), private (10/8, 172.16/12,
// 192.168/16, fc00::/7), link-local (169.254/16 with the cloud metadata
// address 169.254.169.254, fe80::/10), unspecified, multicast, CGNAT
// 100.64/10, and the reserved ranges listed in the source; IPv4-mapped
// (::ffff:a.b.c.d), NAT64 and 6to4 forms are checked as the IPv4 address
// they carry. The dialer of a Client (and of NewHTTPClient) calls it on
// every address it is about to connect to, unless Config.AllowPrivate.
func CheckAddr(ip netip.Addr) error {
	if why := refusal(ip); why != "" {
		return newError(KindPrivateAddress, "", fmt.Errorf("refusing to connect to %s: %s address", ip, why))
	}
	return nil
}

func refusal(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid"
	}
	ip = ip.WithZone("").Unmap()
	switch {
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		if ip == netip.AddrFrom4([4]byte{169, 254, 169, 254}) {
			return "link-local (cloud metadata)"
		}
		return "link-local"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, r := range refused {
		if r.prefix.Contains(ip) {
			return r.why
		}
	}
	if ip.Is6() {
		b := ip.As16()
		var v4 netip.Addr
		switch {
		case nat64.Contains(ip), nat64loc.Contains(ip):
			v4 = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		case sixToFour.Contains(ip):
			v4 = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		}
		if v4.IsValid() {
			if why := refusal(v4); why != "" {
				return why + " (embedded in " + ip.String() + ")"
			}
		}
	}
	return ""
}

// hooks are test seams; the zero value is production behaviour.
type hooks struct {
	// exempt lets one address through the guard (a test server on
	// 127.0.0.1 playing a public host).
	exempt func(netip.AddrPort) bool
	// beforeConnect runs after the guard passed an address and before the
	// socket connects; a test returns an error to make sure no packet goes
	// to an address it did not expect.
	beforeConnect func(netip.AddrPort) error
	// resolver replaces the system resolver.
	resolver *net.Resolver
	// tlsConfig replaces the TLS client configuration (a test CA).
	tlsConfig *tls.Config
}

// control is the net.Dialer.Control of the guarded dialer. It runs after
// the socket is created and before connect(2), with the numeric address
// being connected to, so no name resolution trick, redirect or Happy
// Eyeballs fallback can get round it.
func (h hooks) control(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return newError(KindPrivateAddress, "", fmt.Errorf("refusing to connect to unparsable address %q: %w", address, err))
		}
		if !allowPrivate && (h.exempt == nil || !h.exempt(ap)) {
			if err := CheckAddr(ap.Addr()); err != nil {
				return err
			}
		}
		if h.beforeConnect != nil {
			return h.beforeConnect(ap)
		}
		return nil
	}
}

func newDialer(cfg Config, h hooks) *net.Dialer {
	return &net.Dialer{
		Timeout:   10 * time.Second, // per attempt; the fetch context bounds the whole
		KeepAlive: 30 * time.Second,
		Resolver:  h.resolver,
		Control:   h.control(cfg.AllowPrivate),
	}
}

// dialContext returns d.DialContext, behind Config.Dial's mapping of the
// address when a test set one. A mapping failure is returned as it is (a
// *net.DNSError classifies as KindDNS).
func dialContext(cfg Config, d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if cfg.Dial == nil {
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		mapped, err := cfg.Dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, mapped)
	}
}

// newTransport builds the one Transport a Client shares between all its
// fetches. Choices: no proxy from the environment (a proxy would make the
// guard check the proxy instead of the feed host, and environment variables
// are global configuration); HTTP/2 when the server offers it; compression
// off, because ReadResponse decompresses and caps the size itself; idle
// connections kept per host up to MaxConnsPerHost so a pass over many feeds
// of one host reuses them.
func newTransport(cfg Config, h hooks) *http.Transport {
	tlsConfig := h.tlsConfig
	if tlsConfig == nil {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cfg.RootCAs}
	}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            dialContext(cfg, newDialer(cfg, h)),
		TLSClientConfig:        tlsConfig,
		ForceAttemptHTTP2:      true,
		DisableCompression:     true,
		MaxConnsPerHost:        cfg.MaxConnsPerHost,
		MaxIdleConnsPerHost:    cfg.MaxConnsPerHost,
		MaxIdleConns:           512,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
}

// NewHTTPClient returns a plain *http.Client behind the same guarded dialer
// as a Client, for requests that are not feed fetches (WebSub hub
// subscriptions). It has no cookie jar, follows at most cfg.MaxRedirects
// redirects without a Referer, gives up after cfg.Timeout, and sets the
// feedmail User-Agent (with 0 subscribers) on requests that have none.
// It leaves compression to net/http, since hub answers are small.
func NewHTTPClient(cfg Config) *http.Client {
	return newHTTPClient(cfg, hooks{})
}

func newHTTPClient(cfg Config, h hooks) *http.Client {
	cfg = cfg.withDefaults()
	t := newTransport(cfg, h)
	t.DisableCompression = false
	return &http.Client{
		Transport: &uaTransport{base: t, privateOnly: newPrivateOnlyTransport(cfg, h), ua: UserAgent(cfg.BaseURL, 0)},
		Timeout:   cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > cfg.MaxRedirects {
				return newError(KindTooManyRedirects, req.URL.String(),
					fmt.Errorf("stopped after %d redirects", cfg.MaxRedirects))
			}
			req.Header.Del("Referer")
			return nil
		},
	}
}

// uaTransport sets the User-Agent and sends PrivateOnly requests through
// a transport (and connections) of their own.
type uaTransport struct {
	base, privateOnly http.RoundTripper
	ua                string
}

func (t *uaTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("User-Agent") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("User-Agent", t.ua)
	}
	if IsPrivateOnly(req.Context()) {
		return t.privateOnly.RoundTrip(req)
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transports.
func (t *uaTransport) CloseIdleConnections() {
	for _, b := range []http.RoundTripper{t.base, t.privateOnly} {
		if c, ok := b.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}
