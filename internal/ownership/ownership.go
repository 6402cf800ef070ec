// Package ownership lets a publisher prove that they control a feed: they
// place a claim token in the feed's own metadata or at the well-known URL
// of the feed's host, and Check finds it. It owns the token's form, where
// it is looked for and what counts as found.
//
// It must not touch the database or decide who pays (package billing and
// the store do), and fetches only through the fetcher it is given (the
// feed fetcher, with its limits and private-network guard).
package ownership

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/feedmail/feedmail/internal/fetcher"
)

// TokenPrefix starts every claim token.
const TokenPrefix = "feedmail-verify-"

// WellKnownPath is where on the feed's host a token may be placed instead.
const WellKnownPath = "/.well-known/feedmail-verify"

// Where the token was found (store.OwnerByFeed, OwnerByWellKnown).
const (
	InFeed      = "feed"
	AtWellKnown = "well-known"
)

// ErrNotFound: the token is neither in the feed's metadata nor at the
// well-known URL.
var ErrNotFound = errors.New("claim token not found")

// NewToken returns a fresh, unguessable claim token.
func NewToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return TokenPrefix + hex.EncodeToString(b[:])
}

// WellKnownURL returns the well-known URL on feedURL's host (same scheme
// and port), or "" when feedURL is not an absolute http(s) URL.
func WellKnownURL(feedURL string) string {
	u, err := url.Parse(feedURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + WellKnownPath
}

// itemStarts mark where a feed's items begin: a token found after the
// first of them could have come from a post's content or a comment, which
// people other than the publisher may write.
var itemStarts = [][]byte{[]byte("<item"), []byte("<entry"), []byte(`"items"`)}

// InFeedMetadata reports whether token appears in body before its first
// item (RSS <item>, Atom <entry>, JSON Feed "items"): in the channel's
// own elements, a <link>, or a comment there.
func InFeedMetadata(body []byte, token string) bool {
	if token == "" {
		return false
	}
	head := body
	lower := bytes.ToLower(body)
	for _, m := range itemStarts {
		if i := bytes.Index(lower, m); i >= 0 && i < len(head) {
			head = body[:i]
		}
	}
	return bytes.Contains(head, []byte(token))
}

// AtWellKnownBody reports whether the well-known file's body holds token
// (on a line of its own or anywhere: the file is the host owner's alone).
func AtWellKnownBody(body []byte, token string) bool {
	return token != "" && bytes.Contains(body, []byte(token))
}

// Fetcher is the part of *fetcher.Client Check uses.
type Fetcher interface {
	Fetch(ctx context.Context, r fetcher.Request) (*fetcher.Response, error)
}

// Check looks for token in feedURL's metadata, then at the well-known URL
// of its host (an answer redirected to another host does not count), and
// returns where it found it (InFeed or AtWellKnown). It fails with
// ErrNotFound, with what it saw, when neither has it.
func Check(ctx context.Context, f Fetcher, feedURL, token string) (string, error) {
	var seen []string
	resp, err := f.Fetch(ctx, fetcher.Request{URL: feedURL})
	switch {
	case err != nil:
		seen = append(seen, "the feed could not be fetched ("+fetcher.Describe(err).Reason+")")
	case resp.Status/100 != 2:
		seen = append(seen, fmt.Sprintf("the feed answered %d", resp.Status))
	case InFeedMetadata(resp.Body, token):
		return InFeed, nil
	default:
		seen = append(seen, "the feed does not carry the token before its first post")
	}
	wk := WellKnownURL(feedURL)
	resp, err = f.Fetch(ctx, fetcher.Request{URL: wk})
	switch {
	case err != nil:
		seen = append(seen, wk+" could not be fetched ("+fetcher.Describe(err).Reason+")")
	case resp.Status/100 != 2:
		seen = append(seen, fmt.Sprintf("%s answered %d", wk, resp.Status))
	case !sameHost(resp.FinalURL, wk):
		seen = append(seen, wk+" redirects to another host")
	case AtWellKnownBody(resp.Body, token):
		return AtWellKnown, nil
	default:
		seen = append(seen, wk+" does not hold the token")
	}
	return "", fmt.Errorf("%w: %s", ErrNotFound, strings.Join(seen, "; "))
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Host, ub.Host)
}
