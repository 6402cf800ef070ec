package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

var wsT0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// wsFeed makes a feed with one active subscriber (or none) and returns it.
func wsFeed(t *testing.T, s *store.Store, url string, followed bool) *store.Feed {
	t.Helper()
	ctx := context.Background()
	f, _, err := s.EnsureFeed(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if followed {
		u, _, err := s.EnsureUser(ctx, fmt.Sprintf("p%d@example.com", f.ID))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Subscribe(ctx, u.ID, f.ID, nil, true); err != nil {
			t.Fatal(err)
		}
	}
	f, err = s.FeedByID(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func wsReload(t *testing.T, s *store.Store, id int64) *store.Feed {
	t.Helper()
	f, err := s.FeedByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func wsAt(t time.Time) *time.Time { return &t }

func TestWebSubActive(t *testing.T) {
	tests := []struct {
		name string
		f    *store.Feed
		want bool
	}{
		{"nil", nil, false},
		{"no websub", &store.Feed{}, false},
		{"pending", &store.Feed{WebSubState: store.WebSubStatePending}, false},
		{"denied", &store.Feed{WebSubState: store.WebSubStateDenied}, false},
		{"active, no expiry", &store.Feed{WebSubState: store.WebSubStateActive}, true},
		{"active, expires later", &store.Feed{WebSubState: store.WebSubStateActive, WebSubExpiresAt: wsAt(wsT0.Add(time.Second))}, true},
		{"active, expires now", &store.Feed{WebSubState: store.WebSubStateActive, WebSubExpiresAt: wsAt(wsT0)}, false},
		{"active, expired", &store.Feed{WebSubState: store.WebSubStateActive, WebSubExpiresAt: wsAt(wsT0.Add(-time.Hour))}, false},
		{"leaving", &store.Feed{WebSubState: store.WebSubStateLeaving, WebSubExpiresAt: wsAt(wsT0.Add(time.Hour))}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.WebSubActive(tt.f, wsT0); got != tt.want {
				t.Errorf("WebSubActive = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSetWebSubCompareAndSet(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(wsT0)})
	f := wsFeed(t, s, "https://a.example/feed", true)
	pending := store.WebSubFields{Hub: "https://hub.example/", Topic: "https://a.example/feed", State: store.WebSubStatePending,
		Secret: "s1", RenewAt: wsAt(wsT0.Add(time.Hour))}
	ok, err := s.SetWebSub(ctx, f.ID, f.WebSub(), pending, time.Time{}, "")
	if err != nil || !ok {
		t.Fatalf("first set: %v %v", ok, err)
	}
	// A second writer that still believes the old state changes nothing.
	ok, err = s.SetWebSub(ctx, f.ID, f.WebSub(), store.WebSubFields{State: store.WebSubStateWanted}, time.Time{}, "")
	if err != nil || ok {
		t.Fatalf("stale set: changed=%v err=%v, want no change", ok, err)
	}
	got := wsReload(t, s, f.ID).WebSub()
	if got.State != store.WebSubStatePending || got.Secret != "s1" || got.Hub != pending.Hub || got.ExpiresAt != nil ||
		got.RenewAt == nil || !got.RenewAt.Equal(wsT0.Add(time.Hour)) {
		t.Fatalf("stored %+v", got)
	}
	// Verification: active with a lease.
	active := pending
	active.State, active.ExpiresAt, active.RenewAt = store.WebSubStateActive, wsAt(wsT0.Add(10*24*time.Hour)), wsAt(wsT0.Add(5*24*time.Hour))
	if ok, err := s.SetWebSub(ctx, f.ID, got, active, time.Time{}, ""); err != nil || !ok {
		t.Fatalf("activate: %v %v", ok, err)
	}
	if !store.WebSubActive(wsReload(t, s, f.ID), wsT0) {
		t.Fatal("not active after verification")
	}
}

func TestSetWebSubResumesPolling(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(wsT0)})
	tests := []struct {
		name     string
		next     time.Time
		leased   bool
		wantNext time.Time
		reason   bool
	}{
		{"weekly backup poll brought forward", wsT0.Add(7 * 24 * time.Hour), false, wsT0, true},
		{"already due earlier stays", wsT0.Add(-time.Minute), false, wsT0.Add(-time.Minute), false},
		{"leased feed left to its poll", wsT0.Add(7 * 24 * time.Hour), true, wsT0.Add(7 * 24 * time.Hour), false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wsFeed(t, s, fmt.Sprintf("https://r%d.example/feed", i), true)
			upd := map[string]any{"next_poll_at": tt.next, "poll_reason": "before", "websub_state": store.WebSubStateActive,
				"websub_hub": "https://hub.example/", "websub_topic": f.URL, "websub_secret": "x"}
			if tt.leased {
				upd["lease_owner"], upd["lease_until"] = "w1", wsT0.Add(time.Minute)
			}
			if err := s.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Updates(upd).Error; err != nil {
				t.Fatal(err)
			}
			f = wsReload(t, s, f.ID)
			to := f.WebSub()
			to.State = store.WebSubStateDenied
			if ok, err := s.SetWebSub(ctx, f.ID, f.WebSub(), to, wsT0, "resumed"); err != nil || !ok {
				t.Fatalf("set: %v %v", ok, err)
			}
			g := wsReload(t, s, f.ID)
			if !g.NextPollAt.Equal(tt.wantNext) {
				t.Errorf("next_poll_at = %s, want %s", g.NextPollAt, tt.wantNext)
			}
			if (g.PollReason == "resumed") != tt.reason {
				t.Errorf("poll_reason = %q", g.PollReason)
			}
		})
	}
}

// A verification that makes a subscription cover the feed puts its next
// poll off to the backup poll, unless the feed is due, being polled, holds
// a queued ping, is due later anyway, or is not polled.
func TestSetWebSubCoveringPutsThePollOff(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(wsT0)})
	soon := wsT0.Add(5 * time.Minute)
	later := wsT0.Add(30 * 24 * time.Hour)
	tests := []struct {
		name     string
		cols     map[string]any
		wantMove bool
	}{
		{"poll in 5 minutes becomes the backup poll", map[string]any{"next_poll_at": soon}, true},
		{"a due poll stays", map[string]any{"next_poll_at": wsT0}, false},
		{"a poll in progress decides", map[string]any{"next_poll_at": soon, "lease_owner": "w1", "lease_until": wsT0.Add(time.Minute)}, false},
		{"a queued ping stays", map[string]any{"next_poll_at": soon, "ping_queued_at": wsT0.Add(-time.Second)}, false},
		{"a poll due after the backup stays", map[string]any{"next_poll_at": later}, false},
		{"a blacklisted feed is left alone", map[string]any{"next_poll_at": soon, "state": store.FeedBlacklisted}, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wsFeed(t, s, fmt.Sprintf("https://cover%d.example/feed", i), true)
			cols := map[string]any{"poll_reason": "before", "websub_state": store.WebSubStatePending,
				"websub_hub": "https://hub.example/", "websub_topic": f.URL, "websub_secret": "x"}
			for k, v := range tt.cols {
				cols[k] = v
			}
			if err := s.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Updates(cols).Error; err != nil {
				t.Fatal(err)
			}
			f = wsReload(t, s, f.ID)
			to := f.WebSub()
			to.State, to.ExpiresAt = store.WebSubStateActive, wsAt(wsT0.Add(24*time.Hour))
			backup := store.WebSubBackupAt(f.ID, wsT0)
			if ok, err := s.SetWebSubCovering(ctx, f.ID, f.WebSub(), to, wsT0, backup, "covered"); err != nil || !ok {
				t.Fatalf("set: %v %v", ok, err)
			}
			g := wsReload(t, s, f.ID)
			if g.WebSubState != store.WebSubStateActive {
				t.Fatalf("state %q, want active", g.WebSubState)
			}
			want, reason := f.NextPollAt, "before"
			if tt.wantMove {
				want, reason = backup, "covered"
			}
			if !g.NextPollAt.Equal(want) || g.PollReason != reason {
				t.Errorf("next poll %s (%q), want %s (%q)", g.NextPollAt, g.PollReason, want, reason)
			}
		})
	}
}

func TestWebSubBackupAt(t *testing.T) {
	week := 7 * 24 * time.Hour
	seen := map[time.Time]bool{}
	for id := int64(1); id <= 50; id++ {
		at := store.WebSubBackupAt(id, wsT0)
		if d := at.Sub(wsT0); d < week || d >= week*11/10 {
			t.Fatalf("feed %d: backup poll in %s, want a week plus up to 10 %%", id, d)
		}
		seen[at] = true
	}
	if len(seen) < 40 {
		t.Errorf("50 feeds share %d backup times, want them spread", len(seen))
	}
}

// websub_no_lease is set for the feed's hub and topic only, kept while
// they stay, and cleared when SetWebSub moves to another hub.
func TestSetWebSubNoLease(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(wsT0)})
	f := wsFeed(t, s, "https://nolease.example/feed", true)
	pending := store.WebSubFields{Hub: "https://hub.example/", Topic: f.URL, State: store.WebSubStatePending, Secret: "x"}
	if ok, err := s.SetWebSub(ctx, f.ID, f.WebSub(), pending, time.Time{}, ""); err != nil || !ok {
		t.Fatalf("set: %v %v", ok, err)
	}
	if err := s.SetWebSubNoLease(ctx, f.ID, "https://other.example/", f.URL); err != nil {
		t.Fatal(err)
	}
	if wsReload(t, s, f.ID).WebSubNoLease {
		t.Fatal("no-lease recorded for a hub the feed does not use")
	}
	if err := s.SetWebSubNoLease(ctx, f.ID, pending.Hub, f.URL); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		to   store.WebSubFields
		want bool
	}{
		{"same hub, now active", store.WebSubFields{Hub: pending.Hub, Topic: f.URL, State: store.WebSubStateActive, Secret: "x"}, true},
		{"same hub, failed", store.WebSubFields{Hub: pending.Hub, Topic: f.URL, State: store.WebSubStateFailed, Secret: "x"}, true},
		{"another hub", store.WebSubFields{Hub: "https://other.example/", Topic: f.URL, State: store.WebSubStateWanted}, false},
	}
	for _, st := range steps {
		cur := wsReload(t, s, f.ID)
		if ok, err := s.SetWebSub(ctx, f.ID, cur.WebSub(), st.to, time.Time{}, ""); err != nil || !ok {
			t.Fatalf("%s: set: %v %v", st.name, ok, err)
		}
		if got := wsReload(t, s, f.ID).WebSubNoLease; got != st.want {
			t.Errorf("%s: no lease %v, want %v", st.name, got, st.want)
		}
	}
}

