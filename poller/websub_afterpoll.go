package poller

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/websub"
)

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
