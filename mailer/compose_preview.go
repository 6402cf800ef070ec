package mailer

import (
	"strings"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// ItemEmailOf returns the email of item it of feed f for subscription
// subID in format, dated in loc, without the reader's own parts (To and
// the account and unsubscribe links): the outbox adds the reader's, a
// preview its placeholders (PreviewItem), so both compose the same email.
func ItemEmailOf(s Sender, l links.Links, f *store.Feed, it *store.Item, subID int64, format string,
	loc *time.Location, now time.Time) ItemEmail {
	e := ItemEmail{
		FeedTitle: f.Title,
		FeedURL:   f.URL,
		ListID:    s.FeedListID(f.ID),
		MessageID: s.ItemMessageID(subID, it.ID),
		Date:      now,
		ItemTitle: it.Title,
		ItemLink:  it.Link,
		ItemHTML:  it.Content,
		Media:     it.Media,
		Format:    format,
		Author:    it.Author,
		Location:  loc,
		Footer:    Footer{FeedTitle: f.Title, FeedURL: f.URL, SiteURL: f.SiteURL},
	}
	if it.PublishedAt != nil {
		e.Published = *it.PublishedAt
	}
	if l.Base != "" {
		e.Footer.StatusURL = l.Status(f.URL)
	}
	return e
}

// PreviewAddress stands for the reader's address in a preview.
const PreviewAddress = "you@example.com"

// previewToken stands for a signed token in a preview's links.
const previewToken = "your-own-link"

// PreviewLinks returns what a preview shows for the reader's account and
// unsubscribe links: addresses of the right form under l.Base (or
// localhost without one) whose token says it is the reader's own.
func PreviewLinks(l links.Links) (manage, unsubscribe string) {
	base := strings.TrimRight(l.Base, "/")
	if base == "" {
		base = "http://localhost"
	}
	return base + links.Fill(links.PathAccount, previewToken), base + links.Fill(links.PathUnsubscribe, previewToken)
}

// PreviewItem composes the email a reader in loc subscribed to f in
// format would get for it, as the outbox composes it (ItemEmailOf,
// Sender.Item), with placeholders for the reader's own parts. art is
// the post's article for the "article" format (nil: none could be read,
// as when the outbox gives up waiting).
func (s Sender) PreviewItem(l links.Links, f *store.Feed, it *store.Item, format string, loc *time.Location,
	art *store.ItemArticle, now time.Time) (*mail.Msg, error) {
	e := ItemEmailOf(s, l, f, it, 0, format, loc, now)
	e.To = PreviewAddress
	e.Footer.ManageURL, e.Footer.UnsubscribeURL = PreviewLinks(l)
	if format == store.FormatArticle && art != nil && art.State == store.ArticleReady {
		e.Article, e.ArticleURL = art.HTML, art.URL
	}
	return s.Item(e)
}

// PreviewDigest composes issue c as the digest renderer does
// (DigestEmailOf, Sender.Digest), with placeholders for the reader's
// own parts. It returns ErrEmptyDigest when no feed has items.
func (s Sender) PreviewDigest(l links.Links, c *store.IssueContent, now time.Time) (*mail.Msg, error) {
	e := DigestEmailOf(c, PreviewAddress, s, l, now)
	e.Footer.ManageURL, e.Footer.UnsubscribeURL = PreviewLinks(l)
	return s.Digest(e)
}
