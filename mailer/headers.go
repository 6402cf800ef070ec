package mailer

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// cleanHeaderText makes caller text safe and tidy for a header: control
// characters (CR and LF included), Unicode line and paragraph separators,
// bidi overrides and invalid UTF-8 become spaces; runs of white space
// collapse to one; the result is trimmed and cut at max runes (with "…").
// The header writer then RFC 2047-encodes anything that is not ASCII.
func cleanHeaderText(s string, max int) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i, w := 0, 0; i < len(s); i += w {
		r, width := utf8.DecodeRuneInString(s[i:])
		w = width
		if r == utf8.RuneError && width == 1 || unicode.IsControl(r) || unicode.IsSpace(r) || isBidiControl(r) ||
			r == '\u2028' || r == '\u2029' || r == '\ufeff' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	// Text from a feed that looks like an RFC 2047 encoded-word
	// ("=?utf-8?q?=0D=0ABcc:…?=") would be decoded by mail clients into
	// characters removed above (controls, bidi overrides). A zero-width space
	// between "=" and "?" breaks the syntax: the text is then non-ASCII, gets
	// encoded as a whole, and clients show it literally.
	return truncateRunes(strings.ReplaceAll(b.String(), "=?", "=\u200b?"), max)
}

// isBidiControl reports the embedding, override and isolate controls that
// can make a display name read differently from what it is.
func isBidiControl(r rune) bool {
	return (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') || r == '\u200e' || r == '\u200f' || r == '\u061c'
}

// truncateRunes cuts s to at most max runes, ending with "…" when cut.
func truncateRunes(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		n++
	}
	return s
}

// domainOf returns the domain of an address such as "feedmail@example.com",
// lower-cased.
func domainOf(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return ""
	}
	return strings.ToLower(strings.Trim(addr[at+1:], "<> "))
}

// msgIDChars are the characters allowed on either side of the "@" of a
// Message-ID (RFC 5322 dot-atom-text, without the rarely safe ones).
var (
	msgIDRe      = regexp.MustCompile(`^[A-Za-z0-9!#$%&'*+/=?^_{|}~.-]+@[A-Za-z0-9!#$%&'*+/=?^_{|}~.\[\]:-]+$`)
	listIDRe     = regexp.MustCompile(`^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+$`)
	localPartBad = regexp.MustCompile(`[^A-Za-z0-9!#$%&'*+/=?^_{|}~.-]+`)
)

// normalizeMessageID validates a caller-given Message-ID ("<a@b>" or "a@b")
// and returns it without angle brackets.
func normalizeMessageID(id string) (string, error) {
	id = strings.TrimSpace(id)
	id = strings.TrimSuffix(strings.TrimPrefix(id, "<"), ">")
	if len(id) > 250 || !msgIDRe.MatchString(id) {
		return "", fmt.Errorf("invalid Message-ID %q: want <local@domain> with no spaces or control characters", id)
	}
	return id, nil
}

// randomMessageID returns a random Message-ID at domain (without brackets).
func randomMessageID(domain string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "@" + domain
}

// MessageID returns a Message-ID "<local.tag@domain>" at the sender's
// domain. Characters not allowed in a Message-ID are replaced by "-".
// Callers make local stable per delivery, e.g. "digest.<issue id>", so that
// a retried send carries the same id and receivers can de-duplicate. The
// tag (16 characters of base32) is an HMAC of local under s.IDKey: row
// numbers repeat across installs (two databases, a reset, a restore) while
// the tag does not, so two installs under one domain never share an id.
// Without IDKey there is no tag.
func (s Sender) MessageID(local string) string {
	local = strings.Trim(localPartBad.ReplaceAllString(local, "-"), ".")
	if local == "" {
		local = "feedmail"
	}
	if len(s.IDKey) > 0 {
		m := hmac.New(sha256.New, s.IDKey)
		m.Write([]byte(local))
		local += "." + strings.ToLower(idTagEncoding.EncodeToString(m.Sum(nil)[:10]))
	}
	return "<" + local + "@" + s.domain() + ">"
}

// idTagEncoding spells the install tag of a Message-ID: 10 bytes, 16
// characters.
var idTagEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// ItemMessageID is the stable Message-ID of the instant email of item to
// subscription sub: "<item-<sub>-<item>.tag@domain>".
func (s Sender) ItemMessageID(sub, item int64) string {
	return s.MessageID("item-" + strconv.FormatInt(sub, 10) + "-" + strconv.FormatInt(item, 10))
}

// FeedListID returns the List-Id identifier of a feed: "feed-<id>.<domain>".
func (s Sender) FeedListID(feedID int64) string {
	return "feed-" + strconv.FormatInt(feedID, 10) + "." + s.listDomain()
}

