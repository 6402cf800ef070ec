package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestDigestIssueContentCountsItemsLeftOut: an issue holding more of a
// feed's items than perFeed shows the newest perFeed of them, and the
// feed's More counts the rest; a feed within the cap has More 0.
func TestDigestIssueContentCountsItemsLeftOut(t *testing.T) {
	for _, tc := range []struct {
		name              string
		items, perFeed    int
		wantLen, wantMore int
	}{
		{"over the cap", 25, 20, 20, 5},
		{"at the cap", 20, 20, 20, 0},
		{"under the cap", 7, 20, 7, 0},
		{"no cap", 25, 0, 25, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := storetest.Open(t, storetest.Options{})
			issueID, newest := issueWithItems(t, s, tc.items)
			c, err := s.DigestIssueContent(context.Background(), issueID, tc.perFeed)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Feeds) != 2 {
				t.Fatalf("%d feeds, want 2", len(c.Feeds))
			}
			big, small := c.Feeds[0], c.Feeds[1]
			if len(big.Items) != tc.wantLen || big.More != tc.wantMore {
				t.Errorf("big feed: %d items, More %d; want %d and %d", len(big.Items), big.More, tc.wantLen, tc.wantMore)
			}
			if big.Items[0].Title != newest {
				t.Errorf("first item %q, want the newest %q", big.Items[0].Title, newest)
			}
			if len(small.Items) != 2 || small.More != 0 {
				t.Errorf("small feed: %d items, More %d; want 2 and 0", len(small.Items), small.More)
			}
		})
	}
}

// issueWithItems makes a digest issue holding n items of one feed
// (published an hour apart) and 2 older ones of another. It returns the
// issue's id and the title of the newest item.
func issueWithItems(t *testing.T, s *store.Store, n int) (int64, string) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	u, _, err := s.EnsureUser(ctx, "many@example.com")
	if err != nil {
		t.Fatal(err)
	}
	d := &store.Digest{UserID: u.ID, Name: "Morning", Schedule: "0 7 * * *", Timezone: "UTC", NextSlotAt: now, CreatedAt: now}
	if err := s.DB.Create(d).Error; err != nil {
		t.Fatal(err)
	}
	is := &store.DigestIssue{DigestID: d.ID, SlotAt: now, State: store.IssueQueued, CreatedAt: now}
	if err := s.DB.Create(is).Error; err != nil {
		t.Fatal(err)
	}
	add := func(url string, count int, start time.Time) {
		f, _, err := s.EnsureFeed(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := s.Subscribe(ctx, u.ID, f.ID, &d.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range count {
			pub := start.Add(time.Duration(i) * time.Hour)
			it := store.Item{FeedID: f.ID, Identity: fmt.Sprintf("%s#%d", url, i), Title: fmt.Sprintf("Post %d", i),
				Link: fmt.Sprintf("%s/%d", url, i), PublishedAt: &pub, SeenAt: pub}
			if err := s.DB.Create(&it).Error; err != nil {
				t.Fatal(err)
			}
			di := store.DigestItem{DigestID: d.ID, SubscriptionID: sub.ID, ItemID: it.ID, FeedID: f.ID, IssueID: &is.ID, QueuedAt: pub}
			if err := s.DB.Create(&di).Error; err != nil {
				t.Fatal(err)
			}
		}
	}
	start := now.Add(-time.Duration(n+1) * time.Hour)
	add("https://big.example/feed", n, start)
	add("https://small.example/feed", 2, start.Add(-48*time.Hour))
	return is.ID, fmt.Sprintf("Post %d", n-1)
}
