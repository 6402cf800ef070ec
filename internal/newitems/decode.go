package newitems

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// ErrDecode is wrapped by Decode when a document cannot be converted to UTF-8.
var ErrDecode = errors.New("newitems: cannot decode document")

// maxDeclLen bounds how far Decode looks for the end of an XML declaration
// (`<?xml … ?>`). Real declarations are well under 100 bytes.
const maxDeclLen = 1024

// Decode converts a feed document to UTF-8, so that the XML and JSON parsers
// never have to guess or re-decode it. The encoding is chosen in this order:
//
//  1. A byte order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE). The mark is removed.
//  2. Without a mark, the pattern of zero bytes in the first four bytes
//     (XML 1.0 appendix F): 00 00 00 xx is UTF-32BE, xx 00 00 00 UTF-32LE,
//     00 xx 00 xx UTF-16BE, xx 00 xx 00 UTF-16LE. This is how a document that
//     starts with `<` or `{` in UTF-16/32 is recognised.
//  3. The encoding= of the document's XML declaration, if its label is known
//     (WHATWG encoding labels, so iso-8859-1 and us-ascii mean windows-1252,
//     gb2312 means GBK). A declaration naming UTF-16 or UTF-32 on a document
//     whose bytes are not laid out that way is a lie and is ignored.
//  4. The charset parameter of the HTTP Content-Type (contentType), parsed
//     tolerantly (spaces around "=", single or double quotes). The document's
//     own declaration wins over the header: publishers configure their feed
//     software more carefully than their web server's defaults (Apache's
//     "text/xml; charset=iso-8859-1" on UTF-8 feeds is common). A JSON
//     document (first byte `{` or `[`) that is valid UTF-8 ignores the header,
//     since JSON is UTF-8 by definition (RFC 8259).
//  5. UTF-8; but a document with no declared encoding whose bytes are not
//     valid UTF-8 is read as windows-1252, the web's de facto default for
//     undeclared 8-bit text (this turns the "smart quotes" of old feeds into
//     the characters their authors meant).
//
// A document that is (or is declared as) UTF-8 but holds invalid sequences has
// them replaced by U+FFFD rather than rejected. C1 control characters
// (U+0080–U+009F), which mean nothing in a feed but are how windows-1252
// punctuation survives a wrong conversion (U+0092 for ’), are replaced by
// the windows-1252 characters of the same code ("demoronizing", as
// feedparser calls it). After conversion, the XML
// declaration's encoding= is rewritten to "UTF-8" so that a parser does not
// decode the text a second time. Decode does not otherwise change the
// document. The result is always valid UTF-8.
func Decode(body []byte, contentType string) ([]byte, error) {
	enc, rest := sniffUnicode(body)
	declared := enc != nil
	if enc == nil {
		label := xmlDeclEncoding(rest)
		if e := lookupASCIICompatible(label); e != nil {
			enc, declared = e, true
		}
	}
	if enc == nil && !(isJSON(rest) && utf8.Valid(rest)) {
		if e := lookupASCIICompatible(httpCharset(contentType)); e != nil {
			enc, declared = e, true
		}
	}
	if enc == nil {
		enc = unicode.UTF8
	}

	var out []byte
	if enc == unicode.UTF8 {
		switch {
		case utf8.Valid(rest):
			out = rest
		case !declared:
			var err error
			if out, err = charmap.Windows1252.NewDecoder().Bytes(rest); err != nil {
				return nil, fmt.Errorf("%w: windows-1252: %w", ErrDecode, err)
			}
		default:
			out = bytes.ToValidUTF8(rest, []byte("\uFFFD"))
		}
	} else {
		var err error
		if out, err = enc.NewDecoder().Bytes(rest); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDecode, err)
		}
		// A decoder for a UTF-16/32 document keeps a BOM it did not consume;
		// also drop a UTF-8 BOM that survived conversion.
		out = bytes.TrimPrefix(out, []byte("\uFEFF"))
		if !utf8.Valid(out) {
			out = bytes.ToValidUTF8(out, []byte("\uFFFD"))
		}
	}
	return rewriteXMLDeclEncoding(demoronize(out)), nil
}

// demoronize maps C1 control characters in UTF-8 text to the windows-1252
// characters with the same byte value (U+0092 → U+2019). The five codes
// windows-1252 leaves undefined are kept.
func demoronize(b []byte) []byte {
	// In UTF-8, U+0080–U+009F are 0xC2 0x80–0x9F.
	has := false
	for i := bytes.IndexByte(b, 0xC2); i >= 0 && i+1 < len(b); {
		if b[i+1] >= 0x80 && b[i+1] <= 0x9F {
			has = true
			break
		}
		j := bytes.IndexByte(b[i+1:], 0xC2)
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if !has {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for _, r := range string(b) {
		if r >= 0x80 && r <= 0x9F {
			if w := charmap.Windows1252.DecodeByte(byte(r)); w != utf8.RuneError {
				r = w
			}
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}

// sniffUnicode recognises a byte order mark or a UTF-16/32 zero-byte pattern.
// It returns the encoding (nil when the document looks ASCII-compatible) and
// the document without its byte order mark.
func sniffUnicode(b []byte) (encoding.Encoding, []byte) {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		return unicode.UTF8, b[3:]
	case bytes.HasPrefix(b, []byte{0x00, 0x00, 0xFE, 0xFF}):
		return utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM), b[4:]
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE, 0x00, 0x00}):
		return utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM), b[4:]
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		return unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), b[2:]
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		return unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), b[2:]
	}
	if len(b) < 4 {
		return nil, b
	}
	z := func(i int) bool { return b[i] == 0 }
	switch {
	case z(0) && z(1) && z(2) && !z(3):
		return utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM), b
	case !z(0) && z(1) && z(2) && z(3):
		return utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM), b
	case z(0) && !z(1) && z(2) && !z(3):
		return unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), b
	case !z(0) && z(1) && !z(2) && z(3):
		return unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), b
	}
	return nil, b
}

