package fetcher

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults used when a Config field is zero (docs/design.md, "Limits").
const (
	DefaultTimeout         = 30 * time.Second
	DefaultMaxBytes        = 10 << 20
	DefaultMaxRedirects    = 5
	DefaultMaxConnsPerHost = 2
)

// Accept is the Accept header of every feed request: the feed types first,
// generic XML and JSON below them, anything else last (some servers answer
// 406 to an Accept without */*).
const Accept = "application/rss+xml, application/atom+xml, application/feed+json, " +
	"application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, */*;q=0.1"

// AcceptEncoding is the Accept-Encoding of every feed request. Fetch
// decompresses itself, so the size cap applies to the decompressed body.
const AcceptEncoding = "gzip, br"

// Config is the fetcher's configuration. The zero value of each field means
// its default; Config is passed by value and never read from globals.
type Config struct {
	// BaseURL is the public URL of this feedmail install; the User-Agent
	// points at BaseURL+"/bot".
	BaseURL string
	// AllowPrivate turns off the private-network guard
	// (FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1).
	AllowPrivate bool
	// Timeout bounds a whole fetch: every hop, connect, headers and body.
	// Default 30 s.
	Timeout time.Duration
	// MaxBytes caps the body after decompression. Default 10 MB.
	MaxBytes int64
	// MaxRedirects is how many redirects are followed. 0 means the default
	// (5); a negative value means none (the first 3xx is an error).
	MaxRedirects int
	// MaxConnsPerHost limits the connections of the shared Transport to one
	// host (dialing, active and idle). Default 2.
	MaxConnsPerHost int

	// Dial and RootCAs are a seam for other packages' tests; nil in
	// production. Dial maps the "host:port" a request is about to connect
	// to onto another address ("127.0.0.1:41234") before the guarded dialer
	// connects to it, so the guard judges the mapped address (tests set
	// AllowPrivate). It should fail with a *net.DNSError for a name it does
	// not know, so the failure is a KindDNS like a real one.
	Dial func(ctx context.Context, network, hostport string) (string, error)
	// RootCAs replaces the system roots when verifying certificates (a
	// test CA).
	RootCAs *x509.CertPool
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	switch {
	case c.MaxRedirects == 0:
		c.MaxRedirects = DefaultMaxRedirects
	case c.MaxRedirects < 0:
		c.MaxRedirects = 0
	}
	if c.MaxConnsPerHost <= 0 {
		c.MaxConnsPerHost = DefaultMaxConnsPerHost
	}
	return c
}

// UserAgent returns "feedmail/1 (+BASE_URL/bot; N subscribers)". The plural
// is kept for N = 1 so that log analysers that count feed readers by the
// "N subscribers" pattern always match; a negative N is sent as 0.
func UserAgent(baseURL string, subscribers int) string {
	if subscribers < 0 {
		subscribers = 0
	}
	return "feedmail/1 (+" + strings.TrimRight(baseURL, "/") + "/bot; " +
		strconv.Itoa(subscribers) + " subscribers)"
}

// Request is what the poller knows about a feed before fetching it.
type Request struct {
	URL string
	// ValidatorURL is the URL the stored validators came from (validators
	// are kept per final URL); they are sent only on the hop whose URL equals
	// it. Empty means URL.
	ValidatorURL string
	// ETag and LastModified are sent back byte for byte as If-None-Match and
	// If-Modified-Since.
	ETag, LastModified string
	// Subscribers is the number shown in the User-Agent.
	Subscribers int
	// Accept replaces the feed types of the Accept header (a web page, a
	// robots.txt); empty sends Accept.
	Accept string
}

// BuildRequest makes the GET request of one hop to r.URL: the headers
// publishers see, and the validators when r.URL is r.ValidatorURL (or
// ValidatorURL is empty). It touches no network. The URL must be absolute
// http or https; anything else is an ErrBadURL. The URL is sent as given:
// no query string is added, a fragment is dropped (it never goes on the wire).
func BuildRequest(ctx context.Context, cfg Config, r Request) (*http.Request, error) {
	raw := strings.TrimSpace(r.URL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, newError(KindBadURL, r.URL, err)
	}
	u := req.URL
	if err := checkFeedURL(u); err != nil {
		return nil, newError(KindBadURL, r.URL, err)
	}
	u.Fragment, u.RawFragment = "", ""
	h := req.Header
	h.Set("User-Agent", UserAgent(cfg.BaseURL, r.Subscribers))
	h.Set("Accept", Accept)
	if r.Accept != "" {
		h.Set("Accept", r.Accept)
	}
	h.Set("Accept-Encoding", AcceptEncoding)
	if u.User != nil {
		// Credentials in the URL go as Basic auth, as net/http's Client
		// sends them (the fetcher uses the Transport, which does not).
		pw, _ := u.User.Password()
		req.SetBasicAuth(u.User.Username(), pw)
	}
	vurl := r.ValidatorURL
	if vurl == "" {
		vurl = r.URL
	}
	if vurl == r.URL || sameURL(u, vurl) {
		// Set by assigning the slice: the value must go out byte for byte,
		// never re-formatted (a Last-Modified we did not receive verbatim is
		// "a date we made up").
		if r.ETag != "" {
			h["If-None-Match"] = []string{r.ETag}
		}
		if r.LastModified != "" {
			h["If-Modified-Since"] = []string{r.LastModified}
		}
	}
	return req, nil
}

type badURLError string

func (e badURLError) Error() string { return string(e) }

func checkFeedURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return badURLError("scheme " + strconv.Quote(u.Scheme) + " is not http or https")
	}
	if u.Host == "" || u.Hostname() == "" {
		return badURLError("no host")
	}
	return nil
}

// sameURL reports whether u is the URL written raw, ignoring fragments and
// the spelling differences url.Parse normalises (scheme and host case).
func sameURL(u *url.URL, raw string) bool {
	v, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return false
	}
	v.Fragment, v.RawFragment = "", ""
	v.Host = strings.ToLower(v.Host)
	w := *u
	w.Host = strings.ToLower(w.Host)
	return w.String() == v.String()
}
