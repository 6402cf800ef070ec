package subscribe

import (
	"net/mail"
	"strings"

	"github.com/feedmail/feedmail/internal/mailaddr"
	"github.com/feedmail/feedmail/internal/store"
)

// Kinds of problem a readers' import reports (ReaderProblem.Kind).
const (
	ProblemBadAddress      = "invalid address"        // not an address feedmail sends to
	ProblemDeadAddress     = "dead address"           // a domain that takes no mail, or an account whose mail bounces
	ProblemDuplicateReader = "duplicate reader"       // the input named this mailbox before
	ProblemBadList         = "malformed list"         // the list could not be read, or named no feed
	ProblemBadURL          = "malformed feed URL"     // an entry that is not a web address
	ProblemDuplicateSub    = "duplicate subscription" // the list named the feed before, or the person has it
	ProblemFeedStopped     = "feed stopped"           // feedmail no longer polls that feed
)

// deadTLDs are the top-level names that never take mail (RFC 2606, RFC
// 6761, RFC 6762), and deadDomains the second-level names reserved for
// examples.
var (
	deadTLDs    = map[string]bool{"invalid": true, "test": true, "example": true, "localhost": true, "local": true}
	deadDomains = map[string]bool{"example.com": true, "example.net": true, "example.org": true}
)

// CheckReaderAddress returns the form a reader's address is stored in
// (store.NormalizeEmail), or the kind of problem with it and why: a bare
// address (no name, no brackets) whose domain is a host name with a dot
// (not an IP address), within the lengths mail takes; a domain reserved
// for tests and examples is a dead address.
func CheckReaderAddress(addr string) (norm, kind, reason string) {
	addr = strings.TrimSpace(addr)
	bad := func(why string) (string, string, string) { return "", ProblemBadAddress, why }
	if addr == "" {
		return bad("no address")
	}
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Name != "" || a.Address != addr {
		return bad("not an email address")
	}
	at := strings.LastIndexByte(addr, '@')
	local, domain := addr[:at], strings.ToLower(strings.TrimSuffix(addr[at+1:], "."))
	switch {
	case len(addr) > 254 || len(local) > 64:
		return bad("too long for an email address")
	case mailaddr.IPDomain(addr):
		return bad(mailaddr.IPDomainMessage)
	}
	if why := hostNameProblem(domain); why != "" {
		return bad(why)
	}
	labels := strings.Split(domain, ".")
	if deadTLDs[labels[len(labels)-1]] || deadDomains[strings.Join(labels[max(len(labels)-2, 0):], ".")] {
		return "", ProblemDeadAddress, "the domain " + domain + " is reserved and takes no mail"
	}
	return store.NormalizeEmail(addr), "", ""
}

// hostNameProblem says what keeps domain from being a host name mail can
// go to ("" when nothing): at least two labels of letters, digits and
// inner hyphens, each 1 to 63 long, the last not all digits.
func hostNameProblem(domain string) string {
	if len(domain) > 253 {
		return "the domain is too long"
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return "the domain " + domain + " has no dot: mail cannot reach it"
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || strings.IndexFunc(l, notHostRune) >= 0 {
			return "the domain " + domain + " is not a host name"
		}
	}
	if strings.IndexFunc(labels[len(labels)-1], func(r rune) bool { return r < '0' || r > '9' }) < 0 {
		return "the domain " + domain + " is not a host name"
	}
	return ""
}

// notHostRune reports whether r cannot be in a host name's label (an
// internationalized name comes as its ASCII form, xn--).
func notHostRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
}
