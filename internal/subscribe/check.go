package subscribe

import (
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/mailaddr"
	"github.com/feedmail/feedmail/internal/store"
)

// FieldError is a problem with what the person typed, in plain words fit
// to show next to the field.
type FieldError struct {
	Msg string
	// Detail is the precise reason when Msg is kept coarse for the public
	// (a fetch that failed: refused, timed out, no such name, a status),
	// for the operator's commands and the log; "" when Msg says it all.
	Detail string
	// noAnswer: the address did not answer (refused, reset, TLS, timeout),
	// so the same place over plain http may (FindTyped).
	noAnswer bool
}

func (e FieldError) Error() string { return e.Msg }

// CheckEmail returns the address to store, or the error to show (the
// signup and sign-in forms' rule). An address at an IP address rather
// than a domain name is refused (mailaddr.IPDomain).
func CheckEmail(raw string) (string, string) {
	if raw == "" {
		return "", "enter your email address"
	}
	a, err := mail.ParseAddress(raw)
	if err != nil || a.Name != "" || a.Address != raw || len(raw) > 254 {
		return "", "not a valid email address"
	}
	at := strings.LastIndexByte(raw, '@')
	domain := raw[at+1:]
	if at < 1 || !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") ||
		strings.ContainsAny(raw, " \t\r\n") {
		return "", "not a valid email address"
	}
	if mailaddr.IPDomain(raw) {
		return "", mailaddr.IPDomainMessage
	}
	return store.NormalizeEmail(raw), ""
}

// NormalizeFeedURL accepts "example.com/blog" as https://example.com/blog and
// returns the error to show for anything that is not a web address. A
// word typed without a scheme and without a dot ("notaurl") is not one,
// rather than a host name to look up and fail on; "localhost", an IP
// address, or any host given with http:// or https:// (a LAN's
// "http://intranet/feed") still are.
func NormalizeFeedURL(raw string) (string, string) {
	if raw == "" {
		return "", "enter the address of a feed or a site"
	}
	const notWeb = "that is not a web address (it should look like https://example.com/feed)"
	s, typedBare := raw, false
	low := strings.ToLower(s)
	switch {
	case strings.HasPrefix(low, "feed://"):
		s = "http://" + s[len("feed://"):]
	case strings.HasPrefix(low, "feed:"):
		s = s[len("feed:"):]
	case !strings.Contains(s, "://"):
		if typedOtherScheme(low) {
			return "", notWeb
		}
		s = "https://" + s
		typedBare = true
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !validHost(u) || u.User != nil ||
		strings.ContainsAny(s, " \t\r\n") || (typedBare && !dottedHost(u.Hostname())) {
		return "", notWeb
	}
	u.Fragment = ""
	return u.String(), ""
}

// dottedHost reports whether host, typed without a scheme, can be a web
// address: it has a dot, is an IP address, or is localhost.
func dottedHost(host string) bool {
	return strings.Contains(host, ".") || strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil
}

// schemeLike matches the start of an address that names a scheme
// ("htp:", "mailto:", "http:") or a host and port ("example.com:").
var schemeLike = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)

// typedOtherScheme reports whether low, an address typed without "://",
// starts with something other than a host: a scheme without its "//"
// ("htp:/bad", "http:/example.com", "mailto:…"), or "http//" missing its
// colon. Such an address is a typing mistake, not a host to look up; a
// host with a port ("localhost:8080/feed") is not one.
func typedOtherScheme(low string) bool {
	if strings.HasPrefix(low, "http/") || strings.HasPrefix(low, "https/") {
		return true
	}
	m := schemeLike.FindString(low)
	if m == "" {
		return false
	}
	rest := low[len(m):]
	port := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if port < 0 {
		port = len(rest)
	}
	return port == 0 || (port < len(rest) && !strings.ContainsRune("/?#", rune(rest[port])))
}

// hostName matches a host name: dot-separated labels of letters (any
// script), digits, '-' and '_' (seen in real feed hosts).
var hostName = regexp.MustCompile(`^[\p{L}\p{N}_]([\p{L}\p{N}_-]*[\p{L}\p{N}_])?(\.[\p{L}\p{N}_]([\p{L}\p{N}_-]*[\p{L}\p{N}_])?)*\.?$`)

// validHost reports whether u names a host feedmail could look up: a
// host name or IP address, and a port that is a number when there is a
// colon.
func validHost(u *url.URL) bool {
	h := u.Hostname()
	if h == "" || (strings.HasSuffix(u.Host, ":") && u.Port() == "") {
		return false
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return false
		}
	}
	return net.ParseIP(h) != nil || hostName.MatchString(h)
}

// FetchProblem says in plain words why a fetch failed; the wording is the
// fetcher's, shared with the poller's reasons.
func FetchProblem(err error) string { return fetcher.Describe(err).Plain }

// NotFetched is the coarse words for a fetch that failed, shown to anyone:
// the public forms, the API and the account's import must not tell a
// refused connection from a timeout, a missing name, a private address
// or an error status, or they become a scanner of other people's hosts
// (FieldError.Detail keeps the precise reason for the operator).
const NotFetched = "that address could not be fetched"

// Why returns fe's precise reason: Detail, else Msg.
func (e FieldError) Why() string {
	if e.Detail != "" {
		return e.Detail
	}
	return e.Msg
}

// StatusText is "200 OK", or "—" for no status (a failure before headers).
func StatusText(code int) string {
	if code == 0 {
		return "—"
	}
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}
