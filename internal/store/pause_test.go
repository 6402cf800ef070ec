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

// pollItems claims the fixture's feed and records a poll of items.
func (fx *pollFixture) poll(t *testing.T, items ...store.NewItem) store.PollOutcome {
	t.Helper()
	fx.claim(t, "w1")
	out, err := fx.s.RecordPoll(context.Background(), "w1", fx.record(items, true))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// emailsTo counts the instant emails of subscription sub for item identity.
func emailsTo(t *testing.T, s *store.Store, sub int64, identity string) int64 {
	t.Helper()
	return count(t, s, "outbox", "subscription_id = ? AND item_id IN (SELECT id FROM items WHERE identity = ?)", sub, identity)
}

// TestPauseInstantSubscription: a paused instant subscription gets no
// email for posts published while paused, not even after resuming; the
// other subscribers and the digests get theirs; after resuming new posts
// are mailed again.
func TestPauseInstantSubscription(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 2, 1, false)
	sub, err := s.SubscriptionByID(ctx, fx.instant[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(ctx, sub.UserID, sub.ID, nil); err != nil {
		t.Fatal(err)
	}
	if out := fx.poll(t, item("during", "")); out.Emails != 1 || out.DigestItems != 1 {
		t.Fatalf("outcome while paused %+v; want 1 email (the other subscriber) and 1 digest item", out)
	}
	if n := emailsTo(t, s, sub.ID, "id-during"); n != 0 {
		t.Fatalf("paused subscription got %d emails", n)
	}
	clk.Advance(time.Hour)
	if was, err := s.Resume(ctx, sub.UserID, sub.ID); err != nil || !was {
		t.Fatalf("Resume = %v, %v", was, err)
	}
	if out := fx.poll(t, item("after", "")); out.Emails != 2 {
		t.Fatalf("outcome after resuming %+v; want 2 emails", out)
	}
	if emailsTo(t, s, sub.ID, "id-after") != 1 || emailsTo(t, s, sub.ID, "id-during") != 0 {
		t.Fatal("after resuming: want the new post mailed and the one of the pause not")
	}
}

// TestPauseUntilEndsByItself: a pause with an end stops routing at once
// and ends when the clock passes it, with nobody resuming; EndPauses
// then clears it and queues the email it held.
func TestPauseUntilEndsByItself(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 1, 0, false)
	sub, _ := s.SubscriptionByID(ctx, fx.instant[0])
	fx.poll(t, item("before", ""))
	until := pollT0.Add(2 * time.Hour)
	if err := s.Pause(ctx, sub.UserID, sub.ID, &until); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, "outbox", "subscription_id = ? AND state = ? AND last_error = ?", sub.ID, store.OutboxHeld, store.HoldPaused); n != 1 {
		t.Fatalf("%d emails held for the pause, want the queued one", n)
	}
	clk.Advance(time.Hour)
	if n, err := s.EndPauses(ctx); err != nil || n != 0 {
		t.Fatalf("EndPauses before the end = %d, %v", n, err)
	}
	if out := fx.poll(t, item("during", "")); out.Emails != 0 {
		t.Fatalf("outcome during the pause %+v", out)
	}
	clk.Advance(90 * time.Minute)
	if out := fx.poll(t, item("after", "")); out.Emails != 1 {
		t.Fatalf("outcome after the end %+v; want 1 email without resuming", out)
	}
	if n, err := s.EndPauses(ctx); err != nil || n != 1 {
		t.Fatalf("EndPauses after the end = %d, %v; want 1", n, err)
	}
	got, _ := s.SubscriptionByID(ctx, sub.ID)
	if got.PausedAt != nil || got.PausedUntil != nil {
		t.Fatalf("pause not cleared: %v %v", got.PausedAt, got.PausedUntil)
	}
	if n := count(t, s, "outbox", "subscription_id = ? AND state = ?", sub.ID, store.OutboxQueued); n != 2 {
		t.Fatalf("%d queued emails, want the held one and the new one", n)
	}
}

