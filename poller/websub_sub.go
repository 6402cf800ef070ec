package poller

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/websub"
)

// Timings of the WebSub subscriber. The spec gives renewal at half the lease
// and "denied → retry in a week"; the rest are choices.
const (
	// DefaultWebSubLease is the lease asked of hubs (hub.lease_seconds):
	// ten days, so a subscription is renewed every five. Hubs may grant
	// another one; RenewAt follows what they grant.
	DefaultWebSubLease = 10 * 24 * time.Hour
	// WebSubDeniedRetry: after hub.mode=denied the feed is polled as usual
	// and the subscription is tried again this much later.
	WebSubDeniedRetry = store.WebSubDeniedRetry
	// WebSubFailedRetry: after a hub refused the request (non-2xx), could
	// not be reached, never verified a request, or let a lease lapse, the
	// feed is polled as usual and the subscription tried again this much later.
	WebSubFailedRetry = store.WebSubFailedRetry
	// WebSubVerifyTimeout is how long a hub has to verify a (un)subscription
	// request it accepted; it is also the claim lease of the renewal loop,
	// so a renewal that was accepted but not verified is retried this often
	// until the lease runs out.
	WebSubVerifyTimeout = store.WebSubVerifyTimeout
	// WebSubUnknownLeaseExpiry is how long a subscription verified without
	// hub.lease_seconds counts as active: it is renewed daily (RenewAt), and
	// if two days pass without a verification the feed goes back to polling.
	WebSubUnknownLeaseExpiry = store.WebSubUnknownLeaseExpiry
	// webSubResumeDelay: when a feed polled just now turns out not to be
	// covered by its hub any more, its next poll is brought forward to at
	// most this far ahead (the poll that just ended may have scheduled a
	// weekly backup poll).
	webSubResumeDelay = 15 * time.Minute
	// hubAnswerLimit caps how much of a hub's answer is read (for the log).
	hubAnswerLimit = 64 << 10
)

// WebSubConfig configures a WebSubManager. Store, HTTP and Callback are
// required; the rest have defaults.
type WebSubConfig struct {
	Store *store.Store
	// HTTP sends requests to hubs: fetcher.NewHTTPClient, so the private
	// network guard applies to hubs (and their redirects) too.
	HTTP *http.Client
	// Callback returns the callback URL of a feed's subscription:
	// links.Links.WebSubCallback.
	Callback func(feedID int64) string
	// BaseURL is the install's public URL, for the User-Agent.
	BaseURL string
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// Lease is the lease asked of hubs; default DefaultWebSubLease.
	Lease time.Duration
	// Interval is how often Run looks for due work; default one minute.
	Interval time.Duration
	// Batch is how many feeds one RunOnce claims at most; default 32.
	Batch int
	// Concurrency bounds the hub requests in flight; default 4.
	Concurrency int
	// Rand is where secrets come from; default crypto/rand.
	Rand io.Reader
}

// WebSubManager is the WebSub subscriber's active side: it decides after
// each poll whether a feed should be subscribed to its hub (AfterPoll), and
// a loop (Run, RunOnce) sends every subscription, renewal, retry and
// unsubscription request. The callback side (verification of intent,
// content distribution) is in package web; both meet in the store's websub_*
// columns (see store.WebSubStateNone for the states).
//
// Hub requests are made only by the loop, never by a poll worker: AfterPoll
// just records what it found (one UPDATE when something changed), and Kick
// wakes the loop. The loop claims its work with store.ClaimWebSubWork, so any
// number of processes can run it against one database.
//
// Choices where the spec is silent:
//
//   - Of several advertised hubs, the first is used (the one already
//     subscribed to, if it is still advertised).
//   - The topic is the advertised self URL; a feed without one is subscribed
//     under the URL it was finally served from (after redirects).
//   - The secret (32 random bytes, hex) is sent whatever the hub's scheme.
//     WebSub says it SHOULD go only over HTTPS; but the callback URL is no
//     more secret than it, and without a secret anyone who learns the
//     callback could push content into people's inboxes. It is kept for
//     renewals and retries, and made anew for a new hub or topic.
//   - A hub answering the request with anything but 2xx, or not at all,
//     "failed": retried in a day. A request that was accepted but never
//     verified within an hour "failed" too.
//   - A feed that stops advertising its hub, or advertises another hub or
//     topic, is unsubscribed from the old one first; the next poll then
//     subscribes to the new one. Its next poll is brought forward to at
//     most 15 min away (the poll that noticed may have set the weekly
//     backup poll), and the normal schedule applies from then on.
//   - Whenever a subscription stops covering a feed (denied, renewal
//     refused, lease run out), the feed's next poll is brought forward to
//     now: the weekly backup poll is no longer enough.
//   - Pushed content is taken only with a valid signature under the
//     feed's secret, in any subscription state that still holds a secret
//     (a hub may deliver while a renewal is pending); a feed without a
//     secret, or no longer active, answers 410. A push never changes the
//     feed's validators or schedule (Poller.Ingest).
//   - A lease granted as 0 or not at all is renewed daily and counts as
//     active for two days after its last verification.
//   - Hub redirects: 307 and 308 are followed with the body sent again
//     (websub.rocks 203, 204); the advertised hub URL is the one stored.
type WebSubManager struct {
	cfg  WebSubConfig
	kick chan struct{}
}

