package inbound

import (
	"regexp"
	"strings"

	"github.com/feedmail/feedmail/internal/bounce"
)

// blameSender corrects a bounce judged as the reader's address when its
// diagnostic names the returned email's sender (its envelope sender or
// From address, or their domain) and not the recipient's domain: "550
// <sender@our.domain> From: rejected", "our.domain does not exist" are
// about the sender address, and must never count against the reader.
func blameSender(rep *Report, originals []header) {
	if rep.Kind != KindBounce || rep.Party != bounce.PartyReader || rep.Diagnostic == "" ||
		strings.HasSuffix(rep.Status, ".1.1") || strings.HasSuffix(rep.Status, ".1.2") {
		return // the codes that name the destination mailbox or system
	}
	diag := strings.ToLower(rep.Diagnostic)
	rcptDomain := domainOf(strings.ToLower(cleanAddress(rep.Recipient)))
	if rcptDomain != "" && containsWord(diag, rcptDomain) {
		return
	}
	for _, o := range originals {
		for _, name := range []string{"Return-Path", "From", "Sender"} {
			addr := strings.ToLower(cleanAddress(decodeHeader(capped(o.get(name), 998))))
			if !strings.Contains(addr, "@") {
				continue
			}
			d := domainOf(addr)
			if strings.Contains(diag, addr) || rcptDomain != "" && d != "" && d != rcptDomain && containsWord(diag, d) {
				rep.Cause, rep.Party, rep.Severity = bounce.SenderRejected, bounce.PartySender, SeverityNone
				return
			}
		}
	}
}

// domainOf returns the domain of an address, "" without one.
func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[i+1:]
	}
	return ""
}

// wordEdgeRe is what may stand on either side of a domain named in text.
var wordEdgeRe = regexp.MustCompile(`[a-z0-9-]`)

// containsWord reports whether s holds d with no domain character (or a
// further label) on either side.
func containsWord(s, d string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], d)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(d)
		before := start == 0 || !wordEdgeRe.MatchString(s[start-1:start]) && s[start-1] != '.' && s[start-1] != '@'
		after := end == len(s) || !wordEdgeRe.MatchString(s[end:end+1]) &&
			!(s[end] == '.' && end+1 < len(s) && wordEdgeRe.MatchString(s[end+1:end+2]))
		if before && after {
			return true
		}
		i = start + 1
	}
}
