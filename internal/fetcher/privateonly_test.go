package fetcher

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// TestPrivateOnly: a request marked PrivateOnly reaches a loopback server
// only when private networks are allowed, never a server playing a public
// host, and never over a connection an unmarked request opened to it.
func TestPrivateOnly(t *testing.T) {
	srv, hits, _ := feedServer(t)
	srvAddr := netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "http://"))
	get := func(hc *http.Client, ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/feed", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	private := PrivateOnly(context.Background())
	for _, tc := range []struct {
		name         string
		allowPrivate bool
		public       bool // the server plays a public host
		ok           bool
	}{
		{"private address, allowed", true, false, true},
		{"private address, not allowed", false, false, false},
		{"public address", true, true, false},
		{"public address, private not allowed", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hooks{}
			if tc.public {
				h.exempt = func(ap netip.AddrPort) bool { return ap == srvAddr }
			}
			hc := newHTTPClient(Config{BaseURL: base, AllowPrivate: tc.allowPrivate}, h)
			defer hc.CloseIdleConnections()
			if tc.public || tc.allowPrivate { // an unmarked request goes through and leaves a connection
				if err := get(hc, context.Background()); err != nil {
					t.Fatalf("unmarked request: %v", err)
				}
			}
			before := hits.Load()
			err := get(hc, private)
			if tc.ok != (err == nil) {
				t.Fatalf("marked request: %v, want ok %v", err, tc.ok)
			}
			if !tc.ok {
				if !errors.Is(err, ErrPrivateAddress) || !strings.Contains(err.Error(), "plain http") {
					t.Errorf("refusal %v: want private_address saying plain http", err)
				}
				if n := hits.Load() - before; n != 0 {
					t.Errorf("the refused request reached the server %d times", n)
				}
			}
		})
	}
}
