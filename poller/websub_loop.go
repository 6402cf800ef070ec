package poller

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/websub"
)

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
		err := m.sendSubscribe(ctx, f, cur)
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
		if err := m.send(ctx, f, cur, websub.ModeUnsubscribe, 0); err != nil {
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
	if err := m.sendSubscribe(ctx, f, to); err != nil {
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

// sendSubscribe asks w's hub for (or renews) the subscription of feed f
// and returns nil when the hub accepted. hub.lease_seconds is optional
// (WebSub §5.1) and some hubs refuse a lease longer than theirs: when the
// hub answers a request carrying one with a 4xx (but 408 or 429), the
// request is sent again at once without it, the hub then grants the lease
// it likes (its verification says which), and once that is accepted the
// store remembers that this hub takes no lease for this topic, so renewals
// leave it out from the start.
func (m *WebSubManager) sendSubscribe(ctx context.Context, f *store.Feed, w store.WebSubFields) error {
	lease := m.cfg.Lease
	if f.WebSubNoLease && f.WebSubHub == w.Hub && f.WebSubTopic == w.Topic {
		lease = 0
	}
	err := m.send(ctx, f, w, websub.ModeSubscribe, lease)
	var he *hubStatusError
	if lease <= 0 || !errors.As(err, &he) || !leaseMayBeRefused(he.status) {
		return err
	}
	m.count("lease_refused")
	m.cfg.Log.Info("websub: hub refused the request with a lease; asking without one", "feed", f.ID, "hub", w.Hub, "err", err)
	if err := m.send(ctx, f, w, websub.ModeSubscribe, 0); err != nil {
		return err
	}
	if err := m.cfg.Store.SetWebSubNoLease(ctx, f.ID, w.Hub, w.Topic); err != nil && ctx.Err() == nil {
		// The subscription stands; the next renewal asks with a lease again.
		m.cfg.Log.Warn("websub: could not record that the hub takes no lease", "feed", f.ID, "hub", w.Hub, "err", err)
	}
	return nil
}

// leaseMayBeRefused reports whether a hub's answer status may be its
// refusal of the hub.lease_seconds asked: a 4xx, but not 408 (timeout) or
// 429 (too many requests), which say nothing about the request's content.
func leaseMayBeRefused(status int) bool {
	return status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

// hubStatusError is a hub's non-2xx answer to a request.
type hubStatusError struct {
	mode, hub string
	status    int
	msg       string
}

func (e *hubStatusError) Error() string {
	return fmt.Sprintf("%s request: hub %s answered %d: %s", e.mode, e.hub, e.status, e.msg)
}

// send posts a (un)subscription request for w to its hub, asking for lease
// (none when 0; unsubscriptions carry none), and returns nil when the hub
// accepted it (any 2xx; WebSub says 202), a *hubStatusError for another
// status.
func (m *WebSubManager) send(ctx context.Context, f *store.Feed, w store.WebSubFields, mode string, lease time.Duration) error {
	req, err := websub.SubscribeRequest(ctx, w.Hub, w.Topic, m.cfg.Callback(f.ID, w.Secret), w.Secret, lease, mode)
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
		return &hubStatusError{mode: mode, hub: w.Hub, status: resp.StatusCode, msg: hubMessage(string(msg), 200)}
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
