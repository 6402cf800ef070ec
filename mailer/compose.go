package mailer

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/wneessen/go-mail"
)

// Sender composes messages from one sender address. The zero value is not
// useful; set Address at least. A Sender is a value and safe for concurrent
// use.
type Sender struct {
	// Address is FEEDMAIL_FROM, e.g. "feedmail@example.com" (a display name
	// in it is ignored: each message names itself).
	Address string
	// Domain is used for Message-IDs and List-Ids. Empty means the domain
	// of Address.
	Domain string
	// Templates are the parsed email templates. Nil means the embedded
	// templates, parsed once per process on first use.
	Templates *Templates
	// IDKey makes Message-IDs unique to this install (see MessageID): a
	// key derived from the install's secret, token.Signer.Derive with
	// MessageIDKeyLabel. Nil leaves ids made of row numbers only, which
	// two installs sending from one domain would both use (tests only).
	IDKey []byte
}

// MessageIDKeyLabel names the key derived from the install's secret for
// Sender.IDKey.
const MessageIDKeyLabel = "message-id"

// MessageIDKey returns Sender.IDKey from the key derived from the
// install's secret and the install's id (kept in its database): two
// installs given the same FEEDMAIL_SECRET still make different ids.
func MessageIDKey(secretKey []byte, installID string) []byte {
	m := hmac.New(sha256.New, secretKey)
	m.Write([]byte("install:" + installID))
	return m.Sum(nil)
}

// Footer is what the end of a list message links to. URLs carry signed
// tokens made by the caller; composition only checks that they are URLs.
type Footer struct {
	FeedTitle, FeedURL, SiteURL string
	// ManageURL is the account page (magic link).
	ManageURL string
	// UnsubscribeURL is the RFC 8058 one-click URL (POST unsubscribes, GET
	// shows a page); it is also the only URL in List-Unsubscribe.
	UnsubscribeURL string
	// UnsubscribeMailto is the mailto: URL listed after it in
	// List-Unsubscribe when feedmail reads mail sent to one (a bounce
	// address is set); "" otherwise.
	UnsubscribeMailto string
	// StatusURL is the public status page of the feed.
	StatusURL string
}

// Header names not predefined by go-mail.
const (
	headerAutoSubmitted = mail.Header("Auto-Submitted")
	headerListID        = mail.Header("List-Id")
)

// Length limits for text going into headers (in runes).
const (
	maxSubject     = 200
	maxFromTitle   = 64
	maxBodyTitle   = 300
	maxDigestLabel = 60
)

func (s Sender) domain() string {
	if d := strings.ToLower(strings.TrimSpace(s.Domain)); d != "" {
		return d
	}
	if a, err := netmail.ParseAddress(s.Address); err == nil {
		if d := domainOf(a.Address); d != "" {
			return d
		}
	}
	if d := domainOf(s.Address); d != "" {
		return d
	}
	return "localhost"
}

func (s Sender) templates() (*Templates, error) {
	if s.Templates != nil {
		return s.Templates, nil
	}
	return defaultTemplates()
}

// newMsg starts a message with the headers every feedmail email has.
func (s Sender) newMsg(to, fromName, subject, messageID string, date time.Time) (*mail.Msg, error) {
	if date.IsZero() {
		return nil, errors.New("compose: Date is required")
	}
	from, err := netmail.ParseAddress(strings.TrimSpace(s.Address))
	if err != nil {
		return nil, fmt.Errorf("compose: sender address %q: %w", s.Address, err)
	}
	to = strings.TrimSpace(to)
	if to == "" {
		return nil, fmt.Errorf("compose: %w", errNoRecipient)
	}
	if strings.ContainsFunc(to, unicode.IsControl) {
		return nil, fmt.Errorf("compose: recipient %q contains control characters", to)
	}
	m := mail.NewMsg(mail.WithNoDefaultUserAgent())
	// net/mail quotes and encodes the display name itself, so a feed titled
	// `"` or `a" <evil@x>` stays one display name (FromFormat does not escape).
	m.FromMailAddress(&netmail.Address{Name: cleanHeaderText(fromName, 120), Address: from.Address})
	if err := m.To(to); err != nil {
		return nil, fmt.Errorf("compose: To: %w", err)
	}
	m.Subject(cleanHeaderText(subject, maxSubject))
	id := ""
	if strings.TrimSpace(messageID) == "" {
		id = randomMessageID(s.domain())
	} else if id, err = normalizeMessageID(messageID); err != nil {
		return nil, fmt.Errorf("compose: %w", err)
	}
	m.SetMessageIDWithValue(id)
	m.SetDateWithValue(date)
	m.SetGenHeader(headerAutoSubmitted, "auto-generated")
	m.SetGenHeader(mail.HeaderXAutoResponseSuppress, "All")
	return m, nil
}

