package poller_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
)

// editFeed serves an RSS document whose items the test changes.
type editFeed struct {
	mu    sync.Mutex
	items [][3]string // guid, title, description
}

func (f *editFeed) set(items ...[3]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items = items
}

func (f *editFeed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Edits</title><link>https://edits.example/</link>`)
	for _, it := range f.items {
		fmt.Fprintf(&b, `<item><guid>%s</guid><title>%s</title><link>https://edits.example/%s</link><description>%s</description></item>`,
			it[0], it[1], it[0], it[2])
	}
	b.WriteString(`</channel></rss>`)
	w.Header().Set("Content-Type", "application/rss+xml")
	_, _ = w.Write([]byte(b.String()))
}

// TestPollUpdatesEditedPosts: a post that comes back with a new title or
// text is updated in place and counted as edited; its instant email, sent
// already, is not queued again; an unchanged feed counts no edit; an item
// stored without a fingerprint gets one without counting as an edit.
func TestPollUpdatesEditedPosts(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	feed := &editFeed{}
	srv := httptest.NewServer(feed)
	t.Cleanup(srv.Close)
	f := wkFollow(t, s, srv.URL+"/feed.xml", 1, 1)
	p := wkPoller(t, s, clk, "w1", nil)
	ctx := context.Background()
	poll := func() *struct{ edited, emails, digest int64 } {
		t.Helper()
		rep, err := p.PollFeed(ctx, f.ID, "test")
		if err != nil {
			t.Fatal(err)
		}
		return &struct{ edited, emails, digest int64 }{rep.Edited, rep.Emails, rep.DigestItems}
	}
	feed.set([3]string{"a", "First", "one"})
	poll() // first poll: seen, nothing mailed
	feed.set([3]string{"b", "Second", "two"}, [3]string{"a", "First", "one"})
	if r := poll(); r.emails != 1 || r.digest != 1 || r.edited != 0 {
		t.Fatalf("new post: %+v", *r)
	}
	if err := s.DB.Model(&store.OutboxRow{}).Where("1 = 1").Update("state", store.OutboxSent).Error; err != nil {
		t.Fatal(err)
	}
	if r := poll(); r.edited != 0 || r.emails != 0 {
		t.Fatalf("unchanged feed: %+v", *r)
	}
	if err := s.DB.Model(&store.Item{}).Where("guid = ?", "a").Update("content_hash", "").Error; err != nil {
		t.Fatal(err)
	}
	feed.set([3]string{"b", "Second, corrected", "two, longer"}, [3]string{"a", "First", "one"})
	if r := poll(); r.edited != 1 || r.emails != 0 || r.digest != 0 {
		t.Fatalf("edited post: %+v; want 1 edit (the fill not counted), nothing queued", *r)
	}
	var items []store.Item
	if err := s.DB.Where("feed_id = ?", f.ID).Order("guid").Find(&items).Error; err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[1].Title != "Second, corrected" || !strings.Contains(items[1].Content, "two, longer") {
		t.Fatalf("items after the edit: %+v", items)
	}
	if items[0].ContentHash == "" {
		t.Error("the item stored without a fingerprint did not get one")
	}
	if n := wkCount(t, s, "outbox", "1 = 1"); n != 1 {
		t.Fatalf("%d outbox rows, want the one sent", n)
	}
	if r := poll(); r.edited != 0 {
		t.Fatalf("the same version again: %+v", *r)
	}
}
