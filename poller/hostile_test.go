package poller_test

import (
	"cmp"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
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
			rep, err := open.PollFeed(ctx, f.ID, "manual")
			if err != nil || rep.Status != 200 || len(rep.Ignored) != 4 {
				t.Fatalf("priming poll: %+v, %v", rep, err)
			}
			ff.SetSpec(mergeSpec(ff.Spec(), tc.spec))
			before := wkFeed(t, s, f.ID)
			beforeItems, _, _ := s.CountItems(ctx, f.ID)
			if beforeItems == 0 {
				t.Fatal("nothing stored before the hostile poll")
			}
			clk.Advance(time.Hour)
			start := time.Now()
			rep, err = open.PollFeed(ctx, f.ID, "manual")
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

// TestRefusedBySetting: a feed on a private network polled while
// FEEDMAIL_ALLOW_PRIVATE_NETWORKS is off is refused without a penalty (the
// setting's doing, not the publisher's): no error streak, tried again in an
// hour, the reason naming the variable. A poller started with private
// networks allowed makes it due at once and polls it.
func TestRefusedBySetting(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	ctx := context.Background()
	ff := fm.AddFeed(farm.Spec{ItemCount: 2, ETag: farm.ETagStrong, Title: "Local feed"})
	f := wkFollow(t, s, ff.URL(), 1, 0)
	guarded := wkPoller(t, s, clk, "guarded", func(c *poller.Config) { c.Fetch.AllowPrivate = false })
	for i := range 3 {
		rep, err := guarded.PollFeed(ctx, f.ID, "manual")
		if err != nil {
			t.Fatal(err)
		}
		g := wkFeed(t, s, f.ID)
		if rep.Outcome != "refused" || !strings.HasPrefix(g.PollReason, poller.RefusedReasonPrefix) ||
			!strings.Contains(g.PollReason, "FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1") || g.ConsecutiveErrors != 0 ||
			g.ErrorsSince != nil || g.State != store.FeedActive {
			t.Fatalf("refusal %d: outcome %q, reason %q, errors %d since %v, state %s", i+1, rep.Outcome, g.PollReason,
				g.ConsecutiveErrors, g.ErrorsSince, g.State)
		}
		if d := g.NextPollAt.Sub(clk.Now()); d < poller.RefusedRetry || d > poller.RefusedRetry+poller.RefusedRetry/10 {
			t.Fatalf("refusal %d: next poll in %s, want %s + jitter", i+1, d, poller.RefusedRetry)
		}
		clk.Advance(poller.RefusedRetry)
	}
	if got := len(ff.Requests()); got != 0 {
		t.Fatalf("the guarded poller made %d requests to the feed", got)
	}
	// The operator allows private networks and restarts.
	clk.Advance(time.Minute)
	open := wkPoller(t, s, clk, "open", nil)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- open.Run(rctx) }()
	testutil.Eventually(t, 30*time.Second, func() bool { g := wkFeed(t, s, f.ID); return g.LastStatus == 200 },
		"the poller started with private networks allowed polls the refused feed at once")
	cancel()
	<-done
}