// lookupASCIICompatible maps an encoding label to an encoding, or nil when
// the label is empty, unknown, or names a UTF-16/32 encoding (which cannot
// describe a document that sniffUnicode found to be ASCII-compatible).
func lookupASCIICompatible(label string) encoding.Encoding {
	label = strings.ToLower(strings.TrimSpace(label))
	if label == "" {
		return nil
	}
	compact := strings.NewReplacer("-", "", "_", "", " ", "").Replace(label)
	if strings.HasPrefix(compact, "utf16") || strings.HasPrefix(compact, "utf32") ||
		strings.HasPrefix(compact, "ucs") || compact == "unicode" || compact == "u16" || compact == "u32" {
		return nil
	}
	switch compact {
	case "utf8", "u8":
		return unicode.UTF8
	}
	e, err := htmlindex.Get(label)
	if err != nil {
		return nil
	}
	if e == unicode.UTF8 {
		return unicode.UTF8
	}
	if name, _ := htmlindex.Name(e); name == "replacement" || strings.HasPrefix(name, "utf-16") {
		return nil
	}
	return e
}

// isJSON reports whether the first non-space byte opens a JSON object or array.
func isJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// xmlDecl locates the XML declaration at the start of b (after optional
// white space). It returns the byte offsets of the declaration, or ok=false.
func xmlDecl(b []byte) (start, end int, ok bool) {
	start = len(b) - len(bytes.TrimLeft(b, " \t\r\n"))
	rest := b[start:]
	if len(rest) < 6 || !bytes.HasPrefix(rest, []byte("<?xml")) {
		return 0, 0, false
	}
	switch rest[5] {
	case ' ', '\t', '\r', '\n':
	default:
		return 0, 0, false
	}
	limit := rest
	if len(limit) > maxDeclLen {
		limit = limit[:maxDeclLen]
	}
	i := bytes.Index(limit, []byte("?>"))
	if i < 0 {
		return 0, 0, false
	}
	return start, start + i + 2, true
}

// encodingAttr finds the encoding pseudo-attribute in an XML declaration and
// returns the offsets of its value (without quotes).
func encodingAttr(decl []byte) (vs, ve int, ok bool) {
	i := bytes.Index(decl, []byte("encoding"))
	if i < 0 {
		return 0, 0, false
	}
	j := i + len("encoding")
	for j < len(decl) && isXMLSpace(decl[j]) {
		j++
	}
	if j >= len(decl) || decl[j] != '=' {
		return 0, 0, false
	}
	j++
	for j < len(decl) && isXMLSpace(decl[j]) {
		j++
	}
	if j >= len(decl) || (decl[j] != '"' && decl[j] != '\'') {
		return 0, 0, false
	}
	q := decl[j]
	k := bytes.IndexByte(decl[j+1:], q)
	if k < 0 {
		return 0, 0, false
	}
	return j + 1, j + 1 + k, true
}

func isXMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// xmlDeclEncoding returns the encoding label of the XML declaration, or "".
func xmlDeclEncoding(b []byte) string {
	s, e, ok := xmlDecl(b)
	if !ok {
		return ""
	}
	vs, ve, ok := encodingAttr(b[s:e])
	if !ok {
		return ""
	}
	return string(b[s+vs : s+ve])
}

// rewriteXMLDeclEncoding sets the XML declaration's encoding to UTF-8 (when
// it names anything else), so that the document is not decoded twice.
func rewriteXMLDeclEncoding(b []byte) []byte {
	s, e, ok := xmlDecl(b)
	if !ok {
		return b
	}
	vs, ve, ok := encodingAttr(b[s:e])
	if !ok || string(b[s+vs:s+ve]) == "UTF-8" {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	out = append(out, b[:s+vs]...)
	out = append(out, "UTF-8"...)
	out = append(out, b[s+ve:]...)
	return out
}

// httpCharset extracts the charset parameter of a Content-Type header value.
// It is more forgiving than mime.ParseMediaType, which rejects real headers
// such as `text/xml;charset= "us-ascii"`; a parameter without "=" (for
// example `charset:iso-8859-1`) is not a charset.
func httpCharset(contentType string) string {
	params := strings.Split(contentType, ";")
	for _, p := range params[1:] {
		name, value, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "charset") {
			continue
		}
		value = strings.TrimSpace(value)
		value = strings.Trim(value, `"'`)
		return strings.TrimSpace(value)
	}
	return ""
}
