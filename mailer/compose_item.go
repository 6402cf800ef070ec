package mailer

import (
	htmltemplate "html/template"
	"net/url"
	"strings"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/store"
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
	// Media is what the feed said about the item's media: every enclosure
	// is linked, and the description and thumbnail stand in for content
	// when the item has none.
	Media store.ItemMedia
	// Format is the subscription's (store.Format*): "summary" shows the
	// first SummaryWords words as text, no images; "title" no content at
	// all; anything else the whole post.
	Format string
	// Location is the reader's time zone, in which the post is dated; nil
	// is UTC.
	Location *time.Location
	Footer   Footer
}

// itemView is the data of the item templates.
type itemView struct {
	Title                       string
	FeedTitle, SiteURL          string
	ItemTitle, ItemLink, Byline string
	Content                     htmltemplate.HTML
	Text                        string
	Enclosures                  []enclosureView
	// OpenPost is set when the item shows nothing else: its link, or a
	// note that the feed gave no text.
	OpenPost Link
	NoText   bool
	ReadMore Link
	Footer   footerView
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
	feedTitle := itemFeedTitle(e, feedURL)
	itemTitle, subject := itemTitleSubject(e.ItemTitle, feedTitle)
	view := newItemView(e, feedURL, feedTitle, itemTitle)
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

// itemFeedTitle returns the feed's title as one clean line for the body and
// the From name; when the feed has none, its host or "A feed", so the
// reader always sees where the item came from.
func itemFeedTitle(e ItemEmail, feedURL string) string {
	feedTitle := cleanHeaderText(plainTitle(firstNonEmpty(e.FeedTitle, e.Footer.FeedTitle)), maxBodyTitle)
	if feedTitle == "" {
		feedTitle = firstNonEmpty(hostOf(feedURL), "A feed")
	}
	return feedTitle
}

// itemTitleSubject returns the item's title for the body and the Subject.
// An untitled item shows "Untitled post" and gets a subject naming the
// feed, so neither is ever empty.
func itemTitleSubject(raw, feedTitle string) (title, subject string) {
	title = cleanHeaderText(plainTitle(raw), maxBodyTitle)
	if title == "" {
		return "Untitled post", "New post from " + feedTitle
	}
	return title, title
}

// newItemView returns the data of the item templates: the item's link,
// content in the subscription's format, enclosures, byline and footer.
func newItemView(e ItemEmail, feedURL, feedTitle, itemTitle string) itemView {
	base := itemBase(e.ItemLink, feedURL)
	link := bodyURL(base, false)
	if strings.TrimSpace(e.ItemLink) == "" {
		link = "" // the base fell back to the feed URL: no item link to show
	}
	var video *videoPost
	if v, ok := postVideo(link, e.ItemHTML, e.Media); ok {
		video = &v
	}
	content := formattedBody(e, base, link, itemTitle, video)
	enclosures := enclosureViews(e.Media.Enclosures)
	openPost, readMore, noText := itemLinks(link, content.Empty() && len(enclosures) == 0, video)
	siteURL := bodyURL(e.Footer.SiteURL, false)
	return itemView{
		Title:      itemTitle,
		FeedTitle:  feedTitle,
		SiteURL:    siteURL,
		ItemTitle:  itemTitle,
		ItemLink:   link,
		Byline:     itemByline(e.Author, e.Published, e.Location),
		Content:    htmltemplate.HTML(content.HTML), // sanitized by PrepareHTML
		Text:       content.Text,
		Enclosures: enclosures,
		OpenPost:   openPost,
		NoText:     noText,
		ReadMore:   readMore,
		Footer:     itemFooter(e, feedURL, feedTitle, siteURL),
	}
}

// itemLinks returns the links under the item (and whether to note that the
// feed gave no text). When the body would hold nothing but the title
// (bare), the link becomes "Open the post" in place of "Read on the site",
// or without a link the note says so: never an empty body. A video's link
// says where it plays ("Watch on YouTube") whatever the body holds.
func itemLinks(link string, bare bool, video *videoPost) (openPost, readMore Link, noText bool) {
	readMore = Link{Label: "Read on the site", URL: link}
	if video != nil {
		readMore.Label = video.Watch()
	}
	if !bare {
		return Link{}, readMore, false
	}
	if link != "" {
		if video != nil {
			return Link{}, readMore, false
		}
		return Link{Label: "Open the post", URL: link}, Link{}, false
	}
	return Link{}, readMore, true
}

// itemByline returns "By author · date", either part left out when the feed
// did not give it, so the reader sees who wrote the item and when.
func itemByline(author string, published time.Time, loc *time.Location) string {
	byline := ""
	if a := cleanHeaderText(plainTitle(author), 120); a != "" {
		byline = "By " + a
	}
	if d := formatDate(published, loc); d != "" {
		if byline != "" {
			byline += " · "
		}
		byline += d
	}
	return byline
}

// itemFooter returns the footer of an item email: who it was sent to, the
// feed (linked to its site when known) and the subscription's links.
func itemFooter(e ItemEmail, feedURL, feedTitle, siteURL string) footerView {
	return footerView{
		To:             strings.TrimSpace(e.To),
		FeedTitle:      feedTitle,
		FeedURL:        bodyURL(feedURL, false),
		FeedLink:       firstNonEmpty(siteURL, bodyURL(feedURL, false)),
		ManageURL:      bodyURL(e.Footer.ManageURL, false),
		UnsubscribeURL: bodyURL(e.Footer.UnsubscribeURL, false),
		StatusURL:      bodyURL(e.Footer.StatusURL, false),
	}
}
