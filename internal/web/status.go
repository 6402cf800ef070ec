package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// statusPolls is how many recent polls the status page lists.
const statusPolls = 20

// statusData is the public status page of a feed. It holds nothing about
// subscribers except whether anyone follows the feed at all (which decides
// whether it is polled, and which publishers see in our User-Agent anyway).
type statusData struct {
	URL        string
	Found      bool
	Feed       *store.Feed
	Polls      []statusPoll
	Now        time.Time
	StateWords string
	NextWords  string // "in 12 min (14:05 UTC)"
	Reason     string // the poller's reason, as stored
	// LastProblem labels the feed's last_error: "Error" after a failed
	// poll, "Warning" after a success whose document was cut short or held
	// items the parser did not find (the poller keeps that in last_error).
	LastProblem string
	ReasonPlain string // the same in plain words
	Followed    bool
	WebSub      string
	Advice      []string
	PingURL     string
	// Health says, when the feed is not simply healthy, whether it fails
	// for longer than an outage, stands still while its site has a newer
	// feed, or moved, and what rediscovery found ("" when all is well).
	Health string
	// CutShort says why the feed's posts look cut short ("" when they do
	// not): the article format helps its readers.
	CutShort string
}

// statusPoll is a poll_log line with the identical polls folded into it
// (store.Repeats).
type statusPoll struct {
	store.PollLog
	Repeats int64
}

// statusCacheTTL is how long a rendered status page is reused; it is also
// the max-age the page is sent with. The page is public and the same for
// everyone, so a popular feed's page costs the database one visit per TTL.
const statusCacheTTL = 10 * time.Second

// statusCacheMax bounds the number of cached pages.
const statusCacheMax = 5000

// feedStatus is GET /feeds/status?url=…: why a feed is polled when it is.
func (s *Server) feedStatus(w http.ResponseWriter, r *http.Request) {
	raw := clip(strings.TrimSpace(r.URL.Query().Get("url")), 2048)
	if raw == "" {
		w.Header().Set("Cache-Control", "no-cache")
		s.render(w, r, http.StatusOK, "status", "Feed status", statusData{Now: s.Clock.Now()})
		return
	}
	page, err := s.status.get(raw, s.Clock.Now(), func() (cachedPage, error) { return s.renderStatus(r.Context(), raw) })
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age="+itoa(int(statusCacheTTL/time.Second)))
	s.writePage(w, r, page.status, page.body)
}

