// Package mailbox reads an IMAP mailbox that receives mail for feedmail
// (bounces, complaints, unsubscribe requests): it hands every message, oldest
// first, to a Handler and moves each handled message to a done folder, so a
// bad message never blocks the ones behind it. It owns the IMAP side only:
// connecting over TLS, fetching at most a bounded number of bytes per
// message, moving, waiting for new mail and reconnecting. It must not decide
// what a message means nor touch the database; the Handler does that.
//
// Restart safety: a message is moved only after the Handler returned nil for
// it. A crash or a lost connection between the two leaves the message in the
// mailbox, and the next pass hands it over again; the Handler must therefore
// be idempotent by message, so that the effect happens once.
package mailbox

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Target is a parsed mailbox URL. Its String and LogValue never show the
// password.
type Target struct {
	ImplicitTLS bool   // imaps: TLS from the first byte; imap: STARTTLS, required
	Host        string // server name, checked against its certificate
	Addr        string // host:port to dial
	User        string
	Password    string
	Mailbox     string // the folder to read, INBOX when the URL names none
}

// String returns the URL without the password.
func (t Target) String() string {
	scheme := "imap"
	if t.ImplicitTLS {
		scheme = "imaps"
	}
	u := url.URL{Scheme: scheme, User: url.User(t.User), Host: t.Addr, Path: "/" + t.Mailbox}
	return u.String()
}

// ParseURL checks an imaps://user:pass@host[:port]/MAILBOX or imap://...
// URL (imap means STARTTLS, which the reader then requires) and returns its
// parts. Errors say what is wrong without ever quoting the password.
func ParseURL(raw string) (Target, error) {
	if strings.TrimSpace(raw) == "" {
		return Target{}, errors.New("mailbox URL is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL, and its cause may quote part of the
		// user information: name the cause only when there is none.
		var ue *url.Error
		if errors.As(err, &ue) && !strings.Contains(raw, "@") {
			return Target{}, fmt.Errorf("mailbox URL does not parse: %w", ue.Err)
		}
		return Target{}, errors.New("mailbox URL does not parse: check the scheme, host, port and %-escapes in user and password")
	}
	var t Target
	port := ""
	switch strings.ToLower(u.Scheme) {
	case "imaps":
		t.ImplicitTLS, port = true, "993"
	case "imap":
		port = "143"
	case "":
		return Target{}, errors.New("mailbox URL has no scheme: want imaps:// or imap://")
	default:
		return Target{}, fmt.Errorf("mailbox URL scheme %q: want imaps or imap (STARTTLS)", u.Scheme)
	}
	if u.Opaque != "" {
		return Target{}, errors.New("mailbox URL must be imaps://user:password@host/MAILBOX")
	}
	t.Host = u.Hostname()
	if t.Host == "" {
		return Target{}, errors.New("mailbox URL has no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("mailbox URL port %q is not a port number", p)
		}
		port = p
	}
	t.Addr = net.JoinHostPort(t.Host, port)
	if u.User == nil || u.User.Username() == "" {
		return Target{}, errors.New("mailbox URL has no user name")
	}
	t.User = u.User.Username()
	pass, ok := u.User.Password()
	if !ok || pass == "" {
		return Target{}, errors.New("mailbox URL has no password (user:password@host)")
	}
	t.Password = pass
	if u.RawQuery != "" || u.Fragment != "" {
		return Target{}, errors.New("mailbox URL must not have a query or fragment")
	}
	t.Mailbox = strings.Trim(u.Path, "/")
	if t.Mailbox == "" {
		t.Mailbox = "INBOX"
	}
	return t, nil
}
