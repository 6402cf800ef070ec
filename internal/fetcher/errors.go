package fetcher

import (
	"compress/flate"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
)

// Kind is a short, stable name for the class of a fetch failure. The poller
// stores it in the human-readable reason of its schedule decision
// ("timeout: penalty 2 h (2nd consecutive error)") and in metrics labels.
type Kind string

// The kinds of failure Fetch reports. A non-2xx/304 status is not a failure
// of the fetch: it comes back as a Response with a nil error.
const (
	KindTimeout          Kind = "timeout"            // the Config.Timeout budget ran out (connect, headers or body)
	KindDNS              Kind = "dns"                // the host name did not resolve
	KindTLS              Kind = "tls"                // handshake or certificate failure
	KindConnection       Kind = "connection"         // refused, reset, closed early, truncated body, any other transport failure
	KindTooLarge         Kind = "too_large"          // the body exceeded Config.MaxBytes after decompression
	KindTooManyRedirects Kind = "too_many_redirects" // more than Config.MaxRedirects hops
	KindPrivateAddress   Kind = "private_address"    // the guard refused a loopback/private/link-local/... address
	KindBadURL           Kind = "bad_url"            // unparsable URL, not http(s), bad Location on a redirect
	KindBadEncoding      Kind = "bad_encoding"       // corrupt gzip/brotli stream or unknown Content-Encoding
	KindCanceled         Kind = "canceled"           // the caller's context ended: not the feed's fault, no penalty
	KindOther            Kind = "other"              // what KindOf says about an error that is not from this package
)

// sentinel is the type of the exported Err* values. Two sentinels are equal
// when their kinds are, so errors.Is works by value.
type sentinel Kind

func (s sentinel) Error() string { return "fetcher: " + string(s) }

// Sentinels for errors.Is. Every error returned by Fetch, BuildRequest,
// ReadResponse and CheckAddr is an *Error, and errors.Is(err, ErrX) is true
// exactly when its Kind is X. The underlying cause (*net.DNSError,
// context.DeadlineExceeded, x509.UnknownAuthorityError, ...) stays reachable
// through errors.As / errors.Is as well.
var (
	ErrTimeout          error = sentinel(KindTimeout)
	ErrDNS              error = sentinel(KindDNS)
	ErrTLS              error = sentinel(KindTLS)
	ErrConnection       error = sentinel(KindConnection)
	ErrTooLarge         error = sentinel(KindTooLarge)
	ErrTooManyRedirects error = sentinel(KindTooManyRedirects)
	ErrPrivateAddress   error = sentinel(KindPrivateAddress)
	ErrBadURL           error = sentinel(KindBadURL)
	ErrBadEncoding      error = sentinel(KindBadEncoding)
	ErrCanceled         error = sentinel(KindCanceled)
)

// Error is a classified fetch failure.
type Error struct {
	Kind Kind   // class of failure, see the Kind constants
	URL  string // the URL of the hop that failed ("" when not known)
	Err  error  // the cause; may be nil
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("fetch")
	if e.URL != "" {
		b.WriteString(" ")
		b.WriteString(e.URL)
	}
	b.WriteString(": ")
	b.WriteString(string(e.Kind))
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's Kind.
func (e *Error) Is(target error) bool {
	s, ok := target.(sentinel)
	return ok && Kind(s) == e.Kind
}

// KindOf returns the Kind of err: "" for nil, the Kind of the first *Error in
// its chain, KindCanceled or KindTimeout for bare context errors, else KindOther.
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	switch {
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	}
	return KindOther
}

func newError(kind Kind, url string, err error) *Error {
	return &Error{Kind: kind, URL: url, Err: err}
}

// errDeadline is the cause attached to the context that enforces
// Config.Timeout, so a timeout of ours can be told from the caller's own
// context ending.
var errDeadline = fmt.Errorf("fetch took longer than the configured timeout: %w", context.DeadlineExceeded)

// classify turns a transport or body-read error into an *Error. parent is
// the caller's context, fetchCtx the one carrying the Config.Timeout budget;
// either may be nil.
func classify(parent, fetchCtx context.Context, url string, err error) error {
	var fe *Error
	if errors.As(err, &fe) {
		// Already classified (the dial guard, a redirect limit, ...).
		if fe.URL == "" {
			fe.URL = url
		}
		return fe
	}
	if parent != nil && parent.Err() != nil {
		return newError(KindCanceled, url, fmt.Errorf("%w (%w)", context.Cause(parent), err))
	}
	if fetchCtx != nil && fetchCtx.Err() != nil && errors.Is(context.Cause(fetchCtx), errDeadline) {
		return newError(KindTimeout, url, fmt.Errorf("%w (%w)", errDeadline, err))
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return newError(KindDNS, url, err)
	}
	if isTLSError(err) {
		return newError(KindTLS, url, err)
	}
	if isDecodeError(err) {
		return newError(KindBadEncoding, url, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return newError(KindTimeout, url, err)
	}
	return newError(KindConnection, url, err)
}

func isTLSError(err error) bool {
	var (
		verr  *tls.CertificateVerificationError
		rherr tls.RecordHeaderError
		alert tls.AlertError
		uaerr x509.UnknownAuthorityError
		hnerr x509.HostnameError
		cierr x509.CertificateInvalidError
		echer *tls.ECHRejectionError
	)
	switch {
	case errors.As(err, &verr), errors.As(err, &rherr), errors.As(err, &alert),
		errors.As(err, &uaerr), errors.As(err, &hnerr), errors.As(err, &cierr),
		errors.As(err, &echer):
		return true
	}
	// Alerts received from the peer are an unexported type in crypto/tls;
	// their text is stable ("remote error: tls: handshake failure").
	// So is net/http's answer to an HTTP server on an https URL.
	msg := err.Error()
	return strings.Contains(msg, "tls: ") || strings.Contains(msg, "HTTP response to HTTPS client")
}

func isDecodeError(err error) bool {
	var ce flate.CorruptInputError
	switch {
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.As(err, &ce):
		return true
	}
	return strings.Contains(err.Error(), "brotli: ")
}
