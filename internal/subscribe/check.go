package subscribe

import (
	"net/http"
	"net/mail"
	"net/url"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
)

// FieldError is a problem with what the person typed, in plain words fit
// to show next to the field.
type FieldError struct {
	Msg string
	// noAnswer: the address did not answer (refused, reset, TLS, timeout),
	// so the same place over plain http may (FindTyped).
	noAnswer bool
}

func (e FieldError) Error() string { return e.Msg }

// CheckEmail returns the address to store, or the error to show (the
// signup and sign-in forms' rule).
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
	return store.NormalizeEmail(raw), ""
}

// NormalizeFeedURL accepts "example.com/blog" as https://example.com/blog and
// returns the error to show for anything that is not a web address.
func NormalizeFeedURL(raw string) (string, string) {
	if raw == "" {
		return "", "enter the address of a feed or a site"
	}
	s := raw
	low := strings.ToLower(s)
	switch {
	case strings.HasPrefix(low, "feed://"):
		s = "http://" + s[len("feed://"):]
	case strings.HasPrefix(low, "feed:"):
		s = s[len("feed:"):]
	case !strings.Contains(s, "://"):
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		strings.ContainsAny(s, " \t\r\n") {
		return "", "that is not a web address (it should look like https://example.com/feed)"
	}
	u.Fragment = ""
	return u.String(), ""
}

// FetchProblem says in plain words why a fetch failed; the wording is the
// fetcher's, shared with the poller's reasons.
func FetchProblem(err error) string { return fetcher.Describe(err).Plain }

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
