package fetcher_test

import (
	"crypto/x509"
	"errors"
	"net"
	"testing"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/testkit/sites"
)

// TestDialSeam: Config.Dial and Config.RootCAs let a test point made-up
// names at loopback servers, and every failure still classifies as the
// real one would.
func TestDialSeam(t *testing.T) {
	s := sites.Start(t)
	s.Host("blog.test").File("/feed.xml", "application/rss+xml", []byte("<rss/>"))
	s.Host("expired.test").ExpiredCert().File("/feed.xml", "application/rss+xml", []byte("<rss/>"))
	s.Host("nohttp.test").HTTPOff()

	tests := []struct {
		name   string
		url    string
		guard  bool // leave the private-network guard on
		kind   fetcher.Kind
		status int
		as     any
	}{
		{name: "https through the test CA", url: "https://blog.test/feed.xml", status: 200},
		{name: "plain http", url: "http://blog.test/feed.xml", status: 200},
		{name: "unknown name", url: "https://gone.test/feed.xml", kind: fetcher.KindDNS, as: new(*net.DNSError)},
		{name: "expired certificate", url: "https://expired.test/feed.xml", kind: fetcher.KindTLS, as: new(x509.CertificateInvalidError)},
		{name: "port off", url: "http://nohttp.test/", kind: fetcher.KindConnection},
		{name: "guard judges the mapped address", url: "https://blog.test/feed.xml", guard: true, kind: fetcher.KindPrivateAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := s.FetcherConfig()
			cfg.AllowPrivate = !tt.guard
			c := fetcher.New(cfg)
			defer c.CloseIdleConnections()
			resp, err := c.Fetch(t.Context(), fetcher.Request{URL: tt.url})
			if fetcher.KindOf(err) != tt.kind {
				t.Fatalf("%s: err %v (kind %q), want kind %q", tt.url, err, fetcher.KindOf(err), tt.kind)
			}
			if tt.as != nil && !errors.As(err, tt.as) {
				t.Errorf("errors.As(%T) false for %v", tt.as, err)
			}
			if tt.status != 0 && resp.Status != tt.status {
				t.Errorf("status %d, want %d", resp.Status, tt.status)
			}
		})
	}
	if got := s.Count("expired.test"); got != 0 {
		t.Errorf("expired.test served %d requests over a certificate the client must refuse", got)
	}
	if got := s.Count("blog.test"); got != 2 {
		t.Errorf("blog.test log has %d requests, want 2 (the guarded fetch must not connect)", got)
	}
}
