package store_test

import (
	"context"
	"errors"
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
		if _, err := s.ConfirmSubscription(ctx, sub.ID, store.ConfirmedByLink); err != nil {
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

// TestDeleteDigest: a digest that delivers feeds is deleted only when the
// caller says what becomes of them; its feeds then go instant or end, the
// posts waiting for it go with it, an issue queued but not being sent is
// cancelled, and another person's digest cannot be deleted.
func TestDeleteDigest(t *testing.T) {
	for _, feeds := range []string{store.DigestFeedsInstant, store.DigestFeedsUnsubscribe} {
		t.Run(feeds, func(t *testing.T) {
			clk := clock.NewFake(pollT0)
			s := storetest.Open(t, storetest.Options{Clock: clk})
			ctx := context.Background()
			fx := newPollFixture(t, s, clk, "https://example.com/feed", 0, 1, false)
			var sub store.Subscription
			if err := s.DB.Take(&sub, fx.digest[0]).Error; err != nil {
				t.Fatal(err)
			}
			dgID := *sub.DigestID
			other, _, _ := s.EnsureUser(ctx, "other@example.com")
			if _, err := s.DeleteDigest(ctx, other.ID, dgID, feeds); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("another person deleted it: %v", err)
			}
			if _, err := s.DeleteDigest(ctx, sub.UserID, dgID, ""); !errors.Is(err, store.ErrDigestHasFeeds) {
				t.Fatalf("deleted without saying what becomes of its feeds: %v", err)
			}
			issue := store.OutboxRow{Kind: store.KindDigest, DedupeKey: "digest:test", UserID: sub.UserID, Address: "x@example.com",
				Credits: 1, State: store.OutboxQueued, NextAttemptAt: pollT0, CreatedAt: pollT0}
			is := store.DigestIssue{DigestID: dgID, SlotAt: pollT0, ItemCount: 1}
			if err := s.DB.Create(&is).Error; err != nil {
				t.Fatal(err)
			}
			issue.IssueID = &is.ID
			if err := s.DB.Create(&issue).Error; err != nil {
				t.Fatal(err)
			}
			n, err := s.DeleteDigest(ctx, sub.UserID, dgID, feeds)
			if err != nil || n != 1 {
				t.Fatalf("delete: %d feeds, %v", n, err)
			}
			if err := s.DB.Take(&sub, sub.ID).Error; err != nil {
				t.Fatal(err)
			}
			wantState := store.SubActive
			if feeds == store.DigestFeedsUnsubscribe {
				wantState = store.SubEnded
			}
			if sub.DigestID != nil || sub.State != wantState {
				t.Errorf("subscription after delete: digest %v state %s, want none and %s", sub.DigestID, sub.State, wantState)
			}
			if n := count(t, s, "digests", "id = ?", dgID); n != 0 {
				t.Errorf("the digest is still there")
			}
			if err := s.DB.Take(&issue, issue.ID).Error; err != nil || issue.State != store.OutboxFailed {
				t.Errorf("the queued issue is %s (%v), want cancelled", issue.State, err)
			}
		})
	}
}
