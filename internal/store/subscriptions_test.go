package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestConfirmCatchesUpSinceRequest: a subscription confirmed after a push
// recorded items gets, at confirmation, the deliverable items seen since
// it was asked for, once, and nothing seen before (the baseline), nothing
// ignored, and nothing seen while it had ended before being asked again.
func TestConfirmCatchesUpSinceRequest(t *testing.T) {
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
	push(item("baseline", store.IgnoredFirstPoll))
	u, _, err := s.EnsureUser(ctx, "late@example.com")
	if err != nil {
		t.Fatal(err)
	}
	// Asked for, ended before confirming, then asked for again: only what
	// came after the second request is theirs.
	clk.Advance(time.Minute)
	sub, err := s.Subscribe(ctx, u.ID, fx.feed.ID, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	push(item("while-pending-1", ""))
	if _, err := s.EndSubscription(ctx, sub.ID, "test"); err != nil {
		t.Fatal(err)
	}
	push(item("while-ended", ""))
	clk.Advance(time.Minute)
	if _, err := s.Subscribe(ctx, u.ID, fx.feed.ID, nil, false); err != nil {
		t.Fatal(err)
	}
	push(item("after-request", ""), item("too-old", "older than a year"))
	for range 2 {
		if _, err := s.ConfirmSubscription(ctx, sub.ID); err != nil {
			t.Fatal(err)
		}
	}
	var titles []string
	if err := s.DB.Table("outbox").Joins("JOIN items ON items.id = outbox.item_id").
		Where("outbox.subscription_id = ?", sub.ID).Order("items.id").Pluck("items.title", &titles).Error; err != nil {
		t.Fatal(err)
	}
	if len(titles) != 1 || titles[0] != "Post after-request" {
		t.Fatalf("emails queued at confirmation: %q, want only the post seen after the second request", titles)
	}
}
