// Package esp reads the bounce and complaint notifications that email
// services send over HTTP (Amazon SES through SNS, Postmark, SendGrid,
// Mailgun) and checks each the way its service documents: SNS message
// signatures under a certificate from an SNS host, Postmark's HTTP basic
// authentication, SendGrid's signed Event Webhook (ECDSA P-256), Mailgun's
// HMAC-SHA256 of timestamp and token. What a notification says is turned
// into Notices in the terms of package bounce: the service's status code
// and words as the Failure, its own bounce type mapped onto the bounce
// vocabulary as the Failure's Hint (used only when code and words decide
// nothing), and the Message-IDs and return tokens that name the email.
//
// It decides nothing about subscribers and trusts no address a service
// names: the caller (outbox.Returns) judges each Notice and has its effect
// only on an email feedmail sent, found by a signed token or its
// Message-ID. It is pure: no network, no database, no clock of its own
// (callers pass the time); the one exception is the certificate an SNS
// signature needs, asked of the CertSource the caller injects. The rules
// and the tolerances are in docs/design.md ("Mail that comes back").
package esp

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/internal/bounce"
)

// Kind is what a Notice reports.
type Kind string

// Kinds.
const (
	KindBounce    Kind = "bounce"
	KindComplaint Kind = "complaint"
)

// Notice is one bounce or complaint about one recipient of one email.
type Notice struct {
	Kind Kind
	// Failure is what the service said about a bounce: status, reply
	// code, diagnostic, its own bounce type as Hint, Delayed for a
	// delivery still being retried.
	Failure bounce.Failure
	// Recipient is the address as the service names it: informational.
	Recipient string
	// MessageIDs are the Message-IDs of the email it is about, without
	// angle brackets; Tokens the return tokens (bounces+TOKEN@) found in
	// it. Neither is trusted without a match in the store.
	MessageIDs []string
	Tokens     []string
	// Event names the service's event in its own words, for logs
	// ("Bounce Permanent/General", "failed permanent bounce").
	Event string
}

// Batch is what one callback carries.
type Batch struct {
	Notices []Notice
	// Ignored counts the events that are neither a bounce nor a
	// complaint (deliveries, opens, clicks, ...).
	Ignored int
}

// Options says what the parsers need to know besides the body.
type Options struct {
	// BounceAddress is FEEDMAIL_BOUNCE_ADDRESS (bounces@mail.example.org):
	// addresses bounces+TOKEN@ on it in a notification give Tokens.
	// Empty: no tokens are looked for.
	BounceAddress string
}

// Errors. Each callback that is refused is refused with one of them
// (wrapped with the detail); the web handler maps them to a status.
var (
	// ErrUnauthenticated: no credentials or signature at all (401).
	ErrUnauthenticated = errors.New("no credentials")
	// ErrForged: the credentials, signature, key, topic or certificate
	// do not check out (403).
	ErrForged = errors.New("not authentic")
	// ErrStale: a signed timestamp outside the tolerance (403).
	ErrStale = errors.New("timestamp outside the tolerance")
	// ErrMalformed: the body is not what the service sends (400).
	ErrMalformed = errors.New("malformed notification")
)

// Limits on what one callback may carry.
const (
	// MaxEvents bounds the events read from one callback (SendGrid
	// batches; the others send one).
	MaxEvents = 1000
	// maxIDs bounds the Message-IDs and tokens taken from one event.
	maxIDs = 8
	// maxText bounds a diagnostic kept from a service.
	maxText = 1000
)

// replyCodeRe finds a basic SMTP reply code at the start of a diagnostic
// or after "smtp;" ("smtp; 550 5.1.1 ...", "550-5.7.1 ...").
var replyCodeRe = regexp.MustCompile(`(?:^|;|\s)\s*([245][0-9][0-9])(?:[ \-]|$)`)

// statusRe finds an enhanced status code (RFC 3463).
var statusRe = regexp.MustCompile(`\b([245]\.[0-9]{1,3}\.[0-9]{1,3})\b`)

// replyCode returns the first basic reply code in text, 0 if none.
func replyCode(text string) int {
	if m := replyCodeRe.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// statusIn returns status when it is an enhanced status code, else the
// first one in text, else "".
func statusIn(status, text string) string {
	if m := statusRe.FindString(strings.TrimSpace(status)); m != "" {
		return m
	}
	return statusRe.FindString(text)
}

// oneLine folds whitespace runs (line breaks included) into single spaces
// and cuts s to maxText bytes on a rune boundary.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxText {
		return s
	}
	n := maxText
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// messageID returns v without angle brackets and space, "" when that
// leaves nothing usable (empty, too long, or spaces inside).
func messageID(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, '<'); i >= 0 {
		if j := strings.IndexByte(v[i:], '>'); j > 0 {
			v = v[i+1 : i+j]
		}
	}
	v = strings.Trim(v, "<> \t")
	if v == "" || len(v) > 250 || strings.ContainsAny(v, " \t\r\n") {
		return ""
	}
	return v
}

// addID appends the Message-ID in v to ids when usable and new.
func addID(ids []string, v string) []string {
	id := messageID(v)
	if id == "" || len(ids) >= maxIDs {
		return ids
	}
	for _, x := range ids {
		if x == id {
			return ids
		}
	}
	return append(ids, id)
}

// tokens appends the TOKENs of every bounces+TOKEN@domain address of the
// bounce address found in the texts (local part and domain compared
// without case; the token keeps its case).
func (o Options) tokens(out []string, texts ...string) []string {
	local, domain, ok := strings.Cut(strings.TrimSpace(o.BounceAddress), "@")
	if !ok || local == "" || domain == "" {
		return out
	}
	prefix := strings.ToLower(local) + "+"
	suffix := "@" + strings.ToLower(domain)
	for _, t := range texts {
		low := strings.ToLower(t)
		for from := 0; len(out) < maxIDs; {
			i := strings.Index(low[from:], prefix)
			if i < 0 {
				break
			}
			start := from + i + len(prefix)
			from = start
			if at := from - len(prefix) - 1; at >= 0 && isLocalChar(low[at]) {
				continue // a longer local part that ends like ours
			}
			end := start
			for end < len(low) && isLocalChar(low[end]) && low[end] != '@' {
				end++
			}
			if end == start || !strings.HasPrefix(low[end:], suffix) {
				continue
			}
			if longerDomain(low[end+len(suffix):]) {
				continue // a subdomain of ours, or a longer name
			}
			tok := t[start:end]
			dup := false
			for _, x := range out {
				dup = dup || x == tok
			}
			if !dup {
				out = append(out, tok)
			}
		}
	}
	return out
}

func isLocalChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-/=?^_`{|}~.", c) >= 0
}

// longerDomain reports whether rest, what follows a matched domain, goes
// on with more of a domain name ("-x", "x", ".x"), so the match was only
// a prefix of another domain; a full stop ending a sentence does not.
func longerDomain(rest string) bool {
	if rest == "" {
		return false
	}
	if rest[0] == '.' {
		rest = rest[1:]
		return rest != "" && isDomainChar(rest[0])
	}
	return isDomainChar(rest[0])
}

func isDomainChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}
