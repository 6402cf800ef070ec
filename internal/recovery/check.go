package recovery

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/feedmail/feedmail/internal/newitems"
)

// ErrNotAFeed is returned by Check for an address that does not answer a
// feed.
var ErrNotAFeed = errors.New("not a feed")

// Check fetches url once, the new address a person named (the feed's
// publisher or the operator moving its readers), and judges it against
// the old feed k as Attempt judges its candidates: posts in common, same
// title, same site. A person's word stands in for a redirect: another
// site is allowed, and the verdict only informs (Same with posts in
// common, else Probably). It fails with the fetch's error, or
// ErrNotAFeed for an answer that is not a feed.
func Check(ctx context.Context, k Known, fetch Fetch, url string) (Candidate, error) {
	resp, err := fetch(ctx, url)
	if err != nil {
		return Candidate{}, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return Candidate{}, fmt.Errorf("%w: %s answered %d %s", ErrNotAFeed, url, resp.Status, http.StatusText(resp.Status))
	}
	f, err := newitems.Parse(resp.Body, resp.ContentType, resp.FinalURL)
	if err != nil {
		return Candidate{}, fmt.Errorf("%w: %s: %w", ErrNotAFeed, url, err)
	}
	target := url
	if resp.PermanentURL != "" {
		target = resp.PermanentURL
	}
	c := Candidate{URL: target, FoundBy: "named by hand", Resp: resp, Parsed: f,
		PostsInCommon: postsInCommon(k.Items, f.Items),
		SameTitle:     normTitle(f.Title) != "" && normTitle(f.Title) == normTitle(k.Title),
		SameSite:      allowedDomains(k).has(target), Verdict: Probably}
	if n := newest(f.Items); !n.IsZero() {
		c.Newest = &n
	}
	if c.PostsInCommon > 0 {
		c.Verdict = Same
	}
	return c, nil
}
