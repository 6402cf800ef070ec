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

// hookAt is a webhook delivery to url with a secret given by the person.
func hookAt(url, secret string) model.ChannelChoice {
	return model.ChannelChoice{Channel: "webhook", Target: url, Secret: secret}
}

// One subscription per (person, feed, channel, target): the same delivery
// asked again is the same row with the new settings (a generated secret
// does not replace the stored one, a given one does); another target or
// channel is a new row; the feed counts the person once; moving one
// delivery onto another of the same feed is refused.
func TestSubscribeDeliveryKey(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(pollT0)})
	u, _, err := s.EnsureUser(ctx, "both@example.com")
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := s.EnsureFeed(ctx, "https://example.com/feed")
	if err != nil {
		t.Fatal(err)
	}
	mail, err := s.Subscribe(ctx, u.ID, f.ID, nil, true)
	if err != nil || !mail.Created {
		t.Fatalf("email: %+v %v", mail, err)
	}
	a, err := s.SubscribeDelivery(ctx, u.ID, f.ID, hookAt("https://a.example/hook", "whsec_a"), nil, store.ConfirmedByAccount)
	if err != nil || !a.Created || a.ID == mail.ID || a.Channel != "webhook" || a.ChannelSecret != "whsec_a" {
		t.Fatalf("webhook a: %+v %v", a, err)
	}
	gen := hookAt("https://a.example/hook", "whsec_new")
	gen.Generated = true
	again, err := s.SubscribeDelivery(ctx, u.ID, f.ID, gen, nil, store.ConfirmedByAccount)
	if err != nil || again.Created || again.ID != a.ID || again.ChannelSecret != "whsec_a" {
		t.Fatalf("webhook a again with a generated secret: %+v %v; want row %d, secret kept", again, err, a.ID)
	}
	again, err = s.SubscribeDelivery(ctx, u.ID, f.ID, hookAt("https://a.example/hook", "whsec_given"), nil, store.ConfirmedByAccount)
	if err != nil || again.Created || again.ID != a.ID || again.ChannelSecret != "whsec_given" {
		t.Fatalf("webhook a again with a given secret: %+v %v", again, err)
	}
	b, err := s.SubscribeDelivery(ctx, u.ID, f.ID, hookAt("https://b.example/hook", "whsec_b"), nil, store.ConfirmedByAccount)
	if err != nil || !b.Created {
		t.Fatalf("webhook b: %+v %v", b, err)
	}
	mail2, err := s.Subscribe(ctx, u.ID, f.ID, nil, true)
	if err != nil || mail2.Created || mail2.ID != mail.ID {
		t.Fatalf("email again: %+v %v; want row %d", mail2, err, mail.ID)
	}
	if n := count(t, s, "subscriptions", "user_id = ? AND feed_id = ? AND state = ?", u.ID, f.ID, store.SubActive); n != 3 {
		t.Errorf("%d active subscriptions, want 3 (email, webhook a, webhook b)", n)
	}
	if got, _ := s.FeedByID(ctx, f.ID); got.SubscriberCount != 1 {
		t.Errorf("subscriber count %d, want 1 (one person)", got.SubscriberCount)
	}
	err = s.SetSubscriptionChannel(ctx, u.ID, b.ID, hookAt("https://a.example/hook", "whsec_x"))
	if !errors.Is(err, store.ErrDeliveryExists) {
		t.Errorf("moving webhook b onto webhook a's target: %v, want ErrDeliveryExists", err)
	}
	if err := s.SetSubscriptionChannel(ctx, u.ID, b.ID, hookAt("https://c.example/hook", "whsec_c")); err != nil {
		t.Errorf("moving webhook b to a free target: %v", err)
	}
}

// A 301 merges two feeds: a person who had email on one and a webhook on
// the other keeps both; a person with email on both keeps one email
// subscription (the target's), the other ends.
func TestRecordPollMergeKeepsEachDelivery(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	old := newPollFixture(t, s, clk, "https://old.example.com/feed", 2, 0, false)
	target := newPollFixture(t, s, clk, "https://new.example.com/feed", 0, 0, false)
	mixed, twice := old.users[0], old.users[1] // email on the old feed each
	hook, err := s.SubscribeDelivery(ctx, mixed, target.feed.ID, hookAt("https://hooks.example/in", "whsec_m"), nil, store.ConfirmedByAccount)
	if err != nil {
		t.Fatal(err)
	}
	keep, err := s.Subscribe(ctx, twice, target.feed.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	old.claim(t, "w")
	if _, err := s.RecordPoll(ctx, "w", old.record([]store.NewItem{item("seen", "")}, true)); err != nil {
		t.Fatal(err)
	}
	old.claim(t, "w")
	rec := old.record(nil, true)
	rec.State.State, rec.MergeInto = store.FeedMerged, target.feed.ID
	if _, err := s.RecordPoll(ctx, "w", rec); err != nil {
		t.Fatal(err)
	}
	active := func(user int64, channel string) int64 {
		return count(t, s, "subscriptions", "user_id = ? AND feed_id = ? AND channel = ? AND state = ?",
			user, target.feed.ID, channel, store.SubActive)
	}
	if e, w := active(mixed, "email"), active(mixed, "webhook"); e != 1 || w != 1 {
		t.Errorf("email-and-webhook person on the target: %d email, %d webhook; want 1 and 1", e, w)
	}
	if got, err := s.SubscriptionByID(ctx, hook.ID); err != nil || got.State != store.SubActive {
		t.Errorf("webhook subscription after the merge: %+v %v", got, err)
	}
	if e := active(twice, "email"); e != 1 {
		t.Errorf("email-on-both person on the target: %d email subscriptions, want 1", e)
	}
	if got, err := s.SubscriptionByID(ctx, keep.ID); err != nil || got.State != store.SubActive {
		t.Errorf("the target's own email subscription after the merge: %+v %v", got, err)
	}
	if n := count(t, s, "subscriptions", "user_id = ? AND feed_id = ? AND state <> ?", twice, old.feed.ID, store.SubEnded); n != 0 {
		t.Errorf("%d of the email-on-both person's subscriptions left on the old feed, want 0", n)
	}
	tf, _ := s.FeedByID(ctx, target.feed.ID)
	if tf.SubscriberCount != 2 {
		t.Errorf("target subscribers %d, want 2 people", tf.SubscriberCount)
	}
}
