package mailer

import (
	htmltemplate "html/template"
	"net/url"
	"strings"
	"time"

	"github.com/wneessen/go-mail"
)

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

// itemView is the data of the item templates.
type itemView struct {
	Title                       string
	FeedTitle, SiteURL          string
	ItemTitle, ItemLink, Byline string
	Content                     htmltemplate.HTML
	Text                        string
	ReadMore                    Link
	Footer                      footerView
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
