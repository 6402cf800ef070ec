package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

func strp(s string) *string { return &s }

// routedTitles are the titles of the items routed to subscription sub: by
// email (outbox) or into its digest (digest_items).
func routedTitles(t testing.TB, s *store.Store, table string, sub int64) []string {
	t.Helper()
	var titles []string
	if err := s.DB.Table(table).Joins("JOIN items ON items.id = "+table+".item_id").
		Where(table+".subscription_id = ?", sub).Order("items.id").Pluck("items.title", &titles).Error; err != nil {
		t.Fatal(err)
	}
	return titles
}

func post(id, title, content string) store.NewItem {
	it := item(id, "")
	it.Title, it.Content = title, content
	return it
}

// TestPollRoutesThroughFilters: a poll's new posts reach a filtered
// subscription only when they pass its terms, instant and digest alike,
// while unfiltered subscriptions get everything; the outcome counts what
// was left out, and a replayed poll routes nothing again.
func TestPollRoutesThroughFilters(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 2, 2, false)
	set := func(sub int64, c store.Controls) {
		t.Helper()
		var owner store.Subscription
		if err := s.DB.Take(&owner, sub).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetSubscriptionControls(ctx, owner.UserID, sub, c); err != nil {
			t.Fatal(err)
		}
	}
	set(fx.instant[0], store.Controls{Include: strp("golang, /\\brust(acean)?s?\\b/")})
	set(fx.digest[0], store.Controls{Exclude: strp("sponsored post")})
	fx.claim(t, "w1")
	items := []store.NewItem{
		post("a", "Golang 1.26", "<p>Released.</p>"),
		post("b", "Weekly links", "<p>A <em>sponsored</em> post about golang.</p>"),
		post("c", "Rustaceans meet", "<p>Nothing else.</p>"),
		post("d", "Cooking", "<p>Bread.</p>"),
	}
	out, err := s.RecordPoll(ctx, "w1", fx.record(items, true))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64][]string{
		fx.instant[0]: {"Golang 1.26", "Weekly links", "Rustaceans meet"},
		fx.instant[1]: {"Golang 1.26", "Weekly links", "Rustaceans meet", "Cooking"},
	}
	for sub, w := range want {
		if got := routedTitles(t, s, "outbox", sub); !slices.Equal(got, w) {
			t.Errorf("emails of subscription %d: %q, want %q", sub, got, w)
		}
	}
	wantDigest := map[int64][]string{
		fx.digest[0]: {"Golang 1.26", "Rustaceans meet", "Cooking"},
		fx.digest[1]: {"Golang 1.26", "Weekly links", "Rustaceans meet", "Cooking"},
	}
	for sub, w := range wantDigest {
		if got := routedTitles(t, s, "digest_items", sub); !slices.Equal(got, w) {
			t.Errorf("digest items of subscription %d: %q, want %q", sub, got, w)
		}
	}
	if out.Emails != 7 || out.DigestItems != 7 || out.Filtered != 2 {
		t.Errorf("outcome emails %d digest items %d filtered %d, want 7, 7, 2", out.Emails, out.DigestItems, out.Filtered)
	}
	// A replay inserts no item, so routes nothing.
	clk.Advance(time.Minute)
	fx.claim(t, "w1")
	if out, err = s.RecordPoll(ctx, "w1", fx.record(items, true)); err != nil {
		t.Fatal(err)
	}
	if out.Emails != 0 || out.DigestItems != 0 || out.Filtered != 0 {
		t.Errorf("replay routed: %+v", out)
	}
}