func TestClaimWebSubWorkOnce(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(wsT0)})
	var due []int64
	for i := range 30 {
		f := wsFeed(t, s, fmt.Sprintf("https://c%d.example/feed", i), true)
		renew := wsT0.Add(-time.Duration(i) * time.Minute)
		if i%3 == 0 {
			renew = wsT0.Add(time.Hour) // not due
		} else {
			due = append(due, f.ID)
		}
		to := store.WebSubFields{Hub: "https://hub.example/", Topic: f.URL, State: store.WebSubStateActive, Secret: "s", RenewAt: &renew}
		if ok, err := s.SetWebSub(ctx, f.ID, f.WebSub(), to, time.Time{}, ""); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	// Several claimers at once: every due feed is handed out exactly once.
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := s.ClaimWebSubWork(ctx, wsT0, time.Hour, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, f := range got {
					seen[f.ID]++
					if f.WebSubRenewAt == nil || !f.WebSubRenewAt.Equal(wsT0.Add(time.Hour)) {
						t.Errorf("feed %d renew_at %v after claim, want now+lease", f.ID, f.WebSubRenewAt)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != len(due) {
		t.Fatalf("claimed %d feeds, want %d", len(seen), len(due))
	}
	for _, id := range due {
		if seen[id] != 1 {
			t.Errorf("feed %d claimed %d times", id, seen[id])
		}
	}
	// The claim lease ends: due again.
	again, err := s.ClaimWebSubWork(ctx, wsT0.Add(time.Hour), time.Hour, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 30 {
		t.Errorf("after the lease: %d due, want all 30", len(again))
	}
}

func TestRetireOrphanWebSubs(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(wsT0)})
	tests := []struct {
		state     string
		followed  bool
		feedState string
		want      string
	}{
		{store.WebSubStateActive, false, store.FeedActive, store.WebSubStateLeaving},
		{store.WebSubStatePending, false, store.FeedActive, store.WebSubStateLeaving},
		{store.WebSubStateWanted, false, store.FeedActive, store.WebSubStateNone},
		{store.WebSubStateDenied, false, store.FeedActive, store.WebSubStateNone},
		{store.WebSubStateFailed, false, store.FeedActive, store.WebSubStateNone},
		{store.WebSubStateUnsubscribing, false, store.FeedActive, store.WebSubStateUnsubscribing},
		{store.WebSubStateActive, true, store.FeedActive, store.WebSubStateActive},
		{store.WebSubStateActive, true, store.FeedGone, store.WebSubStateLeaving},
		{store.WebSubStateActive, true, store.FeedBlacklisted, store.WebSubStateLeaving},
	}
	ids := make([]int64, len(tests))
	later := wsT0.Add(48 * time.Hour)
	for i, tt := range tests {
		f := wsFeed(t, s, fmt.Sprintf("https://o%d.example/feed", i), tt.followed)
		to := store.WebSubFields{Hub: "https://hub.example/", Topic: f.URL, State: tt.state, Secret: "s", RenewAt: &later}
		if ok, err := s.SetWebSub(ctx, f.ID, f.WebSub(), to, time.Time{}, ""); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := s.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Update("state", tt.feedState).Error; err != nil {
			t.Fatal(err)
		}
		ids[i] = f.ID
	}
	for range 2 { // idempotent
		if _, err := s.RetireOrphanWebSubs(ctx, wsT0); err != nil {
			t.Fatal(err)
		}
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%s followed=%v feed=%s", tt.state, tt.followed, tt.feedState), func(t *testing.T) {
			g := wsReload(t, s, ids[i])
			if g.WebSubState != tt.want {
				t.Fatalf("state %q, want %q", g.WebSubState, tt.want)
			}
			switch tt.want {
			case store.WebSubStateLeaving:
				if g.WebSubRenewAt == nil || !g.WebSubRenewAt.Equal(wsT0) || g.WebSubSecret != "s" {
					t.Errorf("leaving feed: renew_at %v secret %q, want due now with its secret", g.WebSubRenewAt, g.WebSubSecret)
				}
			case store.WebSubStateNone:
				if g.WebSubHub != "" || g.WebSubSecret != "" || g.WebSubRenewAt != nil {
					t.Errorf("cleared feed keeps %+v", g.WebSub())
				}
			}
		})
	}
}