// setListHeaders adds List-Id and List-Unsubscribe(-Post).
func setListHeaders(m *mail.Msg, listTitle, listID string, f Footer) error {
	if listID != "" {
		v, err := formatListID(listTitle, listID)
		if err != nil {
			return fmt.Errorf("compose: %w", err)
		}
		m.SetGenHeaderPreformatted(headerListID, v)
	}
	v, post, err := listUnsubscribe(f.UnsubscribeURL, f.UnsubscribeMailto)
	if err != nil {
		return fmt.Errorf("compose: %w", err)
	}
	if v != "" {
		m.SetGenHeaderPreformatted(mail.HeaderListUnsubscribe, v)
	}
	if post {
		m.SetGenHeaderPreformatted(mail.HeaderListUnsubscribePost, "List-Unsubscribe=One-Click")
	}
	return nil
}

// setBody adds the text part, then the HTML alternative.
func setBody(m *mail.Msg, text, html string) {
	m.SetBodyString(mail.TypeTextPlain, text)
	m.AddAlternativeString(mail.TypeTextHTML, html)
}

// footerView is the data of the footer partials.
type footerView struct {
	To, FeedTitle, FeedURL, FeedLink     string
	ManageURL, UnsubscribeURL, StatusURL string
	DigestLabel                          string
	// ImagesFrom names where the email's pictures load from ("" for an
	// email without any): the footer says so.
	ImagesFrom string
}

// markupRe spots text that carries HTML: a tag or an entity.
var markupRe = regexp.MustCompile(`(?i)</?[a-z][a-z0-9-]*(?:\s[^<>]*)?/?>|&(?:#[0-9]{1,7}|#x[0-9a-f]{1,6}|[a-z][a-z0-9]{1,31});`)

// plainTitle reduces a title that carries HTML (tags or entities) to text.
func plainTitle(s string) string {
	if markupRe.MatchString(s) {
		resolved, _ := resolveURLs(s, nil, false)
		s = HTMLToText(contentPolicy().Sanitize(resolved))
	}
	return s
}

// hostOf returns the host of a URL, for use as a fallback title.
func hostOf(raw string) string {
	if u, err := url.Parse(strings.TrimSpace(raw)); err == nil {
		return strings.TrimPrefix(u.Hostname(), "www.")
	}
	return ""
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// formatDate renders a date shown in a body, date only, on the reader's
// calendar (loc; nil is UTC), so a digest dated Friday in Paris does not
// date its posts Thursday. A time of exactly midnight UTC is a feed that
// gave a day without a time: that day is shown as it is.
func formatDate(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	u := t.UTC()
	if loc == nil || u.Hour() == 0 && u.Minute() == 0 && u.Second() == 0 && u.Nanosecond() == 0 {
		return u.Format("January 2, 2006")
	}
	return t.In(loc).Format("January 2, 2006")
}

// Render serializes a message as RFC 5322 bytes (CRLF line endings), as it
// would go over SMTP.
func Render(m *mail.Msg) ([]byte, error) {
	return renderSized(m, 0)
}

// renderSized is Render into a buffer of size bytes to begin with (an
// email's size when the caller knows it, or about), so that it is not
// grown and copied again and again on the way.
func renderSized(m *mail.Msg, size int) ([]byte, error) {
	if m == nil {
		return nil, errors.New("render: nil message")
	}
	var b bytes.Buffer
	b.Grow(size)
	if _, err := m.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("render message: %w", err)
	}
	return b.Bytes(), nil
}
