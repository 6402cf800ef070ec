package mailer

import (
	htmltemplate "html/template"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/model"
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
	Media model.ItemMedia
	// Format is the subscription's (store.Format*): "summary" shows the
	// first SummaryWords words as text, no images; "title" no content at
	// all; "article" the article (below); anything else the whole post.
	Format string
	// Location is the reader's time zone, in which the post is dated; nil
	// is UTC.
	Location *time.Location
	// Article is, for the "article" format, the unsanitized main text
	// read from the post's page (ArticleURL, which its relative links
	// resolve against); "" when there is none, and the email shows the
	// whole post with a line saying so.
	Article, ArticleURL string
	Footer              Footer
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
	// Note is one line above the content ("" for none).
	Note   string
	Footer footerView
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
	return s.ItemFor(e, NewItemPost(e))
}

// ItemFor composes the email of e for its reader from p, the part of it
// that is the same for every reader of the post (NewItemPost(e), or one
// made for another reader of the same post in the same format): the
// recipient, byline, footer and headers are e's own.
func (s Sender) ItemFor(e ItemEmail, p *ItemPost) (*mail.Msg, error) {
	tpl, err := s.templates()
	if err != nil {
		return nil, err
	}
	htmlPart, textPart, err := p.body(tpl, p.view(e))
	if err != nil {
		return nil, err
	}
	m, err := s.newMsg(e.To, truncateRunes(p.feedTitle, maxFromTitle)+" via feedmail", p.subject, e.MessageID, e.Date)
	if err != nil {
		return nil, err
	}
	listID := strings.TrimSpace(e.ListID)
	if listID == "" {
		listID = s.urlListID(p.feedURL)
	}
	if err := setListHeaders(m, p.feedTitle, listID, e.Footer); err != nil {
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

// ItemPost is the part of an item email that depends only on the post,
// its feed and the subscription's format (and article), not on the
// reader: titles, subject and the content, sanitized and converted to
// text, which is most of an email's cost. Its content is read-only once
// made, and its frames (compose_item_frame.go) are safe for concurrent
// use, so the readers of one post can share it.
type ItemPost struct {
	feedURL, feedTitle, itemTitle, subject string
	link                                   string
	content                                Content
	enclosures                             []enclosureView
	openPost, readMore                     Link
	noText                                 bool
	note                                   string
	frames                                 frames
	// executions counts the item templates' executions for this post.
	executions atomic.Int64
}

// NewItemPost returns the reader-independent part of e: the item's link,
// content in the subscription's format, enclosures and the links under
// it.
func NewItemPost(e ItemEmail) *ItemPost {
	p := &ItemPost{feedURL: firstNonEmpty(e.FeedURL, e.Footer.FeedURL)}
	p.feedTitle = itemFeedTitle(e, p.feedURL)
	p.itemTitle, p.subject = itemTitleSubject(e.ItemTitle, p.feedTitle)
	base := itemBase(e.ItemLink, p.feedURL)
	p.link = bodyURL(base, false)
	if strings.TrimSpace(e.ItemLink) == "" {
		p.link = "" // the base fell back to the feed URL: no item link to show
	}
	var video *videoPost
	if v, ok := postVideo(p.link, e.ItemHTML, e.Media); ok {
		video = &v
	}
	p.content = formattedBody(e, base, p.link, p.itemTitle, video)
	p.enclosures = enclosureViews(e.Media.Enclosures)
	p.openPost, p.readMore, p.noText = itemLinks(p.link, p.content.Empty() && len(p.enclosures) == 0, video)
	p.note = articleNote(e)
	return p
}

// view returns the data of the item templates for e's reader: p's
// content with e's byline (in the reader's time zone) and footer.
func (p *ItemPost) view(e ItemEmail) itemView {
	siteURL := bodyURL(e.Footer.SiteURL, false)
	return itemView{
		Title:      p.itemTitle,
		FeedTitle:  p.feedTitle,
		SiteURL:    siteURL,
		ItemTitle:  p.itemTitle,
		ItemLink:   p.link,
		Byline:     itemByline(e.Author, e.Published, e.Location),
		Content:    htmltemplate.HTML(p.content.HTML), // sanitized by PrepareHTML
		Text:       p.content.Text,
		Enclosures: p.enclosures,
		OpenPost:   p.openPost,
		NoText:     p.noText,
		ReadMore:   p.readMore,
		Note:       p.note,
		Footer:     p.footer(e, siteURL),
	}
}

// footer is the footer of e's email, with the line about where its
// pictures load from when the content shows any.
func (p *ItemPost) footer(e ItemEmail, siteURL string) footerView {
	f := itemFooter(e, p.feedURL, p.feedTitle, siteURL)
	f.ImagesFrom = imageHosts(p.content.HTML)
	return f
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
