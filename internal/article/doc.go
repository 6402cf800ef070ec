// Package article reads the main text of a post's page for subscriptions
// whose format is "article": it fetches the page through package fetcher
// (same client, limits and private-network guard as feeds) after asking
// the host's robots.txt (cached per host), and extracts the article with
// a readability parser (Extract, pure). It also judges whether a feed's
// posts look cut short, so that the article format is worth suggesting
// (Truncated, pure).
//
// It must not schedule anything, touch the store, sanitize for email or
// decide a host's politeness: package poller decides when a page may be
// fetched and records the result, package mailer sanitizes the article
// like any feed content when it renders an email.
package article

import "time"

// Wait is how long an email that wants its post's article waits for it,
// from when the post was found: past it the email goes out with the
// feed's own content, and a page not fetched by then is not fetched at
// all. Three minutes covers a fetch (PageTimeout), a retry of the worker
// after a crash (its lease) and a host busy with other requests, while
// keeping the email close to instant.
const Wait = 3 * time.Minute
