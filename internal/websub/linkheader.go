package websub

import (
	"net/http"
	"strings"
)

// ParseLinkHeaders returns the hub URLs (in order, without duplicates) and
// the first self URL advertised in the Link header fields of h (RFC 8288):
// several fields, several comma-separated links per field, quoted or bare
// rel values holding several space-separated relation types, compared
// case-insensitively. Only a link's first rel parameter counts (RFC 8288
// §3.3). URLs are returned as written; Discover and DiscoverFrom resolve them.
func ParseLinkHeaders(h http.Header) (hub []string, self string) {
	for _, field := range h.Values("Link") {
		for _, l := range parseLinkField(field) {
			if l.rels["hub"] {
				hub = appendUnique(hub, l.uri)
			}
			if l.rels["self"] && self == "" {
				self = l.uri
			}
		}
	}
	return hub, self
}

type link struct {
	uri  string
	rels map[string]bool
}

// parseLinkField parses one Link field value. It is lenient: a malformed link
// is skipped up to the next comma outside a quoted string and <…>.
func parseLinkField(s string) []link {
	var out []link
	i := 0
	for i < len(s) {
		// Skip separators before a link.
		for i < len(s) && (s[i] == ',' || s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			break
		}
		if s[i] != '<' {
			i = skipToComma(s, i)
			continue
		}
		end := strings.IndexByte(s[i:], '>')
		if end < 0 {
			break
		}
		l := link{uri: strings.TrimSpace(s[i+1 : i+end])}
		i += end + 1
		relSeen := false
		// Parameters: ; name [= value]
		for {
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			if i >= len(s) || s[i] != ';' {
				break
			}
			i++
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			start := i
			for i < len(s) && !strings.ContainsRune("=;, \t", rune(s[i])) {
				i++
			}
			name := strings.ToLower(s[start:i])
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			var value string
			if i < len(s) && s[i] == '=' {
				i++
				for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
					i++
				}
				if i < len(s) && s[i] == '"' {
					value, i = quotedString(s, i)
				} else {
					start := i
					for i < len(s) && s[i] != ';' && s[i] != ',' {
						i++
					}
					value = strings.TrimSpace(s[start:i])
				}
			}
			if name == "rel" && !relSeen {
				relSeen = true
				l.rels = map[string]bool{}
				for _, r := range strings.Fields(value) {
					l.rels[strings.ToLower(r)] = true
				}
			}
		}
		if l.rels != nil {
			out = append(out, l)
		}
		i = skipToComma(s, i)
	}
	return out
}

// quotedString reads an RFC 9110 quoted-string starting at s[i] == '"' and
// returns its unescaped content and the index after the closing quote.
func quotedString(s string, i int) (string, int) {
	var b strings.Builder
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), i + 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), i
}

// skipToComma returns the index of the next comma at or after i that is not
// inside a quoted string or <…>, or len(s).
func skipToComma(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ',':
			return i
		case '"':
			_, i = quotedString(s, i)
		case '<':
			if end := strings.IndexByte(s[i:], '>'); end >= 0 {
				i += end + 1
			} else {
				return len(s)
			}
		default:
			i++
		}
	}
	return i
}
