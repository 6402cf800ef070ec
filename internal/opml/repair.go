package opml

import (
	"bytes"
)

// Repair escapes the stray & and < characters that make so many real OPML
// files ill-formed XML, leaving well-formed markup alone (doc must be UTF-8):
//
//   - In text and in quoted attribute values, an & that does not begin a
//     reference (&name; &#123; &#x1F;) becomes &amp;.
//   - In a quoted attribute value, every < becomes &lt;.
//   - In text, a < that cannot begin markup (a tag, end tag, comment, CDATA
//     section, declaration or processing instruction) becomes &lt;.
//
// Comments, CDATA sections, processing instructions and declarations are
// copied unchanged. A document that needs no repair is returned as is.
// Repair is exported for tools and tests; Parse calls it.
func Repair(doc []byte) []byte { return repair(doc, false) }

// RepairQuotes does what Repair does and also escapes, inside an attribute
// value, a quote character that cannot end the value: one not followed by
// (optional white space and) another attribute's name and "=", the end of
// the tag ("/>" or ">") followed by white space and "<" or the end of the
// document, or the end of the document. This fixes
// description="by Jen "From Head To Toe" about…" and unescaped HTML such as
// description="at <a href="https://x/">X</a>", but it would misread a
// well-formed element with attributes and text content (<a b="c">text</a>),
// so Parse uses it only on documents Repair could not mend.
func RepairQuotes(doc []byte) []byte { return repair(doc, true) }

// repair is Repair, and RepairQuotes when strayQuotes is set.
func repair(doc []byte, strayQuotes bool) []byte {
	r := &repairer{doc: doc, strayQuotes: strayQuotes}
	for i := 0; i < len(doc); {
		switch r.state {
		case inText:
			i = r.text(i)
		case inTag:
			i = r.tag(i)
		default:
			i = r.value(i)
		}
	}
	if r.out == nil {
		return doc
	}
	return r.out
}

// Where repair is in the document.
const (
	inText = iota
	inTag
	inValue
)

// repairer scans a document once, copying it to out only from its first
// change on. Each step takes the index of a byte and returns the next.
type repairer struct {
	doc         []byte
	out         []byte // allocated on the first change
	strayQuotes bool
	state       int
	quote       byte // the quote of the attribute value being read
}

// emit writes s in place of doc[i].
func (r *repairer) emit(i int, s string) int {
	if r.out == nil {
		r.out = make([]byte, 0, len(r.doc)+64)
		r.out = append(r.out, r.doc[:i]...)
	}
	r.out = append(r.out, s...)
	return i + 1
}

// keep copies doc[i] unchanged.
func (r *repairer) keep(i int) int {
	if r.out != nil {
		r.out = append(r.out, r.doc[i])
	}
	return i + 1
}

// copyUntil copies doc from i through the next end (or to the end of doc).
func (r *repairer) copyUntil(i int, end string) int {
	j := bytes.Index(r.doc[i:], []byte(end))
	if j < 0 {
		j = len(r.doc) - i
	} else {
		j += len(end)
	}
	if r.out != nil {
		r.out = append(r.out, r.doc[i:i+j]...)
	}
	return i + j
}

// text handles a byte of text: a stray & or < is escaped.
func (r *repairer) text(i int) int {
	switch r.doc[i] {
	case '&':
		if !isReference(r.doc[i:]) {
			return r.emit(i, "&amp;")
		}
	case '<':
		return r.markup(i)
	}
	return r.keep(i)
}

// markup handles a < in text: comments, CDATA, processing instructions and
// declarations are copied whole, a tag is entered, anything else escaped.
func (r *repairer) markup(i int) int {
	rest := r.doc[i+1:]
	switch {
	case bytes.HasPrefix(rest, []byte("!--")):
		return r.copyUntil(i, "-->")
	case bytes.HasPrefix(rest, []byte("![CDATA[")):
		return r.copyUntil(i, "]]>")
	case bytes.HasPrefix(rest, []byte("?")):
		return r.copyUntil(i, "?>")
	case bytes.HasPrefix(rest, []byte("!")) && len(rest) > 1 && isNameStart(rest[1]):
		return r.copyUntil(i, ">") // <!DOCTYPE …> (no internal subset in OPML)
	case len(rest) > 0 && isNameStart(rest[0]),
		len(rest) > 1 && rest[0] == '/' && isNameStart(rest[1]):
		r.state = inTag
		return r.keep(i)
	}
	return r.emit(i, "&lt;")
}

// tag handles a byte inside a tag: a quote opens a value, > ends the tag.
func (r *repairer) tag(i int) int {
	switch c := r.doc[i]; c {
	case '"', '\'':
		r.state, r.quote = inValue, c
	case '>':
		r.state = inText
	}
	return r.keep(i)
}

// value handles a byte of a quoted attribute value: < and a stray & are
// escaped, and with strayQuotes so is a quote that cannot end the value.
func (r *repairer) value(i int) int {
	c := r.doc[i]
	switch c {
	case r.quote:
		if r.strayQuotes && !closesValue(r.doc[i+1:]) {
			if c == '"' {
				return r.emit(i, "&quot;")
			}
			return r.emit(i, "&apos;")
		}
		r.state = inTag
	case '<':
		return r.emit(i, "&lt;")
	case '&':
		if !isReference(r.doc[i:]) {
			return r.emit(i, "&amp;")
		}
	}
	return r.keep(i)
}

// closesValue reports whether a quote followed by rest plausibly ends an
// attribute value (see RepairQuotes).
func closesValue(rest []byte) bool {
	skip := func(j int) int {
		for j < len(rest) && isSpace(rest[j]) {
			j++
		}
		return j
	}
	j := skip(0)
	switch {
	case j == len(rest), bytes.HasPrefix(rest[j:], []byte("?>")):
		return true
	case rest[j] == '>', bytes.HasPrefix(rest[j:], []byte("/>")):
		if rest[j] == '/' {
			j++
		}
		k := skip(j + 1)
		return k == len(rest) || rest[k] == '<'
	case isNameStart(rest[j]):
		k := j + 1
		for k < len(rest) && (isNameStart(rest[k]) || isDigit(rest[k]) || rest[k] == '-' || rest[k] == '.') {
			k++
		}
		k = skip(k)
		return k < len(rest) && rest[k] == '='
	}
	return false
}

// isSpace reports XML white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isReference reports whether b (starting with &) begins a character
// reference or an entity reference with a plausible name.
func isReference(b []byte) bool {
	const maxName = 32
	if len(b) < 3 {
		return false
	}
	if b[1] == '#' {
		j, hex := 2, false
		if j < len(b) && (b[j] == 'x' || b[j] == 'X') {
			j, hex = j+1, true
		}
		start := j
		for j < len(b) && j-start <= 8 && (isDigit(b[j]) || hex && isHexLetter(b[j])) {
			j++
		}
		return j > start && j < len(b) && b[j] == ';'
	}
	if !isNameStart(b[1]) {
		return false
	}
	for j := 2; j < len(b) && j <= maxName; j++ {
		switch {
		case b[j] == ';':
			return true
		case isNameStart(b[j]) || isDigit(b[j]) || b[j] == '-' || b[j] == '.':
		default:
			return false
		}
	}
	return false
}

// isNameStart reports a byte that may start an XML name (any non-ASCII
// byte counts).
func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || c >= 0x80
}

// isDigit and isHexLetter classify the digits of character references.
func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isHexLetter(c byte) bool { return c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
