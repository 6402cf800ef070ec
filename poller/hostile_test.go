package poller_test

import (
	"cmp"
	"context"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/poller"
)

// Hostile servers through the worker: each poll ends as a clean failure with
// the growing penalty's first step (1 h) and a reason naming what went
// wrong, and nothing the feed had stored (items, validators, body hash,
// title) is lost.
func TestHostileServers(t *testing.T) {
	cases := []struct {
		name   string
		spec   farm.Spec
		guard  bool   // poll with the private-network guard on
		rawURL string // poll this URL instead of a farm feed
		reason string // the reason starts with this
		// timeout is the fetch timeout, 2 s unless set: reading 10 MB may
		// take longer than that under the race detector on a loaded machine.
		timeout time.Duration
	}{
		{name: "endless body", spec: farm.Spec{Hostile: farm.Endless}, timeout: 30 * time.Second, reason: "body too large"},
		{name: "trickle", spec: farm.Spec{Hostile: farm.Trickle, TrickleEvery: 200 * time.Millisecond}, reason: "timeout"},
		{name: "gzip bomb", spec: farm.Spec{Hostile: farm.GzipBomb}, timeout: 30 * time.Second, reason: "body too large"},
		{name: "redirect loop", spec: farm.Spec{Hostile: farm.RedirectLoop}, reason: "too many redirects"},
		{name: "HTML instead of a feed", spec: farm.Spec{Hostile: farm.HTMLPage}, reason: "not a feed"},
		{name: "connection reset", spec: farm.Spec{Hostile: farm.Reset}, reason: "connection failed"},
		{name: "truncated body", spec: farm.Spec{Hostile: farm.LyingLength}, reason: "connection failed"},
		{name: "loopback with the guard on", guard: true, reason: "refused: private or local network address"},
		{name: "cloud metadata address with the guard on", guard: true, rawURL: "http://169.254.169.254/latest/meta-data/", reason: "refused: private or local network address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(wkT0)
			s := wkOpen(t, clk)
			fm := wkFarm(t, clk)
			ctx := context.Background()
			ff := fm.AddFeed(farm.Spec{ItemCount: 4, ETag: farm.ETagStrong, LastModified: true, Title: "Good feed"})
			timeout := cmp.Or(tc.timeout, 2*time.Second)
			open := wkPoller(t, s, clk, "open", func(c *poller.Config) { c.Fetch.Timeout = timeout })
			f := wkFollow(t, s, ff.URL(), 1, 0)
			if tc.rawURL != "" {
				// A feed that once served from elsewhere and now resolves
				// to the metadata service: give it a stored state by hand.
				if err := s.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Update("url", tc.rawURL).Error; err != nil {
					t.Fatal(err)
				}
				if _, err := open.PollFeed(ctx, f.ID, "manual"); err != nil {
					t.Fatal(err)
				}
				now := clk.Now()
				if err := s.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Updates(map[string]any{
					"etag": `"abc"`, "last_modified": "Sun, 22 Nov 2026 10:00:00 GMT", "body_hash": "h", "title": "Good feed",
					"primed_at": now, "consecutive_errors": 0, "errors_since": nil}).Error; err != nil {
					t.Fatal(err)
				}
				if err := s.DB.Create(&store.Item{FeedID: f.ID, Identity: "i1", Title: "kept", SeenAt: now}).Error; err != nil {
					t.Fatal(err)
				}
			} else {
				rep, err := open.PollFeed(ctx, f.ID, "manual")
				if err != nil || rep.Status != 200 || len(rep.Ignored) != 4 {
					t.Fatalf("priming poll: %+v, %v", rep, err)
				}
				ff.SetSpec(mergeSpec(ff.Spec(), tc.spec))
			}
			before := wkFeed(t, s, f.ID)
			beforeItems, _, _ := s.CountItems(ctx, f.ID)
			if beforeItems == 0 {
				t.Fatal("nothing stored before the hostile poll")
			}
			p := open
			if tc.guard {
				p = wkPoller(t, s, clk, "guarded", func(c *poller.Config) { c.Fetch.AllowPrivate = false })
			}
			clk.Advance(time.Hour)
			start := time.Now()
			rep, err := p.PollFeed(ctx, f.ID, "manual")
			if err != nil {
				t.Fatalf("hostile poll: %v", err)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("hostile poll took %v", d)
			}
			after := wkFeed(t, s, f.ID)
			wantReason := tc.reason + ": penalty 1 h (1st consecutive error)"
			if after.PollReason != wantReason || rep.Reason != wantReason {
				t.Errorf("reason %q (report %q), want %q", after.PollReason, rep.Reason, wantReason)
			}
			if d := after.NextPollAt.Sub(clk.Now()); d < time.Hour || d > time.Hour+6*time.Minute {
				t.Errorf("next poll in %v, want 1 h + jitter", d)
			}
			if after.State != store.FeedActive || after.ConsecutiveErrors != 1 || after.ErrorsSince == nil ||
				after.LastError == "" || rep.Error == "" || after.LeaseOwner != "" {
				t.Errorf("after: state %s errors %d since %v last error %q lease %q", after.State,
					after.ConsecutiveErrors, after.ErrorsSince, after.LastError, after.LeaseOwner)
			}
			if after.ETag != before.ETag || after.LastModified != before.LastModified || after.BodyHash != before.BodyHash ||
				after.Title != before.Title || after.ValidatorURL != before.ValidatorURL || after.PrimedAt == nil {
				t.Errorf("stored state lost:\n before %+v\n after  %+v", before, after)
			}
			if n, _, _ := s.CountItems(ctx, f.ID); n != beforeItems {
				t.Errorf("items %d, had %d", n, beforeItems)
			}
			if n := wkCount(t, s, "outbox", "1 = 1"); n != 0 {
				t.Errorf("%d emails queued", n)
			}
			if rep.Outcome != "failure" || !rep.Polled {
				t.Errorf("report outcome %q polled %v", rep.Outcome, rep.Polled)
			}
			t.Logf("%s: %s", after.PollReason, rep.Error)
		})
	}
}

// mergeSpec keeps a feed's validators and items while switching it to a
// hostile behaviour.
func mergeSpec(base, hostile farm.Spec) farm.Spec {
	base.Hostile = hostile.Hostile
	base.TrickleEvery = hostile.TrickleEvery
	base.BombBytes = hostile.BombBytes
	return base
}
