package mailer

import (
	"bytes"
	"errors"
	"fmt"
	htmltemplate "html/template"
	netmail "net/mail"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
}

// Footer is what the end of a list message links to. URLs carry signed
// tokens made by the caller; composition only checks that they are URLs.
type Footer struct {
	FeedTitle, FeedURL, SiteURL string
	// ManageURL is the account page (magic link).
	ManageURL string
	// UnsubscribeURL is the RFC 8058 one-click URL (POST unsubscribes, GET
	// shows a page); it also goes into List-Unsubscribe.
	UnsubscribeURL string
	// UnsubscribeMailto is an address (or mailto: URL) that unsubscribes by
	// email; it goes into List-Unsubscribe only.
	UnsubscribeMailto string
	// StatusURL is the public status page of the feed.
	StatusURL string
}

// ItemEmail is one new item for one subscriber (instant delivery).
type ItemEmail struct {
	To                 string
	FeedTitle, FeedURL string
	// ListID is the List-Id identifier, e.g. Sender.FeedListID(feed.ID).
	// Empty derives one from a hash of FeedURL.
	ListID string
	// MessageID should be stable per (subscription, item), e.g.
	// Sender.MessageID(fmt.Sprintf("item.%d.%d", sub, item)).
	MessageID string
	// Date is the Date header (normally the clock's now).
	Date time.Time
	// ItemTitle, ItemLink and Author are as the feed gave them (HTML in a
	// title is reduced to text). ItemHTML is the item's content or summary,
	// unsanitized: composition sanitizes it.
	ItemTitle, ItemLink, ItemHTML, Author string
	Published                             time.Time
	Footer                                Footer
}

// DigestEmail is one issue of a digest.
type DigestEmail struct {
	To         string
	DigestName string // e.g. "Morning"; "" for an unnamed digest
	MessageID  string
	Date       time.Time
	// Feeds are rendered in the order given: grouped by feed, newest item
	// first, as the digest package assembles them. Feeds without items are
	// skipped.
	Feeds []DigestFeed
	// Footer: ManageURL, UnsubscribeURL and UnsubscribeMailto unsubscribe
	// from this digest; the feed fields are not used.
	Footer Footer
	// ListID is optional: e.g. Sender.DigestListID(digest.ID) gives digest
	// mail its own List-Id. Empty means no List-Id header.
	ListID string
}

// DigestFeed is one feed's section of a digest.
type DigestFeed struct {
	Title, SiteURL string
	Items          []DigestItem
}

// DigestItem is one item in a digest. ExcerptHTML is unsanitized feed HTML
// (normally a short excerpt): composition sanitizes it.
type DigestItem struct {
	Title, Link, ExcerptHTML string
	Published                time.Time
}

// Link is a button in a notice.
type Link struct {
	Label, URL string
}

// NoticeEmail is a free, plain notice to a person: confirmation, out of
// credits, feed gone or blacklisted. Text is plain text (paragraphs
// separated by an empty line); each Link becomes a button.
type NoticeEmail struct {
	To, Subject, Text string
	Links             []Link
	MessageID         string
	Date              time.Time
}

// ErrEmptyDigest is returned for a digest without items: an empty slot sends
// nothing.
var ErrEmptyDigest = errors.New("digest has no items")

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
	maxPreheader   = 140
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
}

type itemView struct {
	Title, Preheader            string
	FeedTitle, SiteURL          string
	ItemTitle, ItemLink, Byline string
	Content                     htmltemplate.HTML
	Text                        string
	ReadMore                    Link
	Footer                      footerView
}

// markupRe spots text that carries HTML: a tag or an entity.
var markupRe = regexp.MustCompile(`(?i)</?[a-z][a-z0-9-]*(?:\s[^<>]*)?/?>|&(?:#[0-9]{1,7}|#x[0-9a-f]{1,6}|[a-z][a-z0-9]{1,31});`)

