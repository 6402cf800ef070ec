package recovery

import (
	"context"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/newitems"
)

// Known is what feedmail knows of the old feed (from the store).
type Known struct {
	URL          string
	SiteURL      string // the feed's <link>/home page as last parsed, may be ""
	Title        string
	PermanentURL string // last 301/308 Location seen for the feed, may be ""
	// SelfURL and HubURL are from the last parse, may be "". The hub is not
	// a feed: only the self link becomes a candidate.
	SelfURL, HubURL string
	Items           []KnownItem // the feed's recent items (up to ~100), newest first
	// Frozen: the old feed still answers 200; look for a NEWER feed on its
	// site (and do not ask the old URL again).
	Frozen         bool
	NewestItemDate time.Time // newest item date of the old feed (for Frozen)
	// RedirectedTo lists hosts (or URLs) the old host itself permanently
	// redirected to; Attempt adds those it sees when it asks the old URL and
	// the old origin.
	RedirectedTo []string
}

// KnownItem is one recent item of the old feed.
type KnownItem struct {
	GUID, Link, Title string
	Published         time.Time
}

// KnownFromFeed returns what a good poll of url that parsed as f tells:
// title, site, self and hub links, the items (at most MaxKnownItems, in
// document order) and the newest item date.
func KnownFromFeed(url string, f *newitems.Feed) Known {
	k := Known{URL: url, SiteURL: f.SiteURL, Title: f.Title, SelfURL: f.SelfURL, HubURL: f.HubURL}
	for i, it := range f.Items {
		if i == MaxKnownItems {
			break
		}
		k.Items = append(k.Items, KnownItem{GUID: it.GUID, Link: it.Link, Title: it.Title, Published: it.Published})
		if it.Published.After(k.NewestItemDate) {
			k.NewestItemDate = it.Published
		}
	}
	return k
}

// MaxKnownItems is how many of the old feed's items the comparison uses.
const MaxKnownItems = 100

// Fetch fetches one URL: a polite GET through the fetcher's guarded client
// and the poller's host limits.
type Fetch func(ctx context.Context, url string) (*fetcher.Response, error)

// Candidate is one address that might be the feed's new home, with the
// evidence and the verdict on it.
type Candidate struct {
	URL           string     `json:"url"`      // the feed URL to move to (after permanent redirects only)
	FoundBy       string     `json:"found_by"` // "homepage <link rel=alternate>", "https variant", ...
	PostsInCommon int        `json:"posts_in_common"`
	SameTitle     bool       `json:"same_title"`
	SameSite      bool       `json:"same_site"`
	Newest        *time.Time `json:"newest,omitempty"`
	// Verdict is "same", "probably", or "rejected: <why>".
	Verdict string `json:"verdict"`
	// Resp and Parsed are the fetched answer and its parse (nil when the
	// candidate was rejected without a request), so the caller can prime
	// the new feed without asking again.
	Resp   *fetcher.Response `json:"-"`
	Parsed *newitems.Feed    `json:"-"`
}

// Result is what one attempt found.
type Result struct {
	// Verdict is "moved" (a "same" candidate), "offered" (a "probably"
	// one) or "none".
	Verdict    string      `json:"verdict"`
	To         string      `json:"to,omitempty"`
	Candidates []Candidate `json:"candidates"`
	// Old is what the old URL answered when the attempt asked it again
	// ("feed", "status 404", "an HTML page", "dns", "tls", ...); "" when it
	// was not asked (a frozen feed).
	Old string `json:"old,omitempty"`
	// RedirectedTo lists the hosts the old URL, its origin or its site's
	// homepage permanently redirected to during the attempt (candidates may
	// live there).
	RedirectedTo []string `json:"redirected_to,omitempty"`
	// Tried is every URL requested, redirect hops included, in order.
	Tried []string `json:"tried"`
	// Requests is len(Tried): the requests this attempt cost publishers.
	Requests int `json:"requests"`
}

// Verdicts of a Result.
const (
	Moved   = "moved"
	Offered = "offered"
	None    = "none"
)

// Verdicts of a Candidate that are not rejections.
const (
	Same     = "same"
	Probably = "probably"
)

// MaxRequests is the default and largest budget of one attempt.
const MaxRequests = 12
