package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestMoveReadersAndUndo: a move takes every reader of the old feed to
// the new one (a reader who already follows the new one keeps that
// subscription), stops polling the old feed, and one reader's undo takes
// that reader back and makes the old feed polled again; a second undo
// changes nothing.
func TestMoveReadersAndUndo(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{})
	old := storetest.FollowedFeed(t, s, "https://old.example/feed")
	nu, _, err := s.EnsureFeed(ctx, "https://new.example/feed")
	if err != nil {
		t.Fatal(err)
	}
	var subs []*store.Subscription
	for _, addr := range []string{"a@example.org", "b@example.org", "c@example.org"} {
		u, _, err := s.EnsureUser(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := s.Subscribe(ctx, u.ID, old.ID, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	// c follows the new address already.
	if _, err := s.Subscribe(ctx, subs[2].UserID, nu.ID, nil, true); err != nil {
		t.Fatal(err)
	}
	m, sides, err := s.MoveReaders(ctx, old.ID, nu.ID, store.FeedMove{Kind: store.MoveSame, FoundBy: "test", PostsInCommon: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(sides) < 3 {
		t.Fatalf("sides = %d, want one per subscription of the old feed (3 or more)", len(sides))
	}
	if got := storetest.Feed(t, s, old.ID); got.State != store.FeedMerged || got.RecoveryState != store.RecoveryMoved {
		t.Errorf("old feed after the move: state %q, recovery %q; want merged, moved", got.State, got.RecoveryState)
	}
	// FollowedFeed's own reader, a, b, and c's own subscription.
	if got := storetest.Feed(t, s, nu.ID); got.SubscriberCount != 4 {
		t.Errorf("new feed has %d subscribers, want 4 (the first reader, a, b, and c's own)", got.SubscriberCount)
	}
	var aSide int64
	for _, sd := range sides {
		if sd.SubscriptionID == subs[0].ID {
			aSide = sd.ID
		}
	}
	if aSide == 0 {
		t.Fatal("no side for a's subscription")
	}
	rm, _, err := s.UndoMove(ctx, aSide)
	if err != nil || rm.State != store.ReaderUndone {
		t.Fatalf("undo: %+v, %v", rm, err)
	}
	if _, _, err := s.UndoMove(ctx, aSide); !errors.Is(err, store.ErrMoveSettled) {
		t.Errorf("second undo: %v, want ErrMoveSettled", err)
	}
	sub, err := s.SubscriptionByID(ctx, subs[0].ID)
	if err != nil || sub.FeedID != old.ID || sub.State != store.SubActive {
		t.Fatalf("a's subscription after undo: %+v, %v; want active on the old feed", sub, err)
	}
	if got := storetest.Feed(t, s, old.ID); got.State != store.FeedActive || got.SubscriberCount != 1 {
		t.Errorf("old feed after undo: state %q, %d subscribers; want active with 1", got.State, got.SubscriberCount)
	}
	if got := storetest.Feed(t, s, nu.ID); got.SubscriberCount != 3 {
		t.Errorf("new feed after undo has %d subscribers, want 3", got.SubscriberCount)
	}
	again, _, err := s.MoveReaders(ctx, old.ID, nu.ID, store.FeedMove{Kind: store.MoveSame})
	if err != nil || again.ID != m.ID {
		t.Errorf("the same move again: move %d, %v; want the recorded move %d", again.ID, err, m.ID)
	}
}

// TestOfferAcceptAndDecline: an offer moves nobody; each reader's click
// moves only that reader, once; a decline keeps them; offering again adds
// no second offer to the same readers.
func TestOfferAcceptAndDecline(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.Options{})
	old := storetest.FollowedFeed(t, s, "https://blog.example/feed")
	nu, _, err := s.EnsureFeed(ctx, "https://blog.example/rss/")
	if err != nil {
		t.Fatal(err)
	}
	var subs []*store.Subscription
	for _, addr := range []string{"a@example.org", "b@example.org"} {
		u, _, err := s.EnsureUser(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := s.Subscribe(ctx, u.ID, old.ID, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	_, offers, err := s.OfferMove(ctx, old.ID, nu.ID, store.FeedMove{Kind: store.MoveOffered, FoundBy: "test"})
	if err != nil || len(offers) < 2 {
		t.Fatalf("offer: %d offers, %v", len(offers), err)
	}
	if got := storetest.Feed(t, s, nu.ID); got.SubscriberCount != 0 {
		t.Fatalf("an offer moved readers: new feed has %d subscribers", got.SubscriberCount)
	}
	_, more, err := s.OfferMove(ctx, old.ID, nu.ID, store.FeedMove{Kind: store.MoveOffered, FoundBy: "test"})
	if err != nil || len(more) != 0 {
		t.Errorf("the same offer again: %d new offers, %v; want none", len(more), err)
	}
	side := map[int64]int64{}
	for _, o := range offers {
		side[o.SubscriptionID] = o.ID
	}
	if _, _, err := s.AcceptOffer(ctx, side[subs[0].ID]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AcceptOffer(ctx, side[subs[0].ID]); !errors.Is(err, store.ErrMoveSettled) {
		t.Errorf("second click: %v, want ErrMoveSettled", err)
	}
	if _, _, err := s.DeclineOffer(ctx, side[subs[1].ID]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AcceptOffer(ctx, side[subs[1].ID]); !errors.Is(err, store.ErrMoveSettled) {
		t.Errorf("accept after decline: %v, want ErrMoveSettled", err)
	}
	a, _ := s.SubscriptionByID(ctx, subs[0].ID)
	b, _ := s.SubscriptionByID(ctx, subs[1].ID)
	if a.FeedID != nu.ID || b.FeedID != old.ID {
		t.Errorf("after a accepted and b declined: a on feed %d, b on feed %d; want %d and %d", a.FeedID, b.FeedID, nu.ID, old.ID)
	}
	// FollowedFeed's own reader, who did not answer, and b.
	if got := storetest.Feed(t, s, old.ID); got.SubscriberCount != 2 || got.State != store.FeedActive {
		t.Errorf("old feed: %d subscribers, %s; want 2, active", got.SubscriberCount, got.State)
	}
	counts, err := s.RecoveryCounts(ctx, s.Clock.Now(), 3)
	if err != nil || counts["accepted"] != 1 || counts["offered"] != 1 {
		t.Errorf("recovery counts %v, %v; want 1 accepted, 1 open offer", counts, err)
	}
}