// renderStatus renders the status page of raw (a 404 page when feedmail
// does not follow it).
func (s *Server) renderStatus(ctx context.Context, raw string) (cachedPage, error) {
	d := statusData{URL: raw, Now: s.Clock.Now()}
	f, polls, err := s.Store.FeedForStatus(ctx, raw, statusPolls)
	if errors.Is(err, store.ErrNotFound) {
		// Try what a person may have typed without the scheme.
		if u, msg := subscribe.NormalizeFeedURL(raw); msg == "" && u != raw {
			f, polls, err = s.Store.FeedForStatus(ctx, u, statusPolls)
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		b, err := s.renderBytes("status", "Feed status", d)
		return cachedPage{status: http.StatusNotFound, body: b}, err
	}
	if err != nil {
		return cachedPage{}, err
	}
	d.Found, d.Feed, d.URL = true, f, f.URL
	for i, n := range store.Repeats(f, polls) {
		d.Polls = append(d.Polls, statusPoll{PollLog: polls[i], Repeats: n})
	}
	d.Followed = f.SubscriberCount > 0
	d.Reason = f.PollReason
	if d.Followed && f.State == store.FeedActive {
		// "Why then" explains the next poll; a feed nobody follows has none.
		d.ReasonPlain = plainReason(f.PollReason)
	}
	d.LastProblem = "Error"
	if f.ConsecutiveErrors == 0 {
		d.LastProblem = "Warning"
	}
	d.StateWords = stateWords(f, d.Followed)
	if f.State == store.FeedActive && d.Followed {
		if f.NextPollAt.After(d.Now) {
			d.NextWords = agoWords(f.NextPollAt, d.Now) + " (" + fmtTime(f.NextPollAt) + ")"
		} else {
			d.NextWords = "due now (since " + fmtTime(f.NextPollAt) + ")"
		}
	}
	d.WebSub = webSubWords(f, d.Now)
	d.Health = healthWords(f, d.Now)
	d.Advice = publisherAdvice(f)
	if d.CutShort, err = s.cutShort(ctx, f.ID); err != nil {
		return cachedPage{}, err
	}
	d.PingURL = s.Config.BaseURL + links.PathPing + "?url=" + url.QueryEscape(f.URL)
	b, err := s.renderBytes("status", "Feed status: "+orURL(f.Title, f.URL), d)
	return cachedPage{status: http.StatusOK, body: b}, err
}

// cachedPage is a rendered page and its status code.
type cachedPage struct {
	status int
	body   []byte
}

// pageCache keeps rendered pages for a short time, and makes concurrent
// misses for one key wait for a single rendering.
type pageCache struct {
	ttl time.Duration
	max int
	mu  sync.Mutex
	m   map[string]*cacheEntry
}

type cacheEntry struct {
	ready   chan struct{} // closed when page/err are set
	page    cachedPage
	err     error
	expires time.Time
}

func newPageCache(ttl time.Duration, max int) *pageCache {
	return &pageCache{ttl: ttl, max: max, m: map[string]*cacheEntry{}}
}

// get returns the cached page for key, or renders it with fill. Errors are
// not cached.
func (c *pageCache) get(key string, now time.Time, fill func() (cachedPage, error)) (cachedPage, error) {
	if c.ttl <= 0 {
		return fill()
	}
	c.mu.Lock()
	if e, ok := c.m[key]; ok && (e.expires.IsZero() || now.Before(e.expires)) {
		c.mu.Unlock()
		<-e.ready
		return e.page, e.err
	}
	if len(c.m) >= c.max {
		for k, e := range c.m {
			if !e.expires.IsZero() && !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= c.max {
			clear(c.m)
		}
	}
	e := &cacheEntry{ready: make(chan struct{})}
	c.m[key] = e
	c.mu.Unlock()

	// Waiters are released even if fill panics (they get an error then).
	e.err = errors.New("page rendering did not finish")
	defer func() {
		c.mu.Lock()
		if e.err != nil {
			delete(c.m, key)
		} else {
			e.expires = now.Add(c.ttl)
		}
		c.mu.Unlock()
		close(e.ready)
	}()
	e.page, e.err = fill()
	return e.page, e.err
}

func stateWords(f *store.Feed, followed bool) string {
	switch f.State {
	case store.FeedGone:
		return "Gone: the server answered 410 Gone, so we stopped polling it for good and told its subscribers."
	case store.FeedBlacklisted:
		return "Stopped: this feed answered nothing but errors for 90 days, so we stopped polling it. A ping from the publisher (once the feed works again) starts it again."
	}
	if !followed {
		return "Not polled: nobody gets this feed by email at the moment, so we do not fetch it."
	}
	if f.ConsecutiveErrors > 0 {
		return "Having trouble: the last " + plural(f.ConsecutiveErrors, "poll", "polls") + " failed; we keep trying, less often."
	}
	if f.LastPolledAt == nil {
		return "New: we have not polled it yet; the first poll is due soon."
	}
	return "Active: polled regularly."
}

func webSubWords(f *store.Feed, now time.Time) string {
	switch {
	case store.WebSubActive(f, now):
		w := "Active with hub " + f.WebSubHub + ": new posts reach us as soon as you publish them; we poll only weekly as a backup."
		if f.WebSubExpiresAt != nil {
			w += " Subscription renews before " + fmtTime(f.WebSubExpiresAt) + "."
		}
		return w
	case f.WebSubHub != "" && f.WebSubState != "":
		return "Hub " + f.WebSubHub + " found; subscription state: " + f.WebSubState + "."
	case f.WebSubHub != "":
		return "Hub " + f.WebSubHub + " found; not subscribed yet."
	}
	return "No WebSub hub: we learn about new posts by polling."
}

// publisherAdvice lists what the feed's publisher can do to be polled sooner
// (and more cheaply for their server).
func publisherAdvice(f *store.Feed) []string {
	var a []string
	if f.WebSubState != "active" {
		a = append(a, "Add a WebSub hub to your feed (<link rel=\"hub\" href=\"…\"> or an HTTP Link header): your new posts then reach subscribers within seconds, and we poll only weekly.")
	}
	if f.ETag == "" && f.LastModified == "" {
		a = append(a, "Send an ETag or Last-Modified header: we send them back, your server can answer 304 Not Modified without a body, and together with a fast answer we check every 5 minutes instead of every 15 or 60.")
	}
	if f.LastElapsedMS >= 1000 {
		a = append(a, "Answer faster: your feed took "+durWords(time.Duration(f.LastElapsedMS)*time.Millisecond)+" last time; feeds that answer in under a second can be checked every 5 minutes.")
	}
	a = append(a,
		"Ping us when you publish: a GET or POST to the ping address below (or weblogUpdates.ping to /RPC2) makes us fetch the feed at once.",
		"If you send Cache-Control: max-age (or Expires), we follow it, up to 24 hours: a shorter max-age means more frequent checks (never more often than every 5 minutes).")
	return a
}

// plainReason turns the poller's reason into a sentence for publishers. The
// original is shown too, so nothing is lost when a pattern is not known.
func plainReason(r string) string {
	switch {
	case r == "":
		return ""
	case strings.HasPrefix(r, "refused by this installation"):
		return "This feedmail does not visit private or local network addresses unless its operator sets FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1; the refusal costs the feed no penalty."
	case strings.HasPrefix(r, "new feed"):
		return "This feed is new to us: the first poll comes as soon as someone confirms a subscription."
	case strings.HasPrefix(r, "WebSub active"):
		return "Your hub tells us about new posts the moment you publish, so we only poll once a week as a backup."
	case strings.HasPrefix(r, "Cache-Control max-age="):
		return "Your Cache-Control header (" + firstClause(r) + ") asks us to wait; we do" + restAfterClause(r) + "."
	case strings.HasPrefix(r, "Expires"):
		return "Your Expires header (" + firstClause(r) + ") says when the feed changes next; we wait until then" + restAfterClause(r) + "."
	case strings.HasPrefix(r, "default "):
		return "You sent no caching headers, so we use our default: " + strings.TrimPrefix(r, "default ") + "."
	case strings.HasPrefix(r, "inactive for "):
		return "No new post for " + strings.TrimPrefix(strings.SplitN(r, ":", 2)[0], "inactive for ") +
			", so we check less often (" + strings.TrimSpace(strings.SplitN(r+":", ":", 3)[1]) + "). A new post brings the usual pace back."
	case strings.HasPrefix(r, "410"):
		return "Your server answered 410 Gone: we stopped polling and told subscribers."
	case strings.HasPrefix(r, "blacklisted"):
		return "Every poll failed for 90 days, so we stopped. A ping, once the feed works, starts polling again."
	case strings.Contains(r, ": penalty "):
		what, rest, _ := strings.Cut(r, ": penalty ")
		return what + ": we'll try again in " + rest + "."
	case strings.Contains(r, ": Retry-After "):
		what, rest, _ := strings.Cut(r, ": Retry-After ")
		return what + ": your Retry-After asks us to wait " + rest + ", so we do."
	case strings.HasPrefix(r, "host minimum interval"):
		return "The operator of this feedmail asked that your server be polled at most this often: " + r + "."
	}
	return r
}

// firstClause is the part of a reason before the first ", ".
func firstClause(r string) string {
	c, _, _ := strings.Cut(r, ", ")
	return c
}

// restAfterClause is ", capped at 24 h" and the like, or "".
func restAfterClause(r string) string {
	if _, rest, ok := strings.Cut(r, ", "); ok {
		return " (" + rest + ")"
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(n) + " " + many
}
