package channel

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/model"
)

// MaxTargetLen is the longest target URL a person may give, in bytes,
// whichever way they give it (command, form, API).
const MaxTargetLen = 2000

// CheckURL returns raw as an absolute http(s) URL with a host, at most
// MaxTargetLen long, or an ErrBadTarget error that says what is wrong.
// Whether its address may be reached is decided when it is dialled (the
// guarded client).
func CheckURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return "", fmt.Errorf("%w: a target URL is needed (--target)", ErrBadTarget)
	case len(raw) > MaxTargetLen:
		return "", fmt.Errorf("%w: the target URL is %d characters long; at most %d are taken", ErrBadTarget, len(raw), MaxTargetLen)
	case err != nil:
		return "", fmt.Errorf("%w: %q is not a URL", ErrBadTarget, raw)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return "", fmt.Errorf("%w: %q is not an http(s) URL", ErrBadTarget, raw)
	case u.User != nil:
		return "", fmt.Errorf("%w: %q carries a user name or password; give a token instead", ErrBadTarget, raw)
	}
	return u.String(), nil
}

// PostJSON is the JSON form of a post in the bodies of the webhook
// channel (and a base for others).
type PostJSON struct {
	Feed        Feed              `json:"feed"`
	Title       string            `json:"title"`
	Link        string            `json:"link,omitempty"`
	Author      string            `json:"author,omitempty"`
	Published   *time.Time        `json:"published,omitempty"`
	Seen        *time.Time        `json:"seen,omitempty"`
	ContentHTML string            `json:"content_html,omitempty"`
	ContentText string            `json:"content_text,omitempty"`
	Enclosures  []model.Enclosure `json:"enclosures,omitempty"`
	Thumbnail   string            `json:"thumbnail,omitempty"`
}

// JSONOf returns p's JSON form.
func JSONOf(p Post) PostJSON {
	j := PostJSON{Feed: p.Feed, Title: p.Title, Link: p.Link, Author: p.Author, ContentHTML: p.HTML, ContentText: p.Text,
		Enclosures: p.Media.Enclosures, Thumbnail: p.Media.Thumbnail}
	if !p.Published.IsZero() {
		t := p.Published.UTC()
		j.Published = &t
	}
	if !p.Seen.IsZero() {
		t := p.Seen.UTC()
		j.Seen = &t
	}
	return j
}

// TitleOf is a post's title, or its link, or "(untitled)".
func TitleOf(p Post) string {
	switch {
	case strings.TrimSpace(p.Title) != "":
		return strings.TrimSpace(p.Title)
	case p.Link != "":
		return p.Link
	}
	return "(untitled)"
}

// FeedName is a feed's title, or its URL.
func FeedName(f Feed) string {
	if strings.TrimSpace(f.Title) != "" {
		return strings.TrimSpace(f.Title)
	}
	return f.URL
}

// Clip cuts s to at most n runes, with "…" when it was longer (n <= 0:
// no limit).
func Clip(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if n <= 0 || len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}
