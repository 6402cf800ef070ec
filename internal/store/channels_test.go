package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// A new post's outbox row carries its subscription's channel; a person
// whose address bounces still gets deliveries by another channel (only
// email waits for the address, TestRecordPollFanOutAndReplay covers that hold); a channel is set only on one's own
// subscription, and email takes no target or secret.
func TestChannelRouting(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	// One subscriber by email, and one whose address bounces.
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 1, 0, true)
	var hook store.Subscription
	if err := s.DB.Take(&hook, fx.instant[1]).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.SetSubscriptionChannel(ctx, hook.UserID+1000, hook.ID, model.ChannelChoice{Channel: "webhook"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another person's subscription: %v, want not found", err)
	}
	if err := s.SetSubscriptionChannel(ctx, hook.UserID, hook.ID,
		model.ChannelChoice{Channel: "webhook", Target: "https://h.example.org/", Secret: "whsec_x"}); err != nil {
		t.Fatal(err)
	}
	fx.claim(t, "w1")
	if _, err := s.RecordPoll(ctx, "w1", fx.record([]store.NewItem{post("a", "New", "<p>x</p>")}, true)); err != nil {
		t.Fatal(err)
	}
	var rows []store.OutboxRow
	if err := s.DB.Where("kind = ?", store.KindItem).Order("subscription_id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d item rows, want 2", len(rows))
	}
	for _, r := range rows {
		want, state := model.ChannelEmail, store.OutboxQueued
		if *r.SubscriptionID == hook.ID {
			want, state = "webhook", store.OutboxQueued
		}
		if r.Channel != want || r.State != state {
			t.Errorf("row of subscription %d: %s %s, want %s %s", *r.SubscriptionID, r.Channel, r.State, want, state)
		}
	}
	if err := s.SetSubscriptionChannel(ctx, hook.UserID, hook.ID, model.ChannelChoice{Channel: "email", Target: "x", Secret: "y"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Take(&hook, hook.ID).Error; err != nil || hook.Channel != model.ChannelEmail || hook.Target != "" || hook.ChannelSecret != "" {
		t.Errorf("back to email: %+v %v", hook, err)
	}
}