// TestPauseAccount: an account-wide pause holds its waiting email and
// stops every instant subscription; a subscription paused on its own
// stays paused when the account resumes.
func TestPauseAccount(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 1, 0, false)
	other := newPollFixture(t, s, clk, "https://example.com/other", 0, 0, false)
	sub, _ := s.SubscriptionByID(ctx, fx.instant[0])
	sub2, err := s.Subscribe(ctx, sub.UserID, other.feed.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	fx.poll(t, item("before", ""))
	if err := s.Pause(ctx, sub.UserID, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(ctx, sub.UserID, sub2.ID, nil); err != nil {
		t.Fatal(err)
	}
	if out := fx.poll(t, item("during", "")); out.Emails != 0 {
		t.Fatalf("outcome during an account pause %+v", out)
	}
	u, _ := s.UserByID(ctx, sub.UserID)
	if !store.IsPaused(u.PausedAt, u.PausedUntil, clk.Now()) {
		t.Fatal("account not paused")
	}
	ex, err := s.ExportAccount(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Paused == nil || !ex.Paused.Since.Equal(pollT0) || ex.Paused.Until != nil {
		t.Errorf("export of the account's pause: %+v", ex.Paused)
	}
	for _, es := range ex.Subscriptions {
		if wantPaused := es.FeedURL == other.feed.URL; (es.Paused != nil) != wantPaused {
			t.Errorf("export of %s: paused %+v", es.FeedURL, es.Paused)
		}
	}
	if _, err := s.Resume(ctx, sub.UserID, 0); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, "outbox", "subscription_id = ? AND state = ?", sub.ID, store.OutboxQueued); n != 1 {
		t.Fatalf("%d queued after resuming the account, want the one held", n)
	}
	if out := other.poll(t, item("o", "")); out.Emails != 0 {
		t.Fatalf("the subscription paused on its own got %+v", out)
	}
	if out := fx.poll(t, item("after", "")); out.Emails != 1 {
		t.Fatalf("outcome after resuming the account %+v", out)
	}
}

// TestPauseBadInput: an end in the past, another person's subscription,
// an ended one or an unknown account is an error and changes nothing.
func TestPauseBadInput(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 2, 0, false)
	sub, _ := s.SubscriptionByID(ctx, fx.instant[0])
	otherSub, _ := s.SubscriptionByID(ctx, fx.instant[1])
	fx.poll(t, item("before", ""))
	past := pollT0.Add(-time.Minute)
	for _, tc := range []struct {
		name        string
		user, subID int64
		until       *time.Time
		want        error
	}{
		{"until in the past", sub.UserID, sub.ID, &past, store.ErrPauseInPast},
		{"until now", sub.UserID, 0, &pollT0, store.ErrPauseInPast},
		{"another's subscription", sub.UserID, otherSub.ID, nil, store.ErrNotFound},
		{"unknown account", 999999, 0, nil, store.ErrNotFound},
	} {
		if err := s.Pause(ctx, tc.user, tc.subID, tc.until); !errors.Is(err, tc.want) {
			t.Errorf("%s: Pause = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := s.Resume(ctx, sub.UserID, otherSub.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Resume of another's subscription = %v", err)
	}
	if n := count(t, s, "subscriptions", "paused_at IS NOT NULL"); n != 0 {
		t.Errorf("%d subscriptions paused", n)
	}
	if n := count(t, s, "users", "paused_at IS NOT NULL"); n != 0 {
		t.Errorf("%d accounts paused", n)
	}
	if n := count(t, s, "outbox", "state = ?", store.OutboxHeld); n != 0 {
		t.Errorf("%d emails held", n)
	}
}

// TestPauseFilteredSubscription: a paused subscription with filters gets
// nothing either (the filtered pass skips pauses like the batch does),
// and after resuming gets what passes its filters.
func TestPauseFilteredSubscription(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 1, 0, false)
	sub, err := s.SubscriptionByID(ctx, fx.instant[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetSubscriptionControls(ctx, sub.UserID, sub.ID, store.Controls{Include: strp("golang")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(ctx, sub.UserID, sub.ID, nil); err != nil {
		t.Fatal(err)
	}
	fx.poll(t, post("during", "Golang news", "<p>x</p>"))
	if n := emailsTo(t, s, sub.ID, "id-during"); n != 0 {
		t.Fatalf("paused filtered subscription got %d emails", n)
	}
	clk.Advance(time.Hour)
	if _, err := s.Resume(ctx, sub.UserID, sub.ID); err != nil {
		t.Fatal(err)
	}
	fx.poll(t, post("after", "Golang again", "<p>x</p>"), post("other", "Cooking", "<p>x</p>"))
	if emailsTo(t, s, sub.ID, "id-after") != 1 || emailsTo(t, s, sub.ID, "id-other") != 0 || emailsTo(t, s, sub.ID, "id-during") != 0 {
		t.Fatal("after resuming: want only the new post that passes the filter")
	}
}
