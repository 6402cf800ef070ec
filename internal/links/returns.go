package links

import (
	"errors"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/token"
)

// The addresses on the bounce address (FEEDMAIL_BOUNCE_ADDRESS, e.g.
// bounces@mail.example.org) that one email carries: its envelope sender
// bounces+TOKEN@mail.example.org, where delivery reports about it come back
// (VERP), and its List-Unsubscribe mailto, a second token on the same
// address. Both tokens are signed and name the outbox row, so what comes
// back identifies the email, its subscription and its address without
// trusting anything else in it. They never expire: bounces and
// unsubscribes arrive long after the email.

// ErrNotOurs: a token from a bounces+TOKEN address that this install did
// not sign (forged, altered, another install's, or not a token at all).
var ErrNotOurs = errors.New("not an address of ours")

// WithBounce returns l with bounce address addr (empty: off).
func (l Links) WithBounce(addr string) Links {
	l.Bounce = strings.TrimSpace(addr)
	return l
}

// ReturnAddress is the envelope sender of outbox row id, or "" when no
// bounce address is set (the sender address is used then).
func (l Links) ReturnAddress(id int64) string { return l.bounceAddress(token.Return, id) }

// UnsubscribeMailto is the List-Unsubscribe mailto: URL of outbox row id,
// or "" when no bounce address is set.
func (l Links) UnsubscribeMailto(id int64) string {
	if a := l.bounceAddress(token.MailUnsubscribe, id); a != "" {
		return "mailto:" + a + "?subject=unsubscribe"
	}
	return ""
}

func (l Links) bounceAddress(purpose string, id int64) string {
	local, domain, ok := strings.Cut(l.Bounce, "@")
	if !ok || l.Tokens == nil {
		return ""
	}
	return local + "+" + l.Tokens.SignAddress(purpose, id, time.Time{}) + "@" + strings.ToLower(domain)
}

// ResolveReturn checks a token taken from a bounces+TOKEN address and
// returns the outbox row it names and its purpose (token.Return or
// token.MailUnsubscribe), or ErrNotOurs.
func (l Links) ResolveReturn(tok string, now time.Time) (id int64, purpose string, err error) {
	if l.Tokens == nil {
		return 0, "", ErrNotOurs
	}
	for _, p := range []string{token.Return, token.MailUnsubscribe} {
		if id, err := l.Tokens.VerifyAddress(tok, p, now); err == nil {
			return id, p, nil
		}
	}
	return 0, "", ErrNotOurs
}
