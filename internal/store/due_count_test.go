package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestCountDueFeeds: the queue depth counts the followed, active feeds due
// now that nobody is polling, and no other.
func TestCountDueFeeds(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(now)})
	ctx := context.Background()
	later, leased := now.Add(time.Hour), now.Add(time.Minute)
	cases := []struct {
		name        string
		n           int
		set         map[string]any
		countsAsDue bool
	}{
		{"due", 5, map[string]any{"next_poll_at": now.Add(-time.Minute)}, true},
		{"due this instant", 1, map[string]any{"next_poll_at": now}, true},
		{"lease ran out", 2, map[string]any{"next_poll_at": now.Add(-time.Hour), "lease_owner": "p", "lease_until": now.Add(-time.Second)}, true},
		{"not yet due", 3, map[string]any{"next_poll_at": later}, false},
		{"being polled", 2, map[string]any{"next_poll_at": now.Add(-time.Minute), "lease_owner": "p", "lease_until": leased}, false},
		{"nobody follows it", 2, map[string]any{"next_poll_at": now.Add(-time.Minute), "subscriber_count": 0}, false},
		{"gone", 1, map[string]any{"next_poll_at": now.Add(-time.Minute), "state": store.FeedGone}, false},
	}
	want := int64(0)
	for _, c := range cases {
		for i := range c.n {
			f, _, err := s.EnsureFeed(ctx, fmt.Sprintf("https://due.example/%s/%d", c.name, i))
			if err != nil {
				t.Fatal(err)
			}
			set := map[string]any{"subscriber_count": 1}
			for k, v := range c.set {
				set[k] = v
			}
			if err := s.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Updates(set).Error; err != nil {
				t.Fatal(err)
			}
		}
		if c.countsAsDue {
			want += int64(c.n)
		}
	}
	got, err := s.CountDueFeeds(ctx)
	if err != nil || got != want {
		t.Errorf("CountDueFeeds = %d, %v; want %d (the due, unleased, followed, active feeds)", got, err, want)
	}
}
