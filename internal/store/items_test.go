package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestItemDates: undated items (NULL published_at) come back as the zero
// time on every database, newest seen first.
func TestItemDates(t *testing.T) {
	s := storetest.Open(t, storetest.Options{})
	ctx := context.Background()
	f, _, err := s.EnsureFeed(ctx, "https://example.com/dates")
	if err != nil {
		t.Fatal(err)
	}
	seen := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pub := seen.Add(-time.Hour)
	for i, p := range []*time.Time{&pub, nil} {
		it := store.Item{FeedID: f.ID, Identity: string(rune('a' + i)), SeenAt: seen.Add(time.Duration(i) * time.Minute), PublishedAt: p}
		if err := s.DB.Create(&it).Error; err != nil {
			t.Fatal(err)
		}
	}
	dates, err := s.ItemDates(ctx, f.ID, 10)
	if err != nil || len(dates) != 2 || !dates[0].IsZero() || !dates[1].Equal(pub) {
		t.Fatalf("dates %v, %v; want the undated item's zero time, then %v", dates, err, pub)
	}
}