// plainTitle reduces a title that carries HTML (tags or entities) to text.
func plainTitle(s string) string {
	if markupRe.MatchString(s) {
		s = HTMLToText(contentPolicy().Sanitize(resolveURLs(s, nil, false)))
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

// formatDate renders a date shown in a body: date only, UTC.
func formatDate(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("January 2, 2006")
}

// preheader is the inbox preview line: the start of the text on one line,
// without what the text rendering adds for plain-text readers (link targets
// in angle brackets, quote marks, list markers).
func preheader(text string) string {
	var words []string
	n := 0
	for line := range strings.Lines(text) {
		line = strings.TrimLeft(line, "> \t")
		if rest, ok := strings.CutPrefix(line, "- "); ok {
			line = rest
		} else if i := strings.Index(line, ". "); i > 0 && i <= 3 && strings.Trim(line[:i], "0123456789") == "" {
			line = line[i+2:]
		}
		for _, w := range strings.Fields(line) {
			if len(w) > 2 && w[0] == '<' && w[len(w)-1] == '>' && strings.Contains(w, ":") {
				continue // a link target
			}
			words = append(words, w)
			n += utf8.RuneCountInString(w) + 1
		}
		if n > maxPreheader {
			break
		}
	}
	return truncateRunes(strings.Join(words, " "), maxPreheader)
}

// itemBase is the URL relative links in an item resolve against: the item
// link, itself resolved against the feed URL; else the feed URL.
func itemBase(link, feedURL string) string {
	link, feedURL = strings.TrimSpace(link), strings.TrimSpace(feedURL)
	fu, ferr := url.Parse(feedURL)
	if ferr != nil || !fu.IsAbs() {
		fu = nil
	}
	if link != "" {
		if lu, err := url.Parse(link); err == nil {
			if lu.IsAbs() {
				return lu.String()
			}
			if fu != nil {
				return fu.ResolveReference(lu).String()
			}
		}
	}
	if fu != nil {
		return fu.String()
	}
	return ""
}

// Item composes the email for one new item.
func (s Sender) Item(e ItemEmail) (*mail.Msg, error) {
	tpl, err := s.templates()
	if err != nil {
		return nil, err
	}
	feedURL := firstNonEmpty(e.FeedURL, e.Footer.FeedURL)
	feedTitle := cleanHeaderText(plainTitle(firstNonEmpty(e.FeedTitle, e.Footer.FeedTitle)), maxBodyTitle)
	if feedTitle == "" {
		feedTitle = firstNonEmpty(hostOf(feedURL), "A feed")
	}
	itemTitle := cleanHeaderText(plainTitle(e.ItemTitle), maxBodyTitle)
	subject := itemTitle
	if itemTitle == "" {
		itemTitle = "Untitled post"
		subject = "New post from " + feedTitle
	}
	base := itemBase(e.ItemLink, feedURL)
	link := bodyURL(base, false)
	if strings.TrimSpace(e.ItemLink) == "" {
		link = "" // the base fell back to the feed URL: no item link to show
	}
	content := PrepareHTML(e.ItemHTML, base)

	byline := ""
	if a := cleanHeaderText(plainTitle(e.Author), 120); a != "" {
		byline = "By " + a
	}
	if d := formatDate(e.Published); d != "" {
		if byline != "" {
			byline += " · "
		}
		byline += d
	}
	siteURL := bodyURL(e.Footer.SiteURL, false)
	fv := footerView{
		To:             strings.TrimSpace(e.To),
		FeedTitle:      feedTitle,
		FeedURL:        bodyURL(feedURL, false),
		FeedLink:       firstNonEmpty(siteURL, bodyURL(feedURL, false)),
		ManageURL:      bodyURL(e.Footer.ManageURL, false),
		UnsubscribeURL: bodyURL(e.Footer.UnsubscribeURL, false),
		StatusURL:      bodyURL(e.Footer.StatusURL, false),
	}
	view := itemView{
		Title:     itemTitle,
		Preheader: preheader(content.Text),
		FeedTitle: feedTitle,
		SiteURL:   siteURL,
		ItemTitle: itemTitle,
		ItemLink:  link,
		Byline:    byline,
		Content:   htmltemplate.HTML(content.HTML), // sanitized by PrepareHTML
		Text:      content.Text,
		ReadMore:  Link{Label: "Read on the site", URL: link},
		Footer:    fv,
	}
	htmlPart, textPart, err := tpl.render("item", view)
	if err != nil {
		return nil, err
	}
	m, err := s.newMsg(e.To, truncateRunes(feedTitle, maxFromTitle)+" via feedmail", subject, e.MessageID, e.Date)
	if err != nil {
		return nil, err
	}
	listID := strings.TrimSpace(e.ListID)
	if listID == "" {
		listID = s.urlListID(feedURL)
	}
	if err := setListHeaders(m, feedTitle, listID, e.Footer); err != nil {
		return nil, err
	}
	setBody(m, textPart, htmlPart)
	return m, nil
}

type digestView struct {
	Title, Preheader, Heading, Summary string
	Feeds                              []digestFeedView
	Footer                             footerView
}

type digestFeedView struct {
	Title, SiteURL string
	Anchor         string // id of the feed's section, for the table of contents
	Count          string // "3 new posts"
	Items          []digestItemView
}

type digestItemView struct {
	Title, Link, Date string
	Excerpt           htmltemplate.HTML
	ExcerptText       string
}

// digestLabel names a digest: "Morning" → "Morning digest", "" → "digest";
// a name already ending in "digest" is kept as it is.
func digestLabel(name string) string {
	name = cleanHeaderText(name, maxDigestLabel)
	switch {
	case name == "":
		return "digest"
	case strings.HasSuffix(strings.ToLower(name), "digest"):
		return name
	default:
		return name + " digest"
	}
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// plural renders "1 new post" / "14 new posts".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Digest composes one digest issue. It returns ErrEmptyDigest when no feed
// has items.
func (s Sender) Digest(e DigestEmail) (*mail.Msg, error) {
	tpl, err := s.templates()
	if err != nil {
		return nil, err
	}
	var feeds []digestFeedView
	items := 0
	var titles []string
	for _, f := range e.Feeds {
		if len(f.Items) == 0 {
			continue
		}
		site := bodyURL(f.SiteURL, false)
		title := cleanHeaderText(plainTitle(f.Title), maxBodyTitle)
		if title == "" {
			title = firstNonEmpty(hostOf(site), "Untitled feed")
		}
		fv := digestFeedView{Title: title, SiteURL: site, Anchor: fmt.Sprintf("feed-%d", len(feeds)+1)}
		for _, it := range f.Items {
			base := itemBase(it.Link, site)
			c := PrepareHTML(it.ExcerptHTML, base)
			t := cleanHeaderText(plainTitle(it.Title), maxBodyTitle)
			if t == "" {
				t = "Untitled post"
			}
			link := ""
			if strings.TrimSpace(it.Link) != "" {
				link = bodyURL(base, false)
			}
			fv.Items = append(fv.Items, digestItemView{
				Title: t, Link: link, Date: formatDate(it.Published),
				Excerpt: htmltemplate.HTML(c.HTML), ExcerptText: c.Text, // sanitized by PrepareHTML
			})
			titles = append(titles, t)
			items++
		}
		fv.Count = plural(len(fv.Items), "new post", "new posts")
		feeds = append(feeds, fv)
	}
	if items == 0 {
		return nil, ErrEmptyDigest
	}
	label := digestLabel(e.DigestName)
	summary := plural(items, "new post", "new posts") + " from " + plural(len(feeds), "feed", "feeds")
	subject := "Your " + label + ": " + summary
	view := digestView{
		Title:     subject,
		Preheader: preheader(strings.Join(titles, " · ")),
		Heading:   "Your " + label,
		Summary:   summary,
		Feeds:     feeds,
		Footer: footerView{
			To:             strings.TrimSpace(e.To),
			ManageURL:      bodyURL(e.Footer.ManageURL, false),
			UnsubscribeURL: bodyURL(e.Footer.UnsubscribeURL, false),
			DigestLabel:    label,
		},
	}
	htmlPart, textPart, err := tpl.render("digest", view)
	if err != nil {
		return nil, err
	}
	m, err := s.newMsg(e.To, capitalize(label)+" via feedmail", subject, e.MessageID, e.Date)
	if err != nil {
		return nil, err
	}
	if err := setListHeaders(m, capitalize(label), strings.TrimSpace(e.ListID), e.Footer); err != nil {
		return nil, err
	}
	setBody(m, textPart, htmlPart)
	return m, nil
}

type noticeView struct {
	Title, Preheader, To string
	Text                 string
	Paragraphs           [][]string
	Links                []Link
}

// Notice composes a free notice. Subject and Text are required; every Link
// must be an http(s) URL.
func (s Sender) Notice(e NoticeEmail) (*mail.Msg, error) {
	tpl, err := s.templates()
	if err != nil {
		return nil, err
	}
	subject := cleanHeaderText(e.Subject, maxSubject)
	if subject == "" {
		return nil, errors.New("compose: notice Subject is required")
	}
	text := strings.TrimSpace(strings.ReplaceAll(e.Text, "\r\n", "\n"))
	var paras [][]string
	for _, p := range regexp.MustCompile(`\n[ \t]*\n`).Split(text, -1) {
		if p = strings.TrimSpace(p); p != "" {
			paras = append(paras, strings.Split(p, "\n"))
		}
	}
	var links []Link
	for _, l := range e.Links {
		u := bodyURL(l.URL, false)
		if u == "" {
			return nil, fmt.Errorf("compose: notice link %q: not an http(s) URL", l.URL)
		}
		label := cleanHeaderText(l.Label, 80)
		if label == "" {
			label = "Open"
		}
		links = append(links, Link{Label: label, URL: u})
	}
	view := noticeView{
		Title: subject, Preheader: preheader(text), To: strings.TrimSpace(e.To),
		Text: text, Paragraphs: paras, Links: links,
	}
	htmlPart, textPart, err := tpl.render("notice", view)
	if err != nil {
		return nil, err
	}
	m, err := s.newMsg(e.To, "feedmail", subject, e.MessageID, e.Date)
	if err != nil {
		return nil, err
	}
	setBody(m, textPart, htmlPart)
	return m, nil
}

// Render serializes a message as RFC 5322 bytes (CRLF line endings), as it
// would go over SMTP.
func Render(m *mail.Msg) ([]byte, error) {
	if m == nil {
		return nil, errors.New("render: nil message")
	}
	var b bytes.Buffer
	if _, err := m.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("render message: %w", err)
	}
	return b.Bytes(), nil
}
