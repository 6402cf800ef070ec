package channel

import (
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
	}
	return out
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
