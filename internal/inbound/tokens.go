package inbound

import (
	"net/url"
	"regexp"
	"strings"
)

// tokenFinder finds base+EXT@domain addresses of the bounce address.
type tokenFinder struct {
	re *regexp.Regexp // nil: no bounce address, no tokens
}

// newTokenFinder builds a finder for a bounce address such as
// "bounces@mail.example.org"; an empty or malformed one finds nothing.
func newTokenFinder(bounce string) tokenFinder {
	local, domain, ok := strings.Cut(strings.TrimSpace(bounce), "@")
	if !ok || local == "" || domain == "" || strings.ContainsAny(bounce, " <>") {
		return tokenFinder{}
	}
	if i := strings.IndexByte(local, '+'); i >= 0 {
		local = local[:i]
	}
	// EXT is RFC 5322 dot-atom text: ASCII only, so a token is always
	// valid UTF-8 and never spans brackets, quotes or separators.
	pat := `(?i)` + regexp.QuoteMeta(local) + `\+([A-Za-z0-9!#$%&'*+/=?^_{|}~.\x60-]+)@` + regexp.QuoteMeta(domain)
	return tokenFinder{re: regexp.MustCompile(pat)}
}

// find appends the tokens in s to out, skipping ones already there. A
// match must not continue a longer local part on the left or a longer
// domain name on the right.
func (f tokenFinder) find(s string, out []string) []string {
	if f.re == nil {
		return out
	}
	for _, loc := range f.re.FindAllStringSubmatchIndex(s, -1) {
		if loc[0] > 0 && isLocalChar(s[loc[0]-1]) {
			continue
		}
		end := loc[1]
		if end < len(s) && (isDomainChar(s[end]) ||
			s[end] == '.' && end+1 < len(s) && isDomainChar(s[end+1])) {
			continue
		}
		out = appendUnique(out, s[loc[2]:loc[3]])
	}
	return out
}

// isLocalChar reports whether c can be part of an address's local part.
func isLocalChar(c byte) bool {
	return isDomainChar(c) || strings.IndexByte("!#$%&'*+/=?^_`{|}~.", c) >= 0
}

// isDomainChar reports whether c can continue a domain name.
func isDomainChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// maxListed caps Tokens and OriginalMessageIDs, which keeps the
// deduplication below cheap on hostile input.
const maxListed = 32

// appendUnique appends v unless out holds it or is full.
func appendUnique(out []string, v string) []string {
	if len(out) >= maxListed {
		return out
	}
	for _, o := range out {
		if o == v {
			return out
		}
	}
	return append(out, v)
}

// outerTokenFields are the outer header fields that name the envelope or
// header recipients, most trusted first.
var outerTokenFields = []string{"Delivered-To", "X-Original-To", "Envelope-To", "X-Envelope-To", "To", "Cc"}

// collect returns the tokens in trust order: the envelope recipients, the
// outer recipient fields, then each original's Return-Path and
// List-Unsubscribe mailto addresses.
func (f tokenFinder) collect(recipients []string, outer header, originals []header) []string {
	if f.re == nil {
		return nil
	}
	var out []string
	for _, r := range recipients {
		out = f.find(r, out)
	}
	for _, name := range outerTokenFields {
		for _, v := range outer.all(name) {
			out = f.find(v, out)
		}
	}
	for _, o := range originals {
		for _, v := range o.all("Return-Path") {
			out = f.find(v, out)
		}
		for _, v := range o.all("List-Unsubscribe") {
			for _, addr := range mailtoAddresses(v) {
				out = f.find(addr, out)
			}
		}
	}
	return out
}

// mailtoAddresses returns the addresses of the <mailto:...> entries of a
// List-Unsubscribe value, percent-decoded, without their query.
func mailtoAddresses(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		item = strings.Trim(strings.TrimSpace(item), "<>")
		if len(item) < 7 || !strings.EqualFold(item[:7], "mailto:") {
			continue
		}
		addr, _, _ := strings.Cut(item[7:], "?")
		if d, err := url.PathUnescape(addr); err == nil {
			addr = d
		}
		out = append(out, addr)
	}
	return out
}

// messageIDs returns the Message-IDs of the originals without brackets,
// deduplicated.
func messageIDs(originals []header) []string {
	var out []string
	for _, o := range originals {
		for _, v := range o.all("Message-Id") {
			v = strings.TrimSpace(v)
			if i := strings.IndexByte(v, '<'); i >= 0 {
				if j := strings.IndexByte(v[i:], '>'); j > 0 {
					v = v[i+1 : i+j]
				}
			}
			if v = strings.Trim(v, "<> \t"); v != "" {
				out = appendUnique(out, clip(v, 250))
			}
		}
	}
	return out
}
