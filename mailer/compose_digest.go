package mailer

import (
	"errors"
	"fmt"
	htmltemplate "html/template"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/model"
)

// DigestEmail is one issue of a digest.
type DigestEmail struct {
	To         string
	DigestName string // e.g. "Morning"; "" for an unnamed digest
	// Edition names this issue in the subject ("Tue 24 Nov"), so mail
	// clients do not thread every issue into one conversation; "" leaves
	// it out.
	Edition   string
	MessageID string
	Date      time.Time
	// Feeds are rendered in the order given: grouped by feed, newest item
	// first, as the digest package assembles them. Feeds without items are
	// skipped.
	Feeds []DigestFeed
	// Footer: ManageURL and UnsubscribeURL unsubscribe
	// from this digest; the feed fields are not used.
	Footer Footer
	// ListID is optional: e.g. Sender.DigestListID(digest.ID) gives digest
	// mail its own List-Id. Empty means no List-Id header.
	ListID string
	// Location is the digest's time zone, in which posts are dated; nil is
	// UTC.
	Location *time.Location
}

// DigestFeed is one feed's section of a digest. More counts the feed's
// posts of the issue not in Items (the per-feed cap left them out): the
// section then ends with "and N more posts from …", linked to SiteURL, else
// FeedURL.
type DigestFeed struct {
	Title, SiteURL, FeedURL string
	Items                   []DigestItem
	More                    int
}

// DigestItem is one item in a digest. ExcerptHTML is unsanitized feed HTML
// (normally a short excerpt): composition sanitizes it. Thumbnail, when
// set, is shown above the excerpt at digestThumbWidth, the same for every
// entry; every enclosure is linked. Player (the item's media player) and
// ContentHTML (its content as the feed gave it) tell whether the item is a
// video: it then gets a play mark and a "Watch on …" link.
type DigestItem struct {
	Title, Link, ExcerptHTML string
	Published                time.Time
	Thumbnail                string
	Enclosures               []model.Enclosure
	Player, ContentHTML      string
}

// ErrEmptyDigest is returned for a digest without items: an empty slot sends
// nothing.
var ErrEmptyDigest = errors.New("digest has no items")

// digestView is the data of the digest templates; digestFeedView and
// digestItemView are its sections.
type digestView struct {
	Title, Heading, Summary string
	Feeds                   []digestFeedView
	Footer                  footerView
}

type digestFeedView struct {
	Title, SiteURL string
	Anchor         string // id of the feed's section, for the table of contents
	Count          string // "3 new posts"
	Items          []digestItemView
	// More is "and 5 more posts from Blog" when the cap left posts out,
	// MoreURL where they are.
	More, MoreURL string
}

type digestItemView struct {
	Title, Link, Date string
	Excerpt           htmltemplate.HTML
	ExcerptText       string
	Enclosures        []enclosureView
	OpenPost          Link
	NoText            bool
}

// digestItemView returns the view of one digest entry: its title, link,
// date, excerpt under its thumbnail (one size for all), enclosures, and
// the link that stands in when it shows nothing else; a video says where
// it plays ("Watch on YouTube") in place of "Open the post".
func digestItemOf(it DigestItem, site string, loc *time.Location) digestItemView {
	base := itemBase(it.Link, site)
	t := cleanHeaderText(plainTitle(it.Title), maxBodyTitle)
	if t == "" {
		t = "Untitled post"
	}
	link := ""
	if strings.TrimSpace(it.Link) != "" {
		link = bodyURL(base, false)
	}
	var video *videoPost
	if v, ok := postVideo(link, it.ContentHTML, model.ItemMedia{Enclosures: it.Enclosures, Player: it.Player}); ok {
		video = &v
	}
	c := withThumbnail(it.ExcerptHTML, thumbnail{Src: it.Thumbnail, Link: link, Alt: t, Width: digestThumbWidth, Video: video}, base)
	iv := digestItemView{
		Title: t, Link: link, Date: formatDate(it.Published, loc),
		Excerpt: htmltemplate.HTML(c.HTML), ExcerptText: c.Text, // sanitized by PrepareHTML, thumbnail ours
		Enclosures: enclosureViews(it.Enclosures),
	}
	switch {
	case video != nil && link != "":
		iv.OpenPost = Link{Label: video.Watch(), URL: link}
	case c.Empty() && len(iv.Enclosures) == 0 && link != "":
		iv.OpenPost = Link{Label: "Open the post", URL: link}
	case c.Empty() && len(iv.Enclosures) == 0:
		iv.NoText = true
	}
	return iv
}

// digestFeedOf returns the section of feed f (with at least one item),
// anchored at anchor: its title (else its site's host), its entries, their
// count (every new post, those the cap left out included), and the line
// that tells of the posts left out, linked to where the reader finds them.
func digestFeedOf(f DigestFeed, anchor string, loc *time.Location) digestFeedView {
	site := bodyURL(f.SiteURL, false)
	title := cleanHeaderText(plainTitle(f.Title), maxBodyTitle)
	if title == "" {
		title = firstNonEmpty(hostOf(site), "Untitled feed")
	}
	fv := digestFeedView{Title: title, SiteURL: site, Anchor: anchor}
	for _, it := range f.Items {
		fv.Items = append(fv.Items, digestItemOf(it, site, loc))
	}
	fv.Count = plural(len(fv.Items)+f.More, "new post", "new posts")
	if f.More > 0 {
		fv.More = "and " + plural(f.More, "more post", "more posts") + " from " + title
		fv.MoreURL = firstNonEmpty(site, bodyURL(f.FeedURL, false))
	}
	return fv
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
	items := 0 // every new post, those the per-feed cap left out included
	for _, f := range e.Feeds {
		if len(f.Items) == 0 {
			continue
		}
		fv := digestFeedOf(f, fmt.Sprintf("feed-%d", len(feeds)+1), e.Location)
		items += len(fv.Items) + f.More
		feeds = append(feeds, fv)
	}
	if len(feeds) == 0 {
		return nil, ErrEmptyDigest
	}
	label := digestLabel(e.DigestName)
	summary := plural(items, "new post", "new posts") + " from " + plural(len(feeds), "feed", "feeds")
	subject := "Your " + label + ": " + summary
	if e.Edition != "" {
		subject = "Your " + label + ", " + e.Edition + ": " + summary
	}
	view := digestView{
		Title:   subject,
		Heading: "Your " + label,
		Summary: summary,
		Feeds:   feeds,
		Footer: footerView{
			To:             strings.TrimSpace(e.To),
			ManageURL:      bodyURL(e.Footer.ManageURL, false),
			UnsubscribeURL: bodyURL(e.Footer.UnsubscribeURL, false),
			DigestLabel:    label,
		},
	}
	htmlPart, textPart, err := tpl.render("digest", view, 0, 0)
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