func TestPingFeed(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(wsT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	mk := func(name string, followed bool, state string, next time.Time, leased bool) *store.Feed {
		f := wsFeed(t, s, "https://"+name+".example/feed", followed)
		upd := map[string]any{"state": state, "next_poll_at": next, "poll_reason": "scheduled"}
		if leased {
			upd["lease_owner"], upd["lease_until"] = "w1", wsT0.Add(time.Minute)
		}
		if err := s.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Updates(upd).Error; err != nil {
			t.Fatal(err)
		}
		return wsReload(t, s, f.ID)
	}
	later := wsT0.Add(3 * time.Hour)
	active := mk("active", true, store.FeedActive, later, false)
	leased := mk("leased", true, store.FeedActive, later, true)
	lonely := mk("lonely", false, store.FeedActive, later, false)
	gone := mk("gone", true, store.FeedGone, later, false)
	black := mk("black", true, store.FeedBlacklisted, later, false)

	tests := []struct {
		name     string
		f        *store.Feed
		now      time.Time
		want     store.PingResult
		wantNext time.Time
	}{
		{"active: due now", active, wsT0, store.PingScheduled, wsT0},
		{"second ping within the minute does nothing", active, wsT0.Add(59 * time.Second), store.PingTooSoon, wsT0},
		{"a minute later counts again", active, wsT0.Add(time.Minute), store.PingScheduled, wsT0},
		{"poll in progress", leased, wsT0, store.PingQueued, later},
		{"not followed", lonely, wsT0, store.PingNotFollowed, later},
		{"gone", gone, wsT0, store.PingGone, later},
		{"blacklisted: revive", black, wsT0, store.PingRevive, later},
		{"blacklisted twice within the minute", black, wsT0.Add(10 * time.Second), store.PingTooSoon, later},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.PingFeed(ctx, wsReload(t, s, tt.f.ID), tt.now, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("PingFeed = %s, want %s", got, tt.want)
			}
			g := wsReload(t, s, tt.f.ID)
			if !g.NextPollAt.Equal(tt.wantNext) {
				t.Errorf("next_poll_at = %s, want %s", g.NextPollAt, tt.wantNext)
			}
			if tt.want == store.PingScheduled && g.PollReason != "publisher ping: poll now" {
				t.Errorf("poll_reason %q", g.PollReason)
			}
		})
	}
}

