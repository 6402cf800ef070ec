package channel

import (
	"net/url"
	"strconv"
	"strings"
)

// Lines renders a delivery as short lines of text for chat services: a
// post as its title, feed and link, then its text up to max runes; an
// issue as its name and edition, then one line per post. link formats a
// title with its URL in the service's markup.
func Lines(d Delivery, max int, link func(title, url string) string) []string {
	if d.Post != nil {
		p := *d.Post
		out := []string{link(TitleOf(p), p.Link) + " — " + FeedName(p.Feed)}
		if t := strings.TrimSpace(p.Text); t != "" {
			out = append(out, Clip(t, max))
		}
		for _, e := range p.Media.Enclosures {
			out = append(out, link("Attachment ("+e.Type+")", e.URL))
		}
		return out
	}
	if d.Issue == nil {
		return nil
	}
	out := []string{d.Issue.Name + " — " + d.Issue.Edition}
	for _, f := range d.Issue.Feeds {
		out = append(out, FeedName(f.Feed)+":")
		for _, p := range f.Posts {
			out = append(out, "• "+link(TitleOf(p), p.Link))
		}
		if m := MoreLine(f); m != "" {
			out = append(out, link(m, FeedLink(f.Feed)))
		}
	}
	return out
}

// MoreLine returns the words that tell of the posts an issue left out of
// feed f: "and 5 more posts from Blog" ("1 more post" for one), "" when
// none were, as the digest email says it.
func MoreLine(f IssueFeed) string {
	switch {
	case f.More <= 0:
		return ""
	case f.More == 1:
		return "and 1 more post from " + FeedName(f.Feed)
	}
	return "and " + strconv.Itoa(f.More) + " more posts from " + FeedName(f.Feed)
}

// FeedLink returns where a reader finds a feed's posts: its site when
// that is an http(s) URL (a feed may give anything), else the feed itself.
func FeedLink(f Feed) string {
	if u, err := url.Parse(strings.TrimSpace(f.SiteURL)); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return u.String()
	}
	return f.URL
}

// Subject is a delivery's one-line heading: a post's title, or an issue's
// name and edition.
func Subject(d Delivery) string {
	switch {
	case d.Post != nil:
		return TitleOf(*d.Post)
	case d.Issue != nil:
		return d.Issue.Name + " — " + d.Issue.Edition
	}
	return ""
}
