// Package mailaddr owns rules about the shape of an email address that
// are not about its syntax: which mailbox several spellings reach (the
// key of the per-mailbox limits), its destination domain, and addresses
// feedmail refuses to mail (a domain written as an IP address). It is
// pure: it must not look anything up (no DNS) or touch the database.
package mailaddr

import (
	"net"
	"strings"
)

// gmailDomains are the domains of Gmail's mailboxes: dots in the local
// part are ignored there, and googlemail.com is the same mailbox as
// gmail.com.
var gmailDomains = map[string]bool{"gmail.com": true, "googlemail.com": true}

// Mailbox returns the canonical mailbox behind addr, for counting mail
// sent to one person however the address is spelled: lower case, a
// "+tag" dropped from the local part (every domain: most providers
// deliver user+anything to user), and for Gmail the dots dropped and
// googlemail.com read as gmail.com. It is a key, never an address to
// send to. An address without "@" comes back lower-cased.
func Mailbox(addr string) string {
	addr = strings.ToLower(strings.TrimSpace(addr))
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return addr
	}
	local, domain := addr[:at], Domain(addr)
	if !strings.HasPrefix(local, `"`) {
		if plus := strings.IndexByte(local, '+'); plus > 0 {
			local = local[:plus]
		}
		if gmailDomains[domain] {
			if d := strings.ReplaceAll(local, ".", ""); d != "" {
				local = d
			}
			domain = "gmail.com"
		}
	}
	return local + "@" + domain
}

// Domain returns the destination domain of addr: the part after the last
// "@", lower case, without a trailing dot ("" when there is no "@").
func Domain(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(addr[at+1:])), ".")
}

// IPDomain reports whether addr's domain is an IP address rather than a
// name: a domain literal ("f@[127.0.0.1]", "f@[IPv6:::1]") or a bare IP
// ("f@10.0.0.1"). feedmail refuses such addresses: mail to them skips
// the receiving domain's own mail setup (MX, SPF, DMARC) and can be
// pointed at any host, including the server's own network.
func IPDomain(addr string) bool {
	d := Domain(addr)
	if strings.HasPrefix(d, "[") || strings.HasSuffix(d, "]") {
		return true
	}
	return net.ParseIP(d) != nil
}

// IPDomainMessage is the words for an address IPDomain refuses.
const IPDomainMessage = "feedmail does not send to an address at an IP address; use an address at a domain name"
