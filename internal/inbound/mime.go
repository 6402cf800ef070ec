package inbound

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/quotedprintable"
	"strings"
)

// entity is one MIME entity: its header, media type, transfer-decoded body
// and, for a multipart, its parts. The body of a message/* entity is kept
// whole; its header is read when it is an original message.
type entity struct {
	header    header
	mediaType string // lower case; text/plain when absent or unreadable
	params    map[string]string
	body      []byte
	parts     []*entity
}

// walker builds the entity tree within a part budget and a depth limit, so
// that the work stays linear in the message size.
type walker struct {
	budget  int
	tooDeep bool
}

// entity builds the entity for a header and raw body at the given depth.
func (w *walker) entity(h header, raw []byte, depth int) *entity {
	e := &entity{header: h, mediaType: "text/plain"}
	if ct := h.get("Content-Type"); ct != "" {
		e.mediaType, e.params = parseContentType(ct)
	}
	if !strings.HasPrefix(e.mediaType, "multipart/") {
		e.body = decodeTransfer(raw, h.get("Content-Transfer-Encoding"))
		return e
	}
	e.body = raw
	boundary := e.params["boundary"]
	if boundary == "" {
		boundary, raw = strayBoundary(raw)
	}
	if boundary == "" {
		// A multipart without a boundary is read as text.
		e.mediaType = "text/plain"
		return e
	}
	if depth >= maxDepth {
		w.tooDeep = true
		return e
	}
	parts := splitMultipart(raw, boundary, w.budget)
	if len(parts) == 0 {
		// The declared boundary is not in the body (a damaged or edited
		// message): use the first delimiter-looking line instead.
		if b := firstDelimiter(raw); b != "" && b != boundary {
			parts = splitMultipart(raw, b, w.budget)
		}
	}
	for _, p := range parts {
		if w.budget <= 0 {
			break
		}
		w.budget--
		ph, pbody, ok := parseHeader(p, false)
		if !ok {
			// A part with no header is text/plain (RFC 2046 §5.1.1).
			ph, pbody = nil, bytes.TrimPrefix(bytes.TrimPrefix(p, []byte("\r")), []byte("\n"))
		}
		e.parts = append(e.parts, w.entity(ph, pbody, depth+1))
	}
	return e
}

// firstDelimiter returns the boundary of the first line of raw that looks
// like a multipart delimiter ("--" and at least 8 more characters), or "".
func firstDelimiter(raw []byte) string {
	for rest := raw; len(rest) > 0; {
		var line []byte
		line, rest = cutLine(rest)
		if len(line) >= 10 && bytes.HasPrefix(line, []byte("--")) && !bytes.ContainsAny(line, " \t") {
			return strings.TrimSuffix(string(line[2:]), "--")
		}
	}
	return ""
}

// strayBoundary finds the boundary parameter of a Content-Type whose
// continuation line was not indented (so the header ended before it), on
// the first line of the body, and returns it with the body after that line.
func strayBoundary(raw []byte) (string, []byte) {
	line, rest := cutLine(bytes.TrimLeft(raw, "\r\n"))
	l := strings.TrimSpace(string(line))
	if !strings.HasPrefix(strings.ToLower(l), "boundary=") {
		return "", raw
	}
	_, params := parseContentType("multipart/mixed; " + l)
	return params["boundary"], rest
}

// parseContentType returns the lower-case media type and the parameters
// of a Content-Type value. What the strict parser refuses (unquoted
// boundaries with "=", an unterminated quote, duplicate parameters) is
// read leniently, first value winning; no media type means text/plain.
func parseContentType(v string) (string, map[string]string) {
	if mt, params, err := mime.ParseMediaType(v); err == nil && strings.Count(mt, "/") == 1 {
		return strings.ToLower(mt), params
	}
	segs := strings.Split(v, ";")
	mt := strings.ToLower(strings.TrimSpace(segs[0]))
	if strings.Count(mt, "/") != 1 || strings.ContainsAny(mt, " \t\"") {
		mt = "text/plain"
	}
	params := map[string]string{}
	for _, seg := range segs[1:] {
		k, val, ok := strings.Cut(seg, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" {
			continue
		}
		val = strings.TrimSpace(val)
		if strings.HasPrefix(val, `"`) {
			val = val[1:]
			if i := strings.IndexByte(val, '"'); i >= 0 {
				val = val[:i]
			}
		}
		if _, dup := params[k]; !dup {
			params[k] = val
		}
	}
	return mt, params
}