// NewWebSubManager returns a manager for cfg, defaults filled in.
func NewWebSubManager(cfg WebSubConfig) (*WebSubManager, error) {
	if cfg.Store == nil || cfg.HTTP == nil || cfg.Callback == nil {
		return nil, errors.New("websub: Store, HTTP and Callback are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultWebSubLease
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 32
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	return &WebSubManager{cfg: cfg, kick: make(chan struct{}, 1)}, nil
}

// OnPoll is the poller's hook (Config.AfterPoll): it is called after each
// recorded poll and looks at what the poll learned about WebSub. Only a poll
// that got a 200 is used; pushed content (trigger "websub") and feeds that
// the poll ended, moved or merged are skipped. The hub and self URLs come
// from the Link header fields first and then from the parsed document
// (newitems: Atom/RSS/JSON Feed links), as WebSub §4 orders them. When the
// body was not parsed (same body as last time) and the header names no hub,
// nothing is concluded. It does at most one small UPDATE and never waits
// for a hub, so it is quick enough for the poller's writer goroutine.
func (m *WebSubManager) OnPoll(ctx context.Context, ev PollEvent) {
	rep := ev.Report
	if m == nil || rep == nil || !rep.Polled || rep.Status != http.StatusOK || rep.Trigger == "websub" ||
		rep.State != store.FeedActive || rep.MergedInto != 0 {
		return
	}
	final := rep.URL
	if rep.FinalURL != "" {
		final = rep.FinalURL
	}
	var base *url.URL
	if u, err := url.Parse(final); err == nil {
		base = u
	}
	h := ev.Header
	if h == nil {
		h = http.Header{}
	}
	hubs, self := websub.DiscoverFrom(base, h, nil, "")
	if ev.Parsed == nil && len(hubs) == 0 {
		return // the document was not looked at: no conclusion
	}
	if ev.Parsed != nil {
		if self == "" && isHTTP(ev.Parsed.SelfURL) {
			self = ev.Parsed.SelfURL
		}
		if len(hubs) == 0 && isHTTP(ev.Parsed.HubURL) {
			hubs = []string{ev.Parsed.HubURL}
		}
	}
	f := ev.Feed
	if rep.MovedTo != "" {
		f.URL = rep.MovedTo
	}
	if err := m.apply(ctx, &f, hubs, self, base); err != nil && ctx.Err() == nil {
		m.cfg.Log.Warn("websub: could not record discovery", "feed", f.ID, "err", err)
	}
}

func isHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// AfterFetch runs AfterPoll on a fetch that ended in 200 with a body;
// other fetches are ignored. It is for callers that hold the raw response
// (tests, tools); the poller itself uses OnPoll.
func (m *WebSubManager) AfterFetch(ctx context.Context, f *store.Feed, resp *fetcher.Response) error {
	if m == nil || f == nil || resp == nil || resp.Status != http.StatusOK || len(resp.Body) == 0 {
		return nil
	}
	return m.AfterPoll(ctx, f, resp.FinalURL, resp.Header, resp.Body, resp.ContentType)
}

// AfterPoll looks for WebSub hub and self links in a successful poll of f
// (Link header fields first, then the document: websub.DiscoverFrom against
// finalURL, the URL the body came from, so HTML <link> tags count too) and
// records what the feed's subscription should be:
//
//   - a hub is advertised and the feed has none (or only a denied or failed
//     one for another hub or topic): "wanted", due now, and the loop is
//     woken to subscribe;
//   - the subscription is for a hub or topic no longer advertised (or none
//     is advertised any more): "leaving", so the loop unsubscribes, and the
//     feed's next poll is brought forward to at most 15 min from now;
//   - otherwise nothing changes (renewals and retries are the loop's).
//
// Feeds nobody receives, or that are not active, are never subscribed.
// The write is a compare-and-set against f's websub columns, so a stale f
// changes nothing.
func (m *WebSubManager) AfterPoll(ctx context.Context, f *store.Feed, finalURL string, h http.Header, body []byte, contentType string) error {
	if f == nil {
		return nil
	}
	var base *url.URL
	if finalURL != "" {
		base, _ = url.Parse(finalURL)
	}
	if h == nil {
		h = http.Header{}
	}
	hubs, self := websub.DiscoverFrom(base, h, body, contentType)
	return m.apply(ctx, f, hubs, self, base)
}

// apply records the subscription that the advertised hubs and self URL of
// a poll of f (from base) ask for.
func (m *WebSubManager) apply(ctx context.Context, f *store.Feed, hubs []string, self string, base *url.URL) error {
	topic := self
	if topic == "" && base != nil && (base.Scheme == "http" || base.Scheme == "https") {
		topic = base.String()
	}
	now := m.cfg.Clock.Now()
	cur := f.WebSub()
	hub := ""
	if len(hubs) > 0 {
		hub = hubs[0]
		if slices.Contains(hubs, cur.Hub) {
			hub = cur.Hub
		}
	}
	same := hub != "" && hub == cur.Hub && topic == cur.Topic
	followed := f.State == store.FeedActive && f.SubscriberCount > 0
	var (
		to       store.WebSubFields
		resumeAt time.Time
		event    string
	)
	switch cur.State {
	case store.WebSubStateNone:
		if hub == "" || !followed {
			return nil
		}
		to, event = store.WebSubFields{Hub: hub, Topic: topic, State: store.WebSubStateWanted, RenewAt: &now}, "discovered"
	case store.WebSubStateWanted, store.WebSubStateDenied, store.WebSubStateFailed:
		switch {
		case same:
			return nil
		case hub == "":
			to, event = store.WebSubFields{}, "hub_gone"
		default:
			to, event = store.WebSubFields{Hub: hub, Topic: topic, State: store.WebSubStateWanted, RenewAt: &now}, "discovered"
		}
	case store.WebSubStatePending, store.WebSubStateActive:
		if same {
			return nil
		}
		to = cur
		to.State, to.RenewAt, event = store.WebSubStateLeaving, &now, "hub_changed"
		if cur.State == store.WebSubStateActive {
			resumeAt = now.Add(webSubResumeDelay)
		}
	default: // leaving, unsubscribing: the loop finishes that first
		return nil
	}
	ok, err := m.cfg.Store.SetWebSub(ctx, f.ID, cur, to, resumeAt, "WebSub hub no longer advertised: polling resumes")
	if err != nil {
		return err
	}
	if ok {
		m.count(event)
		m.cfg.Log.Info("websub: subscription change after poll", "feed", f.ID, "event", event,
			"hub", hub, "topic", topic, "old_hub", cur.Hub, "old_topic", cur.Topic, "old_state", cur.State)
		m.Kick()
	}
	return nil
}

// Kick wakes Run to look for due work now (without waiting for the next
// tick). It never blocks.
func (m *WebSubManager) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Run does RunOnce every Interval (and whenever Kick is called) until ctx
// ends. Errors of one round are logged and the loop goes on; it returns
// ctx's error.
func (m *WebSubManager) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := m.RunOnce(ctx); err != nil && ctx.Err() == nil {
			m.cfg.Log.Warn("websub: renewal round failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-m.kick:
		}
	}
}

// RunOnce does one round of the loop at the clock's now and returns how
// many feeds it handled: feeds nobody receives any more lose their
// subscription (store.RetireOrphanWebSubs), then every claimed feed whose
// websub_renew_at has come is handled by state:
//
//   - wanted, denied, failed: subscribe (state pending before the request
//     goes out, since hubs may verify before they answer; failed if the hub
//     refuses or cannot be reached);
//   - pending: the hub accepted but never verified: failed;
//   - active: renew with the same secret (a hub that refuses while the
//     lease still has an hour left is asked again in an hour, otherwise the
//     subscription failed and polling resumes now; a lease that has run out
//     makes polling resume at once, and one that ran out over an hour ago
//     without a verified renewal failed);
//   - leaving: unsubscribe (then unsubscribing, or cleared if the hub
//     cannot be reached; its lease runs out by itself);
//   - unsubscribing: the hub never verified: cleared.
func (m *WebSubManager) RunOnce(ctx context.Context) (int, error) {
	now := m.cfg.Clock.Now()
	if _, err := m.cfg.Store.RetireOrphanWebSubs(ctx, now); err != nil {
		return 0, err
	}
	total := 0
	for {
		feeds, err := m.cfg.Store.ClaimWebSubWork(ctx, now, WebSubVerifyTimeout, m.cfg.Batch)
		if err != nil {
			return total, err
		}
		if len(feeds) == 0 {
			return total, nil
		}
		total += len(feeds)
		sem := make(chan struct{}, m.cfg.Concurrency)
		var wg sync.WaitGroup
		for i := range feeds {
			sem <- struct{}{}
			wg.Add(1)
			go func(f *store.Feed) {
				defer func() { <-sem; wg.Done() }()
				if err := m.handle(ctx, f, now); err != nil && ctx.Err() == nil {
					m.cfg.Log.Warn("websub: could not update subscription", "feed", f.ID, "err", err)
				}
			}(&feeds[i])
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return total, err
		}
		if len(feeds) < m.cfg.Batch {
			return total, nil
		}
	}
}

// handle does what one claimed feed's state asks for.
func (m *WebSubManager) handle(ctx context.Context, f *store.Feed, now time.Time) error {
	cur := f.WebSub()
	set := func(to store.WebSubFields, resume bool, reason string) error {
		var at time.Time
		if resume {
			at = now
		}
		_, err := m.cfg.Store.SetWebSub(ctx, f.ID, cur, to, at, reason)
		return err
	}
	failed := func(retry time.Duration) store.WebSubFields {
		to := cur
		to.State, to.ExpiresAt, to.RenewAt = store.WebSubStateFailed, nil, wsTime(now.Add(retry))
		return to
	}
	switch cur.State {
	case store.WebSubStateWanted, store.WebSubStateDenied, store.WebSubStateFailed:
		return m.subscribe(ctx, f, cur, now)

	case store.WebSubStatePending:
		m.count("verify_timeout")
		m.cfg.Log.Info("websub: hub never verified the subscription; polling, retry later", "feed", f.ID, "hub", cur.Hub, "topic", cur.Topic)
		return set(failed(WebSubFailedRetry), false, "")

	case store.WebSubStateActive:
		lapsed := cur.ExpiresAt != nil && !cur.ExpiresAt.After(now)
		if lapsed && cur.ExpiresAt.Before(now.Add(-WebSubVerifyTimeout)) {
			// Renewals were accepted but never verified, and the lease
			// ran out more than an hour ago.
			m.count("lapsed")
			m.cfg.Log.Info("websub: lease ran out without renewal; polling resumes", "feed", f.ID, "hub", cur.Hub)
			return set(failed(WebSubFailedRetry), true, "WebSub lease ran out: polling resumes")
		}
		if lapsed {
			// Not covered any more: poll as usual while we ask again.
			if err := set(cur, true, "WebSub lease ran out: polling resumes"); err != nil {
				return err
			}
		}
		m.count("renew")
		err := m.send(ctx, f, cur, websub.ModeSubscribe)
		if err == nil {
			// The hub verifies (now or soon): that sets the next renewal. If
			// it never does, the claim brings the feed back in an hour.
			return nil
		}
		m.count("renew_failed")
		if cur.ExpiresAt != nil && cur.ExpiresAt.After(now.Add(WebSubVerifyTimeout)) {
			m.cfg.Log.Info("websub: renewal refused; retry in an hour", "feed", f.ID, "hub", cur.Hub, "err", err)
			return nil
		}
		m.cfg.Log.Info("websub: renewal refused; polling resumes", "feed", f.ID, "hub", cur.Hub, "err", err)
		return set(failed(WebSubFailedRetry), true, "WebSub renewal failed: polling resumes")

	case store.WebSubStateLeaving:
		to := cur
		to.State, to.RenewAt = store.WebSubStateUnsubscribing, wsTime(now.Add(WebSubVerifyTimeout))
		ok, err := m.cfg.Store.SetWebSub(ctx, f.ID, cur, to, time.Time{}, "")
		if err != nil || !ok {
			return err
		}
		m.count("unsubscribe")
		if err := m.send(ctx, f, cur, websub.ModeUnsubscribe); err != nil {
			m.count("unsubscribe_failed")
			m.cfg.Log.Info("websub: unsubscription refused; forgetting the subscription (its lease runs out)", "feed", f.ID, "hub", cur.Hub, "err", err)
			_, err = m.cfg.Store.SetWebSub(ctx, f.ID, to, store.WebSubFields{}, time.Time{}, "")
			return err
		}
		return nil

	case store.WebSubStateUnsubscribing:
		m.count("verify_timeout")
		return set(store.WebSubFields{}, false, "")
	}
	return nil
}

// subscribe sends a subscription request for a wanted, denied or failed feed.
func (m *WebSubManager) subscribe(ctx context.Context, f *store.Feed, cur store.WebSubFields, now time.Time) error {
	to := cur
	if to.Secret == "" {
		var b [32]byte
		if _, err := io.ReadFull(m.cfg.Rand, b[:]); err != nil {
			return fmt.Errorf("websub secret: %w", err)
		}
		to.Secret = hex.EncodeToString(b[:])
	}
	to.State, to.ExpiresAt, to.RenewAt = store.WebSubStatePending, nil, wsTime(now.Add(WebSubVerifyTimeout))
	// Pending first: a hub may verify before it answers.
	ok, err := m.cfg.Store.SetWebSub(ctx, f.ID, cur, to, time.Time{}, "")
	if err != nil || !ok {
		return err
	}
	m.count("subscribe")
	if err := m.send(ctx, f, to, websub.ModeSubscribe); err != nil {
		m.count("subscribe_failed")
		m.cfg.Log.Info("websub: subscription request failed; polling, retry later", "feed", f.ID, "hub", to.Hub, "topic", to.Topic, "err", err)
		fail := to
		fail.State, fail.RenewAt = store.WebSubStateFailed, wsTime(now.Add(WebSubFailedRetry))
		_, err = m.cfg.Store.SetWebSub(ctx, f.ID, to, fail, time.Time{}, "")
		return err
	}
	m.cfg.Log.Info("websub: subscription requested", "feed", f.ID, "hub", to.Hub, "topic", to.Topic)
	return nil
}

// send posts a (un)subscription request for w to its hub and returns nil
// when the hub accepted it (any 2xx; WebSub says 202).
func (m *WebSubManager) send(ctx context.Context, f *store.Feed, w store.WebSubFields, mode string) error {
	lease := m.cfg.Lease
	req, err := websub.SubscribeRequest(ctx, w.Hub, w.Topic, m.cfg.Callback(f.ID), w.Secret, lease, mode)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", fetcher.UserAgent(m.cfg.BaseURL, f.SubscriberCount))
	resp, err := m.cfg.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s request to hub %s: %w", mode, w.Hub, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, hubAnswerLimit))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s request: hub %s answered %d: %s", mode, w.Hub, resp.StatusCode, hubMessage(string(msg), 200))
	}
	return nil
}

func (m *WebSubManager) count(event string) {
	if m.cfg.Metrics != nil {
		m.cfg.Metrics.WebSub.WithLabelValues(event).Inc()
	}
}

func wsTime(t time.Time) *time.Time { return &t }

// hubMessage squeezes s onto one line of at most n bytes, for logs.
func hubMessage(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
