package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestEnsureFeedsAndMeta: EnsureFeeds creates the feeds missing (once,
// however often a URL is named, more than one INSERT's worth) and finds
// the others; SetFeedsMetaIfEmpty fills titles and sites only where empty.
func TestEnsureFeedsAndMeta(t *testing.T) {
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(pollT0)})
	ctx := context.Background()
	old, _, err := s.EnsureFeed(ctx, "https://a.example/old")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetFeedMetaIfEmpty(ctx, old.ID, "Kept", ""); err != nil {
		t.Fatal(err)
	}
	urls := []string{old.URL, old.URL}
	for i := range 450 {
		urls = append(urls, fmt.Sprintf("https://h%d.example/feed", i))
	}
	urls = append(urls, urls[5])
	feeds, err := s.EnsureFeeds(ctx, urls)
	if err != nil {
		t.Fatal(err)
	}
	if len(feeds) != 451 || feeds[old.URL].ID != old.ID {
		t.Fatalf("%d feeds, old one %+v", len(feeds), feeds[old.URL])
	}
	var rows int64
	if err := s.DB.Raw("SELECT COUNT(*) FROM feeds").Scan(&rows).Error; err != nil || rows != 451 {
		t.Fatalf("%d feed rows (%v), want 451", rows, err)
	}
	f := feeds[urls[5]]
	if f.Host != "h3.example" || f.State != store.FeedActive || f.NextPollAt.IsZero() {
		t.Errorf("new feed %+v, want active, due, with its host", f)
	}
	if err := s.SetFeedsMetaIfEmpty(ctx, []store.FeedMeta{
		{FeedID: old.ID, Title: "New", SiteURL: "https://a.example/"},
		{FeedID: f.ID, Title: "Three"},
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id          int64
		title, site string
	}{{old.ID, "Kept", "https://a.example/"}, {f.ID, "Three", ""}} {
		got := storetest.Feed(t, s, c.id)
		if got.Title != c.title || got.SiteURL != c.site {
			t.Errorf("feed %d: title %q site %q, want %q %q", c.id, got.Title, got.SiteURL, c.title, c.site)
		}
	}
}

// TestSubscribeMany: new subscriptions are created active (or pending) in
// their folders, an ended one is taken up again, and every feed's
// subscriber count follows.
func TestSubscribeMany(t *testing.T) {
	for _, c := range []struct {
		name, by  string
		wantState string
		wantCount int
	}{
		{name: "confirmed", by: store.ConfirmedByOperator, wantState: store.SubActive, wantCount: 1},
		{name: "pending", by: "", wantState: store.SubPending, wantCount: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(pollT0)})
			ctx := context.Background()
			u, _, err := s.EnsureUser(ctx, "many@example.com")
			if err != nil {
				t.Fatal(err)
			}
			var urls []string
			for i := range 30 {
				urls = append(urls, fmt.Sprintf("https://h%d.example/feed", i))
			}
			feeds, err := s.EnsureFeeds(ctx, urls)
			if err != nil {
				t.Fatal(err)
			}
			ended, err := s.Subscribe(ctx, u.ID, feeds[urls[0]].ID, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.EndSubscription(ctx, ended.ID, "test"); err != nil {
				t.Fatal(err)
			}
			var subs []store.NewSubscription
			for i, url := range urls {
				subs = append(subs, store.NewSubscription{FeedID: feeds[url].ID, Folder: fmt.Sprint("F", i%3)})
			}
			got, err := s.SubscribeMany(ctx, u.ID, subs, nil, c.by)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 30 || got[feeds[urls[0]].ID].ID != ended.ID {
				t.Fatalf("%d subscriptions; the ended one taken up: %+v", len(got), got[feeds[urls[0]].ID])
			}
			view, err := s.SubscriptionsOfUser(ctx, u.ID)
			if err != nil || len(view) != 30 {
				t.Fatalf("%d subscriptions of the person, %v", len(view), err)
			}
			for i, url := range urls {
				sub := got[feeds[url].ID]
				if sub.State != c.wantState || sub.Folder != fmt.Sprint("F", i%3) {
					t.Errorf("%s: %s in %q, want %s in F%d", url, sub.State, sub.Folder, c.wantState, i%3)
				}
				if n := storetest.Feed(t, s, feeds[url].ID).SubscriberCount; n != c.wantCount {
					t.Errorf("%s counts %d subscribers, want %d", url, n, c.wantCount)
				}
			}
		})
	}
}
