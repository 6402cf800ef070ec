package inbound

import (
	"bytes"
	"io"
	"mime"
	"net/textproto"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// field is one header field: canonical name, unfolded raw value.
type field struct {
	name, value string
}

// header is a header block in order. Lookups are linear: blocks are small
// and the walker caps how many it parses.
type header []field

// get returns the first value of the named field, or "".
func (h header) get(name string) string {
	name = textproto.CanonicalMIMEHeaderKey(name)
	for _, f := range h {
		if f.name == name {
			return f.value
		}
	}
	return ""
}

// has reports whether the named field is present.
func (h header) has(name string) bool {
	name = textproto.CanonicalMIMEHeaderKey(name)
	for _, f := range h {
		if f.name == name {
			return true
		}
	}
	return false
}

// all returns every value of the named field, in order.
func (h header) all(name string) []string {
	name = textproto.CanonicalMIMEHeaderKey(name)
	var out []string
	for _, f := range h {
		if f.name == name {
			out = append(out, f.value)
		}
	}
	return out
}

// parseHeader splits a header block off b and returns it with the rest.
// It accepts LF or CRLF, unfolds continuation lines, and with mbox set skips
// a leading "From " line (what pipes to a command often prepend). The block
// ends at an empty line or at the first line that is not a field; ok is false
// when the very first line is not a field, i.e. b is not a message.
func parseHeader(b []byte, mbox bool) (h header, body []byte, ok bool) {
	rest := b
	if mbox && bytes.HasPrefix(rest, []byte("From ")) {
		_, rest = cutLine(rest)
	}
	var value strings.Builder // the value of the last field, being unfolded
	flush := func() {
		if len(h) > 0 {
			h[len(h)-1].value = value.String()
		}
		value.Reset()
	}
	for len(rest) > 0 {
		line, next := cutLine(rest)
		if len(line) == 0 {
			flush()
			return h, next, len(h) > 0
		}
		if line[0] == ' ' || line[0] == '\t' {
			if len(h) == 0 {
				return nil, b, false
			}
			if more := bytes.TrimSpace(line); len(more) > 0 {
				if value.Len() > 0 {
					value.WriteByte(' ')
				}
				value.Write(more)
			}
			rest = next
			continue
		}
		name, v, found := bytes.Cut(line, []byte(":"))
		if !found || !validFieldName(name) {
			flush()
			return h, rest, len(h) > 0
		}
		flush()
		h = append(h, field{name: textproto.CanonicalMIMEHeaderKey(string(bytes.TrimRight(name, " \t")))})
		value.Write(bytes.TrimSpace(v))
		rest = next
	}
	flush()
	return h, nil, len(h) > 0
}

// cutLine returns the first line of b without its line ending, and the rest.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.TrimSuffix(b, []byte("\r")), nil
	}
	return bytes.TrimSuffix(b[:i], []byte("\r")), b[i+1:]
}

// validFieldName reports whether n is a header field name (RFC 5322 ftext),
// allowing trailing blanks before the colon as old MTAs write them.
func validFieldName(n []byte) bool {
	n = bytes.TrimRight(n, " \t")
	if len(n) == 0 || len(n) > 128 {
		return false
	}
	for _, c := range n {
		if c < 33 || c > 126 || c == ':' {
			return false
		}
	}
	return true
}

// wordDecoder decodes RFC 2047 encoded words in any charset x/net knows.
var wordDecoder = &mime.WordDecoder{CharsetReader: charset.NewReaderLabel}

// decodeHeader returns an RFC 2047-decoded, valid UTF-8 header value; an
// undecodable value is returned as it is.
func decodeHeader(v string) string {
	if d, err := wordDecoder.DecodeHeader(v); err == nil {
		v = d
	}
	return strings.ToValidUTF8(v, "\uFFFD")
}

// toUTF8 converts text in the named charset to UTF-8, replacing what cannot
// be converted; unknown charsets are only made valid UTF-8.
func toUTF8(b []byte, cs string) string {
	cs = strings.ToLower(strings.TrimSpace(cs))
	switch cs {
	case "", "utf-8", "utf8", "us-ascii", "ascii":
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	r, err := charset.NewReaderLabel(cs, bytes.NewReader(b))
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return strings.ToValidUTF8(string(out), "\uFFFD")
}

// clip returns s on one line, blanks collapsed, control characters
// dropped, at most n runes.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space, count := false, 0
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if unicode.IsControl(r) {
			continue
		}
		need := 1
		if space {
			need = 2
		}
		if count+need > n {
			break
		}
		if space {
			b.WriteByte(' ')
			count++
			space = false
		}
		b.WriteRune(r)
		count++
	}
	return b.String()
}

// cleanAddress strips an address type ("rfc822;"), angle brackets and
// blanks from an address as a report states it.
func cleanAddress(s string) string {
	s = strings.TrimSpace(s)
	if t, v, ok := strings.Cut(s, ";"); ok && !strings.Contains(t, "@") {
		s = strings.TrimSpace(v)
	}
	if i := strings.IndexByte(s, '<'); i >= 0 {
		if j := strings.IndexByte(s[i:], '>'); j > 0 {
			s = s[i+1 : i+j]
		}
	}
	s = strings.Trim(s, "<> \t")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}
