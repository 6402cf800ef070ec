package mailer

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// Rendering defaults.
const (
	// DefaultPerFeed is how many items of one feed a digest email shows (the
	// newest). An issue that waited long for credits can hold hundreds; the
	// email stays readable and the feed's link leads to the rest.
	DefaultPerFeed = 20
	// ExcerptLen is the longest excerpt shown under an item, in characters.
	ExcerptLen = 280
)

// DigestRenderConfig is what the digest renderer needs. Store and Links are
// required.
type DigestRenderConfig struct {
	Store  *store.Store
	Sender Sender
	Links  links.Links
	Clock  clock.Clock
	// PerFeed caps the items shown per feed (default DefaultPerFeed).
	PerFeed int
}

// NewDigestRenderer returns the outbox renderer for rows of kind "digest": it
// loads the row's issue when the email is rendered (so an issue that waited
// for credits is sent with everything it holds) and composes it with
// [Sender.Digest], with one Message-ID per issue so retries thread.
// Items of ended subscriptions are left out; an issue left empty is
// cancelled (ErrCancelled), neither sent nor charged; a database
// error is temporary (ErrTemporary), so the outbox retries the row.
func NewDigestRenderer(cfg DigestRenderConfig) Renderer {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.PerFeed <= 0 {
		cfg.PerFeed = DefaultPerFeed
	}
	return func(ctx context.Context, row *store.OutboxRow) (*mail.Msg, error) {
		if row == nil || row.IssueID == nil {
			return nil, errors.New("digest render: outbox row without an issue")
		}
		c, err := cfg.Store.DigestIssueContent(ctx, *row.IssueID, cfg.PerFeed)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, fmt.Errorf("digest render: %w: %w", ErrCancelled, err)
		case err != nil:
			return nil, fmt.Errorf("digest render: %w: %w", ErrTemporary, err)
		}
		e := DigestEmailOf(c, row.Address, cfg.Sender, cfg.Links, cfg.Clock.Now())
		e.Footer.UnsubscribeMailto = cfg.Links.UnsubscribeMailto(row.ID)
		m, err := cfg.Sender.Digest(e)
		if errors.Is(err, ErrEmptyDigest) {
			return nil, fmt.Errorf("digest render: issue %d: %w: %w", *row.IssueID, ErrCancelled, err)
		}
		if err != nil {
			return nil, fmt.Errorf("digest render: issue %d: %w", *row.IssueID, err)
		}
		return m, nil
	}
}

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
		df := DigestFeed{Title: f.Title, SiteURL: f.SiteURL}
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
