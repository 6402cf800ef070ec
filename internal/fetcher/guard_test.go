package fetcher

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		ip      string
		refused bool
	}{
		{"127.0.0.1", true},
		{"127.1.2.3", true},
		{"::1", true},
		{"10.0.0.1", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.168.1.1", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"169.254.169.254", true},
		{"169.254.0.1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"0.0.0.0", true},
		{"::", true},
		{"100.64.0.1", true},
		{"100.127.255.254", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"::ffff:10.1.2.3", true},
		{"64:ff9b::7f00:1", true},   // NAT64 spelling of 127.0.0.1
		{"2002:7f00:1::1", true},    // 6to4 spelling of 127.0.0.1
		{"2002:a9fe:a9fe::1", true}, // 6to4 spelling of 169.254.169.254
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"255.255.255.255", true},
		{"192.0.2.10", true},
		{"::127.0.0.1", true},
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"172.32.0.1", false},
		{"100.128.0.1", false},
		{"2001:4860:4860::8888", false},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::808:808", false},
		{"2002:808:808::1", false},
	}
	for _, tt := range tests {
		err := CheckAddr(netip.MustParseAddr(tt.ip))
		if (err != nil) != tt.refused {
			t.Errorf("CheckAddr(%s) = %v, want refused=%v", tt.ip, err, tt.refused)
		}
		if err != nil && (!errors.Is(err, ErrPrivateAddress) || KindOf(err) != KindPrivateAddress) {
			t.Errorf("CheckAddr(%s) = %v: not an ErrPrivateAddress", tt.ip, err)
		}
	}
	if CheckAddr(netip.Addr{}) == nil {
		t.Error("the zero Addr passed")
	}
}

// noConnect fails the test if the dialer gets as far as connecting.
func noConnect(t *testing.T) func(netip.AddrPort) error {
	return func(ap netip.AddrPort) error {
		t.Errorf("the guard let %s through", ap)
		return fmt.Errorf("test: refusing to connect to %s", ap)
	}
}

func TestGuardRefuses(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	c := testClient(t, Config{}, hooks{beforeConnect: noConnect(t)})
	for _, u := range []string{
		srv.URL,
		"http://localhost:" + port + "/feed",
		"http://[::1]:" + port + "/feed",
		"http://[::ffff:127.0.0.1]:" + port + "/feed",
		"http://0.0.0.0:" + port + "/feed",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fe80::1%25lo]:" + port + "/",
		"http://10.0.0.1/feed",
		"http://2130706433:" + port + "/", // 127.0.0.1 as one decimal number
	} {
		t.Run(u, func(t *testing.T) {
			resp, err := c.Fetch(t.Context(), Request{URL: u})
			if KindOf(err) != KindPrivateAddress || !errors.Is(err, ErrPrivateAddress) {
				// A name the resolver cannot resolve is acceptable for the
				// decimal form only: what matters is that nothing connected.
				if !(strings.Contains(u, "2130706433") && KindOf(err) == KindDNS) {
					t.Fatalf("%v (kind %q), want private_address", err, KindOf(err))
				}
			}
			if resp == nil || resp.Status != 0 {
				t.Errorf("response %+v", resp)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server got %d requests", n)
	}
}

func TestGuardOnRedirect(t *testing.T) {
	var innerHits atomic.Int32
	inner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { innerHits.Add(1) }))
	defer inner.Close()
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner.URL+"/admin", http.StatusFound)
	}))
	defer outer.Close()
	// The outer server plays a public host: only its exact address is exempt.
	outerAddr := netip.MustParseAddrPort(strings.TrimPrefix(outer.URL, "http://"))
	c := testClient(t, Config{}, hooks{exempt: func(ap netip.AddrPort) bool { return ap == outerAddr }})
	resp, err := c.Fetch(t.Context(), Request{URL: outer.URL + "/feed"})
	if !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("%v, want private_address", err)
	}
	if len(resp.Redirects) != 1 || resp.Redirects[0].To != inner.URL+"/admin" {
		t.Errorf("hops %+v", resp.Redirects)
	}
	var fe *Error
	if !errors.As(err, &fe) || fe.URL != inner.URL+"/admin" {
		t.Errorf("error names %v", err)
	}
	if innerHits.Load() != 0 {
		t.Fatal("the redirect reached the loopback server")
	}
}

func TestNewHTTPClient(t *testing.T) {
	var gotUA, gotRef, gotCookie atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hub":
			http.SetCookie(w, &http.Cookie{Name: "c", Value: "v"})
			http.Redirect(w, r, "/hub2", http.StatusTemporaryRedirect)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			gotUA.Store(r.Header.Get("User-Agent"))
			gotRef.Store(r.Header.Get("Referer"))
			gotCookie.Store(r.Header.Get("Cookie"))
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()

	guarded := NewHTTPClient(Config{})
	if _, err := guarded.Post(srv.URL+"/hub", "application/x-www-form-urlencoded", strings.NewReader("hub.mode=subscribe")); !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("guarded hub client: %v, want private_address", err)
	}

	hc := NewHTTPClient(Config{AllowPrivate: true, BaseURL: base})
	defer hc.CloseIdleConnections()
	resp, err := hc.Post(srv.URL+"/hub", "application/x-www-form-urlencoded", strings.NewReader("hub.mode=subscribe"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || gotUA.Load() != UserAgent(base, 0) || gotRef.Load() != "" || gotCookie.Load() != "" {
		t.Fatalf("%d UA %q Referer %q Cookie %q", resp.StatusCode, gotUA.Load(), gotRef.Load(), gotCookie.Load())
	}
	if _, err := hc.Get(srv.URL + "/loop"); !errors.Is(err, ErrTooManyRedirects) {
		t.Fatalf("loop: %v", err)
	}
}