func TestLiftBlacklist(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(wsT0)})
	tests := []struct {
		name        string
		state       string
		lastSuccess *time.Time
		want        bool
		wantState   string
	}{
		{"fetched fine since", store.FeedBlacklisted, wsAt(wsT0.Add(time.Second)), true, store.FeedActive},
		{"last success long ago", store.FeedBlacklisted, wsAt(wsT0.Add(-100 * 24 * time.Hour)), false, store.FeedBlacklisted},
		{"never succeeded", store.FeedBlacklisted, nil, false, store.FeedBlacklisted},
		{"not blacklisted", store.FeedGone, wsAt(wsT0.Add(time.Second)), false, store.FeedGone},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wsFeed(t, s, fmt.Sprintf("https://l%d.example/feed", i), true)
			if err := s.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Updates(map[string]any{"state": tt.state,
				"last_success_at": tt.lastSuccess, "consecutive_errors": 40, "errors_since": wsT0.Add(-91 * 24 * time.Hour)}).Error; err != nil {
				t.Fatal(err)
			}
			got, err := s.LiftBlacklist(ctx, f.ID, wsT0, "lifted")
			if err != nil {
				t.Fatal(err)
			}
			g := wsReload(t, s, f.ID)
			if got != tt.want || g.State != tt.wantState {
				t.Fatalf("lifted=%v state=%s, want %v %s", got, g.State, tt.want, tt.wantState)
			}
			if got && (g.ConsecutiveErrors != 0 || g.ErrorsSince != nil || g.PollReason != "lifted") {
				t.Errorf("lifted feed keeps errors=%d since=%v reason=%q", g.ConsecutiveErrors, g.ErrorsSince, g.PollReason)
			}
		})
	}
}

func TestFeedsForPing(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(wsT0)})
	a := wsFeed(t, s, "https://blog.example/feed.xml", true)
	b := wsFeed(t, s, "https://blog.example/comments.xml", true)
	c := wsFeed(t, s, "https://other.example/rss", true)
	if err := s.DB.Model(&store.Feed{}).Where("id IN ?", []int64{a.ID, b.ID}).Update("site_url", "https://blog.example/").Error; err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Model(&store.Feed{}).Where("id = ?", c.ID).Update("websub_topic", "https://other.example/self").Error; err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		urls []string
		want []int64
	}{
		{[]string{"https://blog.example/feed.xml"}, []int64{a.ID}},
		{[]string{"https://blog.example/"}, []int64{a.ID, b.ID}},
		{[]string{"https://other.example/self"}, []int64{c.ID}},
		{[]string{"https://nowhere.example/"}, nil},
		{[]string{" ", ""}, nil},
	}
	for _, tt := range tests {
		got, err := s.FeedsForPing(ctx, tt.urls, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, f := range got {
			ids = append(ids, f.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(tt.want) {
			t.Errorf("FeedsForPing(%q) = %v, want %v", tt.urls, ids, tt.want)
		}
	}
}
