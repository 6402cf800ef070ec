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

// TestDeferFeeds gives back claimed feeds in one call: each is due at its
// own time with its own reason (an empty one keeps the old), its lease is
// cleared, and a row that is not there counts for nothing.
func TestDeferFeeds(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(now)})
	for i := range 3 {
		storetest.FollowedFeed(t, s, fmt.Sprintf("https://h%d.example/feed", i))
	}
	claimed, _, err := s.ClaimDueFeeds(ctx, "a", time.Minute, now.Add(time.Hour), 10, nil, time.Time{})
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claimed %d feeds (%v), want 3", len(claimed), err)
	}
	gb := []store.Deferral{{ID: claimed[0].ID, Next: now.Add(2 * time.Hour), Reason: "host busy"},
		{ID: claimed[1].ID, Next: now.Add(3 * time.Hour)}, {ID: -1, Next: now, Reason: "no such feed"}}
	if n, err := s.DeferFeeds(ctx, "a", gb); err != nil || n != 2 {
		t.Fatalf("gave back %d of 2 held feeds (%v)", n, err)
	}
	for i, d := range gb[:2] {
		f := storetest.Feed(t, s, d.ID)
		want := d.Reason
		if want == "" {
			want = claimed[i].PollReason
		}
		if !f.NextPollAt.Equal(d.Next) || f.LeaseOwner != "" || f.LeaseUntil != nil || f.PollReason != want {
			t.Errorf("feed %d given back: due %v, reason %q, lease %q %v; want due %v, reason %q, no lease",
				d.ID, f.NextPollAt, f.PollReason, f.LeaseOwner, f.LeaseUntil, d.Next, want)
		}
	}
	if f := storetest.Feed(t, s, claimed[2].ID); f.LeaseOwner == "" && f.LeaseUntil == nil && !s.Postgres() {
		t.Errorf("feed %d not given back lost its lease", f.ID)
	}
}