// TestCatchUpAndNewestThroughFilters: a filtered subscription confirmed
// late catches up only on passing posts, and "send the newest post" sends
// the newest that passes.
func TestCatchUpAndNewestThroughFilters(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 0, 0, false)
	push := func(items ...store.NewItem) {
		t.Helper()
		clk.Advance(time.Minute)
		now := clk.Now()
		if _, err := s.RecordPoll(ctx, "", store.PollRecord{FeedID: fx.feed.ID, At: now, Outcome: "pushed", Status: 200,
			Push: true, Items: items, State: store.FeedState{PrimedAt: &now}}); err != nil {
			t.Fatal(err)
		}
	}
	older, newer := pollT0.Add(-48*time.Hour), pollT0.Add(-time.Hour)
	old, recent := post("old", "Old golang post", ""), post("new", "New cooking post", "")
	old.PublishedAt, recent.PublishedAt = &older, &newer
	push(old, recent)
	u, _, err := s.EnsureUser(ctx, "picky@example.com")
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	sub, err := s.Subscribe(ctx, u.ID, fx.feed.ID, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetSubscriptionControls(ctx, u.ID, sub.ID, store.Controls{Include: strp("golang")}); err != nil {
		t.Fatal(err)
	}
	push(post("p1", "Cooking again", ""), post("p2", "More golang", ""))
	if _, err := s.ConfirmSubscription(ctx, sub.ID, store.ConfirmedByLink); err != nil {
		t.Fatal(err)
	}
	if got := routedTitles(t, s, "outbox", sub.ID); !slices.Equal(got, []string{"More golang"}) {
		t.Fatalf("catch-up emails %q, want only the passing post", got)
	}

	u2, _, err := s.EnsureUser(ctx, "newest@example.com")
	if err != nil {
		t.Fatal(err)
	}
	sub2, err := s.Subscribe(ctx, u2.ID, fx.feed.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetSubscriptionControls(ctx, u2.ID, sub2.ID, store.Controls{Exclude: strp("cooking, more")}); err != nil {
		t.Fatal(err)
	}
	if err := s.SendNewestNow(ctx, sub2.ID); err != nil {
		t.Fatal(err)
	}
	if got := routedTitles(t, s, "outbox", sub2.ID); !slices.Equal(got, []string{"Old golang post"}) {
		t.Fatalf("newest post sent %q, want the newest that passes", got)
	}
}

// TestSetSubscriptionControls: only the given settings change, terms are
// stored in canonical form, and bad input changes nothing.
func TestSetSubscriptionControls(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 1, 0, false)
	var sub store.Subscription
	if err := s.DB.Take(&sub, fx.instant[0]).Error; err != nil {
		t.Fatal(err)
	}
	if sub.Format != store.FormatFull {
		t.Fatalf("new subscription's format %q, want full", sub.Format)
	}
	got, err := s.SetSubscriptionControls(ctx, sub.UserID, sub.ID, store.Controls{Include: strp(" go ,, rust,"), Format: strp("Summary")})
	if err != nil {
		t.Fatal(err)
	}
	if got.IncludeTerms != "go, rust" || got.ExcludeTerms != "" || got.Format != store.FormatSummary {
		t.Fatalf("after set: %q %q %q", got.IncludeTerms, got.ExcludeTerms, got.Format)
	}
	if got, err = s.SetSubscriptionControls(ctx, sub.UserID, sub.ID, store.Controls{Exclude: strp("ads")}); err != nil {
		t.Fatal(err)
	}
	if got.IncludeTerms != "go, rust" || got.ExcludeTerms != "ads" || got.Format != store.FormatSummary {
		t.Fatalf("exclude only changed more: %q %q %q", got.IncludeTerms, got.ExcludeTerms, got.Format)
	}
	bad := []store.Controls{
		{Include: strp(""), Exclude: strp("/(/")},
		{Include: strp(""), Format: strp("tiny")},
	}
	for _, c := range bad {
		if _, err := s.SetSubscriptionControls(ctx, sub.UserID, sub.ID, c); !errors.Is(err, store.ErrBadControls) {
			t.Errorf("bad controls accepted: %v", err)
		}
	}
	other, _, _ := s.EnsureUser(ctx, "other@example.com")
	if _, err := s.SetSubscriptionControls(ctx, other.ID, sub.ID, store.Controls{Include: strp("")}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another person's subscription: %v", err)
	}
	if err := s.DB.Take(&sub, sub.ID).Error; err != nil {
		t.Fatal(err)
	}
	if sub.IncludeTerms != "go, rust" || sub.ExcludeTerms != "ads" || sub.Format != store.FormatSummary {
		t.Fatalf("bad input changed it: %q %q %q", sub.IncludeTerms, sub.ExcludeTerms, sub.Format)
	}
}