// splitMultipart returns the bodies between the delimiter lines of a
// multipart body, at most limit of them. A missing close delimiter ends the
// last part at the end of the data, so a truncated message keeps what
// arrived.
func splitMultipart(body []byte, boundary string, limit int) [][]byte {
	delim := []byte("--" + boundary)
	var parts [][]byte
	start := -1 // start of the current part, -1 in the preamble
	pos := 0
	for pos < len(body) && len(parts) < limit {
		i := bytes.Index(body[pos:], delim)
		if i < 0 {
			break
		}
		at := pos + i
		pos = at + len(delim)
		if at > 0 && body[at-1] != '\n' {
			continue
		}
		line, rest := cutLine(body[at+len(delim):])
		closing := bytes.HasPrefix(line, []byte("--"))
		if !closing && len(bytes.TrimSpace(line)) != 0 {
			continue // a longer boundary that starts with ours
		}
		if start >= 0 {
			parts = append(parts, trimLineEnd(body[start:at]))
		}
		if closing {
			return parts
		}
		start = len(body) - len(rest)
		pos = start
	}
	if start >= 0 && start < len(body) && len(parts) < limit {
		parts = append(parts, body[start:])
	}
	return parts
}

// trimLineEnd drops the line ending that belongs to the next delimiter.
func trimLineEnd(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// decodeTransfer undoes a base64 or quoted-printable transfer encoding,
// keeping what decodes when the data is damaged.
func decodeTransfer(b []byte, cte string) []byte {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "base64":
		clean := make([]byte, 0, len(b))
		for _, c := range b {
			if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' {
				clean = append(clean, c)
			}
		}
		if len(clean)%4 == 1 {
			clean = clean[:len(clean)-1]
		}
		out := make([]byte, base64.RawStdEncoding.DecodedLen(len(clean)))
		n, _ := base64.RawStdEncoding.Decode(out, clean)
		return out[:n]
	case "quoted-printable":
		out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(b)))
		if err != nil && len(out) == 0 {
			return b
		}
		return out
	}
	return b
}

// walk calls fn for e and every entity under it, in document order.
func walk(e *entity, fn func(*entity)) {
	fn(e)
	for _, p := range e.parts {
		walk(p, fn)
	}
}

// message is a parsed inbound message and what was found in it.
type message struct {
	root *entity
	// originals are the header blocks of the returned original message(s):
	// attached message/rfc822 or headers parts, or the quoted copy in a
	// non-standard bounce.
	originals []header
}

// subject returns the decoded Subject of the message, at most its first
// 998 bytes (a header line's limit) before decoding.
func (m *message) subject() string {
	return strings.TrimSpace(decodeHeader(capped(m.root.header.get("Subject"), 998)))
}

// capped returns at most the first n bytes of s.
func capped(s string, n int) string {
	return s[:min(len(s), n)]
}

// find returns the first entity of one of the media types, or nil.
func (m *message) find(types ...string) *entity {
	var found *entity
	walk(m.root, func(e *entity) {
		if found != nil {
			return
		}
		for _, t := range types {
			if e.mediaType == t {
				found = e
				return
			}
		}
	})
	return found
}

// originalTypes are the media types that carry a returned original message
// or its header.
var originalTypes = map[string]bool{
	"message/rfc822":          true,
	"message/global":          true,
	"text/rfc822-headers":     true,
	"message/global-headers":  true,
	"message/rfc822-headers":  true,
	"text/rfc822-header":      true,
	"message/partial-headers": true,
}

// findOriginals collects the header of every attached original message.
// The root itself counts when it is a message/rfc822 (old JMRP reports).
func (m *message) findOriginals() {
	walk(m.root, func(e *entity) {
		if !originalTypes[e.mediaType] {
			return
		}
		if h, _, ok := parseHeader(bytes.TrimLeft(e.body, "\r\n"), true); ok {
			m.originals = append(m.originals, h)
		}
	})
}

// text returns the human-readable text of the message outside any
// original: the text/plain parts, or the text/html parts stripped of tags
// when there is no plain text. At most maxText bytes are returned.
func (m *message) text() string {
	var plain, html strings.Builder
	var visit func(e *entity)
	visit = func(e *entity) {
		if originalTypes[e.mediaType] || strings.HasPrefix(e.mediaType, "message/") {
			return
		}
		switch e.mediaType {
		case "text/plain":
			body := e.body[:min(len(e.body), maxText)]
			appendCapped(&plain, toUTF8(body, e.params["charset"]))
		case "text/html":
			body := e.body[:min(len(e.body), 4*maxText)]
			appendCapped(&html, stripTags(toUTF8(body, e.params["charset"])))
		}
		for _, p := range e.parts {
			visit(p)
		}
	}
	visit(m.root)
	if plain.Len() > 0 {
		return plain.String()
	}
	return html.String()
}

// maxText bounds the text the bounce heuristics look at: bounce texts are
// a few KiB, and the case-insensitive patterns run at a few MB/s.
const maxText = 64 << 10

// appendCapped appends s to b up to maxText bytes in total.
func appendCapped(b *strings.Builder, s string) {
	if room := maxText - b.Len(); room > 0 {
		if len(s) > room {
			s = s[:room]
		}
		b.WriteString(s)
		b.WriteByte('\n')
	}
}
