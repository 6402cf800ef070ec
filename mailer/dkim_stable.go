package mailer

import (
	"bytes"
	"slices"
	"strings"
)

// What a DKIM signature covers, compared between two renderings of one
// message. go-mail writes some header fields (the preformatted ones) in
// map order, which changes from one rendering to the next; a relaxed
// signature selects its header fields by name, so that order does not
// matter to it, while every field's bytes and the body's do.

// sameSigned reports whether renderings a and b carry the same header
// fields (in any order among different names, in the same order among
// fields of one name) and the same body, byte for byte.
func sameSigned(a, b []byte) bool {
	ha, ba, okA := bytes.Cut(a, []byte("\r\n\r\n"))
	hb, bb, okB := bytes.Cut(b, []byte("\r\n\r\n"))
	if okA != okB || !bytes.Equal(ba, bb) || len(ha) != len(hb) {
		return false
	}
	fa, fb := namedFields(ha), namedFields(hb)
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if fa[i].name != fb[i].name || !bytes.Equal(fa[i].raw, fb[i].raw) {
			return false
		}
	}
	return true
}

// namedField is one header field and its name, lower case.
type namedField struct {
	name string
	raw  []byte
}

// namedFields returns the fields of header block h sorted by name, fields
// of one name in their order (a signature picks those bottom up).
func namedFields(h []byte) []namedField {
	fs := headerFieldsOf(withCRLF(h))
	out := make([]namedField, len(fs))
	for i, f := range fs {
		out[i] = namedField{name: string(fieldName(f)), raw: f}
	}
	slices.SortStableFunc(out, func(x, y namedField) int { return strings.Compare(x.name, y.name) })
	return out
}

// headerFieldsOf splits a header block (CRLF line ends, no blank line) into
// its fields, each with its continuation lines.
func headerFieldsOf(h []byte) [][]byte {
	var out [][]byte
	for len(h) > 0 {
		end := 0
		for {
			i := bytes.Index(h[end:], []byte("\r\n"))
			if i < 0 {
				end = len(h)
				break
			}
			end += i + 2
			if end >= len(h) || (h[end] != ' ' && h[end] != '\t') {
				break
			}
		}
		out = append(out, h[:end])
		h = h[end:]
	}
	return out
}

// withCRLF is a copy of h ending its last line with CRLF.
func withCRLF(h []byte) []byte {
	return append(h[:len(h):len(h)], "\r\n"...)
}

// fieldName is a header field's name, lower case.
func fieldName(f []byte) []byte {
	name, _, _ := bytes.Cut(f, []byte(":"))
	return bytes.ToLower(bytes.TrimSpace(name))
}

// withoutDKIMHeader returns raw without its DKIM-Signature fields (a
// signature added before): what a new signature is computed over.
func withoutDKIMHeader(raw []byte) []byte {
	head, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok || !bytes.Contains(bytes.ToLower(head), []byte("dkim-signature:")) {
		return raw
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	for _, f := range headerFieldsOf(withCRLF(head)) {
		if !bytes.Equal(fieldName(f), []byte("dkim-signature")) {
			b.Write(f)
		}
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}
