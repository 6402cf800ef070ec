package web

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
)

// TestFollowAndUndoLinks: an open offer is on the account page; a follow
// link's GET shows the choice and moves nothing (mail scanners open links); its POST moves that reader and a
// second POST says it is done without acting again; an undo link takes a
// moved reader back; a follow token does not work as an unsubscribe one.
func TestFollowAndUndoLinks(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	u := h.subscribeConfirmed("reader@example.org", h.feed("Old blog").URL(), "instant")
	subs := h.subsOf(u)
	if len(subs) != 1 {
		t.Fatalf("subscriptions: %d, want 1", len(subs))
	}
	sub, err := h.st.SubscriptionByID(ctx, subs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	nu, _, err := h.st.EnsureFeed(ctx, "https://new.example/feed")
	if err != nil {
		t.Fatal(err)
	}
	_, offers, err := h.st.OfferMove(ctx, sub.FeedID, nu.ID, store.FeedMove{Kind: store.MoveOffered, FoundBy: "test"})
	if err != nil || len(offers) != 1 {
		t.Fatalf("offer: %d, %v", len(offers), err)
	}
	follow := strings.TrimPrefix(h.links.Follow(offers[0].ID), h.links.Base)
	if w := h.get(h.accountPath(u)); !strings.Contains(w.Body.String(), "Has this feed moved?") || !strings.Contains(w.Body.String(), follow) {
		t.Fatalf("the account page does not offer the new address:\n%s", w.Body.String())
	}

	w := h.get(follow)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Follow the new address") || !strings.Contains(w.Body.String(), nu.URL) {
		t.Fatalf("GET follow: %d\n%s", w.Code, w.Body.String())
	}
	if got, _ := h.st.SubscriptionByID(ctx, sub.ID); got.FeedID != sub.FeedID {
		t.Fatal("a GET moved the subscription")
	}
	for i := range 2 {
		w = h.post(follow, nil)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "now come from the new address") {
			t.Fatalf("POST follow #%d: %d\n%s", i+1, w.Code, w.Body.String())
		}
	}
	if got, _ := h.st.SubscriptionByID(ctx, sub.ID); got.FeedID != nu.ID || got.State != store.SubActive {
		t.Fatalf("after follow: subscription on feed %d (%s), want %d active", got.FeedID, got.State, nu.ID)
	}
	if w := h.get(h.accountPath(u)); strings.Contains(w.Body.String(), "Has this feed moved?") {
		t.Error("the account page still offers a followed address")
	}
	if w := h.post(strings.Replace(follow, "/moves/", "/unsubscribe/", 1), nil); w.Code != http.StatusBadRequest {
		t.Errorf("follow token used to unsubscribe: %d, want 400", w.Code)
	}

	// The move back, by an undo link of a move.
	_, sides, err := h.st.MoveReaders(ctx, nu.ID, sub.FeedID, store.FeedMove{Kind: store.MoveOperator})
	if err != nil || len(sides) != 1 {
		t.Fatalf("move: %d, %v", len(sides), err)
	}
	undo := strings.TrimPrefix(h.links.UndoMove(sides[0].ID), h.links.Base)
	if w := h.get(undo); !strings.Contains(w.Body.String(), "Keep the old address") {
		t.Fatalf("GET undo: %d\n%s", w.Code, w.Body.String())
	}
	if w := h.post(undo, nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "You follow the old address again") {
		t.Fatalf("POST undo: %d\n%s", w.Code, w.Body.String())
	}
	if got, _ := h.st.SubscriptionByID(ctx, sub.ID); got.FeedID != nu.ID {
		t.Errorf("after undo: subscription on feed %d, want %d", got.FeedID, nu.ID)
	}
	if f, _ := h.st.FeedByID(ctx, nu.ID); f.State != store.FeedActive {
		t.Errorf("feed moved back to is %s, want active", f.State)
	}
}
