package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/poller"
)

// fakeMover records moves and answers with the same-feed check it is given.
type fakeMover struct {
	common int
	moves  []string // "from -> to" of the moves made (not the dry runs)
}

func (m *fakeMover) MoveFeed(_ context.Context, from, to, kind string, dry bool) (*poller.MoveReport, error) {
	rep := &poller.MoveReport{From: from, To: to, PostsInCommon: m.common}
	if m.common == 0 {
		rep.Warning = "no post in common with " + from
	}
	if !dry {
		m.moves = append(m.moves, from+" -> "+to+" ("+kind+")")
		rep.Moved = true
	}
	return rep, nil
}

// TestPublisherMovesReaders: the verified publisher moves their feed's
// readers on their page: at once when the new address shares posts, after
// a confirming second button when it shares none (the warning shown); a
// person who does not own the feed gets 404 and moves nothing.
func TestPublisherMovesReaders(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	f := h.feed("Blog")
	pub := h.subscribeConfirmed("pub@example.com", f.URL(), "instant")
	other := h.subscribeConfirmed("other@example.com", f.URL(), "instant")
	feed, err := h.st.FeedByURL(ctx, f.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.SetFeedOwner(ctx, feed.ID, pub.ID, "operator"); err != nil {
		t.Fatal(err)
	}
	m := &fakeMover{common: 0}
	h.srv.SetMover(m)
	move := h.accountPath(pub) + "/publisher/feeds/" + itoa(int(feed.ID)) + "/move"
	if body := h.get(h.accountPath(pub) + "/publisher").Body.String(); !strings.Contains(body, "Move my readers") {
		t.Fatalf("the publisher page has no move form:\n%s", body)
	}

	w := h.post(move, url.Values{"to": {"https://new.example/feed"}})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "no post in common") || !strings.Contains(w.Body.String(), "Move my readers anyway") {
		t.Fatalf("move without posts in common: %d\n%s", w.Code, w.Body.String())
	}
	if len(m.moves) != 0 {
		t.Fatalf("moved before the publisher confirmed: %v", m.moves)
	}
	if w := h.post(move, url.Values{"to": {"https://new.example/feed"}, "confirm": {"1"}}); w.Code != http.StatusSeeOther {
		t.Fatalf("confirmed move: %d\n%s", w.Code, w.Body.String())
	}
	if len(m.moves) != 1 || !strings.Contains(m.moves[0], "("+store.MoveOwner+")") {
		t.Fatalf("moves %v, want one by the owner", m.moves)
	}

	m.common = 3
	if w := h.post(move, url.Values{"to": {"https://newer.example/feed"}}); w.Code != http.StatusSeeOther || len(m.moves) != 2 {
		t.Fatalf("move with posts in common: %d, moves %v", w.Code, m.moves)
	}
	notOwner := h.accountPath(other) + "/publisher/feeds/" + itoa(int(feed.ID)) + "/move"
	if w := h.post(notOwner, url.Values{"to": {"https://evil.example/feed"}, "confirm": {"1"}}); w.Code != http.StatusNotFound || len(m.moves) != 2 {
		t.Fatalf("a reader moved the feed: %d, moves %v", w.Code, m.moves)
	}
}
