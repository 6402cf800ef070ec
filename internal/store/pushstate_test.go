package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestPushStatesFetchedAndBatched records many pushed documents in one
// go, as a chunk of an import's baselines: their states take a fixed
// number of statements, not one per feed; a Fetched record writes the
// columns of a poll (validators, schedule) unless a poll was recorded or
// a ping came after its fetch, and a record that is not Fetched writes
// none of them whatever its State holds. All get their title and are
// primed.
func TestPushStatesFetchedAndBatched(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(pollT0)
	var n atomic.Int64
	s, err := store.Open(ctx, storetest.FreshDSN(t, storetest.URL()), store.Options{Clock: clk, OnStatement: func() { n.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const many = 40
	var ids []int64
	for i := range many {
		f, _, err := s.EnsureFeed(ctx, fmt.Sprintf("https://push%d.example/feed", i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.ID)
	}
	fetched := pollT0
	clk.Advance(2 * time.Minute)
	polled, pinged, notFetched := ids[1], ids[2], ids[3]
	if err := s.DB.Exec("UPDATE feeds SET last_polled_at = ? WHERE id = ?", fetched.Add(time.Minute), polled).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Exec("UPDATE feeds SET last_ping_at = ? WHERE id = ?", fetched.Add(time.Minute), pinged).Error; err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	next := now.Add(10 * time.Minute)
	var recs []store.PollRecord
	for _, id := range ids {
		recs = append(recs, store.PollRecord{FeedID: id, At: now, FetchedAt: fetched, Status: 200, Outcome: "baseline",
			Push: true, Fetched: id != notFetched, State: store.FeedState{Title: "T", State: store.FeedActive,
				NextPollAt: next, PollReason: "default 5 min", ValidatorURL: "https://v.example/feed", ETag: `"e"`,
				LastPolledAt: &now, LastStatus: 200, LastSuccessAt: &now, PrimedAt: &now}})
	}
	before := n.Load()
	if _, err := s.RecordPolls(ctx, "", recs); err != nil {
		t.Fatal(err)
	}
	if got := n.Load() - before; got > 8 {
		t.Errorf("%d pushed states took %d round trips, want a few (not one per feed)", many, got)
	}
	for _, id := range ids {
		f, err := s.FeedByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		asPoll := id != polled && id != pinged && id != notFetched
		wrote := f.ETag == `"e"` && f.NextPollAt.Equal(next) && f.LastStatus == 200 && f.LastSuccessAt != nil &&
			f.ValidatorURL == "https://v.example/feed" && f.PollReason == "default 5 min"
		if wrote != asPoll || f.Title != "T" || f.PrimedAt == nil {
			t.Errorf("feed %d (polled %v, pinged %v, not fetched %v): etag %q next %v status %d title %q primed %v; want the poll's columns %v",
				id, id == polled, id == pinged, id == notFetched, f.ETag, f.NextPollAt, f.LastStatus, f.Title, f.PrimedAt, asPoll)
		}
		if !asPoll && f.NextPollAt.Equal(next) {
			t.Errorf("feed %d: next poll moved to %v", id, f.NextPollAt)
		}
	}
}
