package poller_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// TestBaselines records parsed documents of several feeds in one go, as
// Baseline records one: a feed never parsed gets its items as seen (none
// mailed) and is primed; a polled feed's unknown items are new and mailed
// to its subscribers; a feed that is gone is left out.
func TestBaselines(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	fm := wkFarm(t, clk)
	ctx := context.Background()
	fresh := fm.AddFeed(farm.Spec{ItemCount: 4, Format: farm.Atom})
	polled := fm.AddFeed(farm.Spec{ItemCount: 2, Format: farm.RSS})
	gone := fm.AddFeed(farm.Spec{ItemCount: 3})
	fFresh, _, err := s.EnsureFeed(ctx, fresh.URL())
	if err != nil {
		t.Fatal(err)
	}
	fPolled := wkFollow(t, s, polled.URL(), 2, 0)
	fGone, _, err := s.EnsureFeed(ctx, gone.URL())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Exec("UPDATE feeds SET state = ? WHERE id = ?", store.FeedGone, fGone.ID).Error; err != nil {
		t.Fatal(err)
	}
	p := wkPoller(t, s, clk, "w", nil)
	if _, err := p.PollFeed(ctx, fPolled.ID, "test"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	polled.Publish()
	docs := map[int64]newitems.Document{}
	for _, c := range []struct {
		id int64
		ff *farm.Feed
	}{{fFresh.ID, fresh}, {fPolled.ID, polled}, {fGone.ID, gone}} {
		parsed, err := newitems.Parse(c.ff.Body(), c.ff.Spec().Format.ContentType(), c.ff.URL())
		if err != nil {
			t.Fatal(err)
		}
		docs[c.id] = newitems.Document{Feed: parsed, Bytes: int64(len(c.ff.Body()))}
	}
	if err := p.Baselines(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id           int64
		items, mails int64
	}{{fFresh.ID, 4, 0}, {fPolled.ID, 3, 2}, {fGone.ID, 0, 0}} {
		items := wkCount(t, s, "items", "feed_id = ?", c.id)
		mails := wkCount(t, s, "outbox", "item_id IN (SELECT id FROM items WHERE feed_id = ?)", c.id)
		if items != c.items || mails != c.mails {
			t.Errorf("feed %d: %d items, %d emails; want %d, %d", c.id, items, mails, c.items, c.mails)
		}
	}
	if f := wkFeed(t, s, fFresh.ID); f.PrimedAt == nil || f.Title == "" {
		t.Errorf("the fresh feed after its baseline: %+v, want primed with its title", f)
	}
	if n := wkCount(t, s, "poll_log", "feed_id = ? AND outcome = 'baseline'", fFresh.ID); n != 1 {
		t.Errorf("%d baseline lines in the poll log, want 1", n)
	}
}