// DigestListID returns the List-Id identifier of a digest:
// "digest-<id>.<domain>".
func (s Sender) DigestListID(digestID int64) string {
	return "digest-" + strconv.FormatInt(digestID, 10) + "." + s.listDomain()
}

// listDomain is the domain used in list ids; "localhost" (the default
// FEEDMAIL_FROM) has no dot, which a list id needs, so it becomes
// "localhost.localdomain".
func (s Sender) listDomain() string {
	d := s.domain()
	if !strings.Contains(d, ".") {
		d += ".localdomain"
	}
	return d
}

// urlListID derives a list id from a feed URL when the caller gave none.
func (s Sender) urlListID(feedURL string) string {
	sum := sha256.Sum256([]byte(feedURL))
	return "feed-" + hex.EncodeToString(sum[:6]) + "." + s.listDomain()
}

// formatListID builds a List-Id value: `"Title" <id>` (RFC 2919), the phrase
// quoted when ASCII and RFC 2047-encoded (and folded) otherwise.
func formatListID(title, id string) (string, error) {
	id = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(id), "<"), ">")
	if len(id) > 255 || !listIDRe.MatchString(id) {
		return "", fmt.Errorf("invalid List-Id %q: want label.namespace of letters, digits, '-', '_'", id)
	}
	phrase := encodePhrase(cleanHeaderText(title, 100))
	if phrase == "" {
		return "<" + id + ">", nil
	}
	return phrase + " <" + id + ">", nil
}

// phraseEscaper escapes the inside of an RFC 5322 quoted string.
var phraseEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// encodePhrase renders display text as an RFC 5322 phrase: a quoted string
// when it is printable ASCII, RFC 2047 encoded-words folded onto separate
// lines otherwise.
func encodePhrase(s string) string {
	if s == "" {
		return ""
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			ascii = false
			break
		}
	}
	if ascii {
		return `"` + phraseEscaper.Replace(s) + `"`
	}
	enc := mime.QEncoding.Encode("UTF-8", s)
	return strings.ReplaceAll(enc, "?= =?", "?=\r\n =?")
}

// headerURL validates a URL going into a header inside angle brackets:
// absolute, one of the allowed schemes, and only visible ASCII without
// '<', '>', '"' or spaces. Commas are percent-encoded (RFC 2369 separates
// URLs with commas).
func headerURL(raw string, schemes ...string) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("invalid URL %q: %w", raw, err)
	}
	ok := false
	for _, s := range schemes {
		if strings.EqualFold(u.Scheme, s) {
			ok = true
		}
	}
	if !ok {
		return "", fmt.Errorf("invalid URL %q: scheme must be one of %s", raw, strings.Join(schemes, ", "))
	}
	if u.Scheme != "mailto" && u.Host == "" {
		return "", fmt.Errorf("invalid URL %q: no host", raw)
	}
	out := u.String()
	for i := 0; i < len(out); i++ {
		if c := out[i]; c <= 0x20 || c >= 0x7f || c == '<' || c == '>' || c == '"' {
			return "", fmt.Errorf("invalid URL %q: character %q not allowed in a header", raw, c)
		}
	}
	return strings.ReplaceAll(out, ",", "%2C"), nil
}

// listUnsubscribe builds the List-Unsubscribe value from the one-click URL
// and the mailto: URL ("" when there is none), and reports whether
// List-Unsubscribe-Post belongs with it. The mailto comes second (RFC 2369
// lists in order of preference) and only when feedmail reads mail sent to
// it (a bounce address is set); never alone, since the one-click URL is
// what mailbox providers want.
func listUnsubscribe(oneClick, mailto string) (value string, post bool, err error) {
	if oneClick == "" {
		return "", false, nil
	}
	u, err := headerURL(oneClick, "https", "http")
	if err != nil {
		return "", false, fmt.Errorf("unsubscribe URL: %w", err)
	}
	value = "<" + u + ">"
	if mailto != "" {
		m, err := headerURL(mailto, "mailto")
		if err != nil {
			return "", false, fmt.Errorf("unsubscribe mailto: %w", err)
		}
		value += ", <" + m + ">"
	}
	return value, true, nil
}

// bodyURL checks a URL shown as a link in a message body: http(s) (or mailto
// when allowed) with a host. Anything else yields "" so the template renders
// plain text instead of a link.
func bodyURL(raw string, allowMailto bool) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return ""
		}
	case "mailto":
		if !allowMailto {
			return ""
		}
	default:
		return ""
	}
	return u.String()
}

// errNoRecipient is returned when a message has no To address.
var errNoRecipient = errors.New("no recipient address")
