package mailer

import (
	"html"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// The views of stored posts, issues and notices that the emails and
// the channels show: pure, store data in and the view out.

// Rendering defaults.
const (
	// DefaultPerFeed is how many items of one feed a digest email shows (the
	// newest). An issue that waited long for credits can hold hundreds; the
	// email stays readable and says how many more there were, linked to
	// the feed's site.
	DefaultPerFeed = 20
	// ExcerptLen is the longest excerpt shown under an item, in characters.
	ExcerptLen = 280
)

// DigestEmailOf builds the email view of an issue (pure; exported for tests
// and previews).
func DigestEmailOf(c *store.IssueContent, to string, s Sender, l links.Links, now time.Time) DigestEmail {
	e := DigestEmail{
		To:         to,
		DigestName: c.Digest.Name,
		Edition:    digest.Edition(c.Digest.Schedule, c.Digest.Timezone, c.Issue.SlotAt),
		MessageID:  s.MessageID("digest." + strconv.FormatInt(c.Issue.ID, 10)),
		Date:       now,
		ListID:     s.DigestListID(c.Digest.ID),
		Location:   zoneOf(c.Digest.Timezone),
	}
	if l.Tokens != nil {
		e.Footer = Footer{ManageURL: l.Account(c.Digest.UserID, now), UnsubscribeURL: l.DigestUnsubscribe(c.Digest.ID)}
	}
	for _, f := range c.Feeds {
		df := DigestFeed{Title: f.Title, SiteURL: f.SiteURL, FeedURL: f.URL, More: f.More}
		for _, it := range f.Items {
			di := DigestItem{
				Title:       it.Title,
				Link:        absolute(it.Link, f.URL),
				ExcerptHTML: html.EscapeString(Excerpt(it.Content, ExcerptLen)),
				Published:   store.ItemDate(it),
				Enclosures:  it.Media.Enclosures,
				Player:      it.Media.Player,
				ContentHTML: it.Content,
			}
			switch {
			case f.Format == store.FormatTitle:
				// The reader asked for titles: no excerpt, no thumbnail.
				di.ExcerptHTML = ""
			case di.ExcerptHTML != "" && f.Format != store.FormatSummary:
				// Its picture, at the one size every entry gets.
				di.Thumbnail = it.Media.Thumbnail
			case di.ExcerptHTML == "":
				// No text of its own (a video): its media stand in.
				di.Thumbnail = it.Media.Thumbnail
				desc := it.Media.Description
				if !it.Media.DescriptionHTML {
					desc = html.EscapeString(desc)
				}
				di.ExcerptHTML = TextToHTML(Excerpt(desc, ExcerptLen))
			}
			df.Items = append(df.Items, di)
		}
		e.Feeds = append(e.Feeds, df)
	}
	return e
}

// zoneOf returns the named time zone, or UTC when it does not load (the
// store keeps only zones that did).
func zoneOf(name string) *time.Location {
	if loc, err := time.LoadLocation(name); err == nil {
		return loc
	}
	return time.UTC
}

// Excerpt reduces feed HTML to at most max characters of plain text on one
// line, cut at a word boundary with "…" when it is longer. Tags that
// separate words (blocks, line breaks, images) become spaces, inline ones
// (links, emphasis) nothing, so punctuation stays where it was.
func Excerpt(content string, max int) string {
	text := HTMLToLine(content)
	if max <= 0 || utf8.RuneCountInString(text) <= max {
		return text
	}
	cut, n := 0, 0
	for i := range text {
		if n == max-1 {
			cut = i
			break
		}
		n++
	}
	s := text[:cut]
	if sp := strings.LastIndexByte(s, ' '); sp > cut/2 {
		s = s[:sp]
	}
	return strings.TrimRight(s, " ,.;:-–—") + "…"
}

// absolute resolves an item link against the feed's URL (feeds may give
// relative links); a link that does not parse is left as it is and the
// mailer shows the title without it.
func absolute(link, feedURL string) string {
	link = strings.TrimSpace(link)
	if link == "" {
		return ""
	}
	l, err := url.Parse(link)
	if err != nil || l.IsAbs() {
		return link
	}
	base, err := url.Parse(feedURL)
	if err != nil || !base.IsAbs() {
		return link
	}
	return base.ResolveReference(l).String()
}

// PostOf is the channel view of an instant delivery: the post as its
// subscription's format shows it, sanitized as in email. For the
// "article" format the body is the item's article from arts (articles by
// item) when it is ready, else the feed's own text after the note that
// says so, as in email.
func PostOf(d store.ItemDelivery, arts map[int64]store.ItemArticle) channel.Post {
	it, f := d.Item, d.Feed
	link := absolute(it.Link, f.URL)
	var video *videoPost
	if v, ok := postVideo(link, it.Content, it.Media); ok {
		video = &v
	}
	e := ItemEmail{ItemHTML: it.Content, Media: it.Media, Format: d.Subscription.Format}
	WithArticle(&e, it.ID, arts)
	c := withNote(formattedBody(e, link, link, it.Title, video), articleNote(e))
	p := channel.Post{
		Feed:  channel.Feed{Title: f.Title, URL: f.URL, SiteURL: f.SiteURL},
		Title: it.Title, Link: link, Author: it.Author, Seen: it.SeenAt,
		HTML: c.HTML, Text: c.Text, Media: it.Media,
	}
	if it.PublishedAt != nil {
		p.Published = *it.PublishedAt
	}
	return p
}

// IssueOf is the channel view of a digest issue: each post with its
// excerpt (none for the format "title"), and the count of each feed's
// posts the cap left out, as the issue's email shows them.
func IssueOf(c *store.IssueContent) channel.Issue {
	is := channel.Issue{Name: c.Digest.Name, Edition: digest.Edition(c.Digest.Schedule, c.Digest.Timezone, c.Issue.SlotAt)}
	for _, f := range c.Feeds {
		feed := channel.IssueFeed{Feed: channel.Feed{Title: f.Title, URL: f.URL, SiteURL: f.SiteURL}, More: f.More}
		for _, it := range f.Items {
			p := channel.Post{Feed: feed.Feed, Title: it.Title, Link: absolute(it.Link, f.URL), Author: it.Author,
				Seen: it.SeenAt, Published: store.ItemDate(it), Media: it.Media}
			if f.Format != store.FormatTitle {
				p.Text = Excerpt(it.Content, ExcerptLen)
			}
			feed.Posts = append(feed.Posts, p)
		}
		is.Feeds = append(is.Feeds, feed)
	}
	return is
}

// NoticeEmailOf is the email of notice n to address to.
func NoticeEmailOf(n store.Notice, to, messageID string, date time.Time) NoticeEmail {
	e := NoticeEmail{To: to, Subject: n.Subject, Text: n.Text, MessageID: messageID, Date: date}
	for _, l := range n.Links {
		e.Links = append(e.Links, Link{Label: l.Label, URL: l.URL})
	}
	return e
}

// WithArticle sets e's article from arts when its format wants one and
// the article is ready.
func WithArticle(e *ItemEmail, itemID int64, arts map[int64]store.ItemArticle) {
	if e.Format != store.FormatArticle {
		return
	}
	if a, ok := arts[itemID]; ok && a.State == store.ArticleReady {
		e.Article, e.ArticleURL = a.HTML, a.URL
	}
}
