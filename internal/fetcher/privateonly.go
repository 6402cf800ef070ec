package fetcher

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"syscall"
)

// privateOnlyKey marks a request context (PrivateOnly).
type privateOnlyKey struct{}

// PrivateOnly returns ctx marked so that a request made with it by a
// NewHTTPClient client connects only to loopback or private addresses, and
// only when Config.AllowPrivate: the rule for a credential (an access
// token, a webhook URL that is itself the secret) sent over plain http,
// which anyone on the path could read. Such requests use connections of
// their own, never one opened for an unmarked request, and a refused
// address fails with KindPrivateAddress.
func PrivateOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, privateOnlyKey{}, true)
}

// IsPrivateOnly reports whether ctx is marked by PrivateOnly.
func IsPrivateOnly(ctx context.Context) bool {
	v, _ := ctx.Value(privateOnlyKey{}).(bool)
	return v
}

// privateOnlyControl is the dialer Control of PrivateOnly requests: it
// refuses every address without allowPrivate, and public ones (and a
// test's exempt address, which plays a public host) with it.
func (h hooks) privateOnlyControl(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return newError(KindPrivateAddress, "", fmt.Errorf("refusing to connect to unparsable address %q: %w", address, err))
		}
		public := CheckAddr(ap.Addr()) == nil || (h.exempt != nil && h.exempt(ap))
		switch {
		case !allowPrivate:
			return newError(KindPrivateAddress, "", fmt.Errorf("refusing to send a token over plain http to %s: "+
				"only to a private address, and only with FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1; use https", ap.Addr()))
		case public:
			return newError(KindPrivateAddress, "", fmt.Errorf("refusing to send a token over plain http to %s, a public address; use https", ap.Addr()))
		}
		if h.beforeConnect != nil {
			return h.beforeConnect(ap)
		}
		return nil
	}
}

// newPrivateOnlyTransport is the transport of PrivateOnly requests.
func newPrivateOnlyTransport(cfg Config, h hooks) *http.Transport {
	t := newTransport(cfg, h)
	t.DisableCompression = false
	d := newDialer(cfg, h)
	d.Control = h.privateOnlyControl(cfg.AllowPrivate)
	t.DialContext = d.DialContext
	return t
}
