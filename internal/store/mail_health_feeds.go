package store

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// FeedHealth is what the instant email of one feed did over a window
// (`feedmail mail health --feeds`): emails sent and spam complaints about
// them. Digests carry many feeds and are counted per domain only.
type FeedHealth struct {
	FeedID     int64
	URL        string
	Sent       int64 // instant emails of the feed's posts sent in the window
	Complaints int64 // complaints in the window about such emails
}

// MailHealthByFeed returns, for every feed whose instant email was sent or
// complained about since since, what was sent and complained about,
// ranked by complaints (most first), then by complaint rate, then by
// volume, then by URL. Three queries: sent item rows by their item's feed
// (a scan of the window's sent rows), complaint events joined to their
// email's item, and the feeds' URLs.
func (s *Store) MailHealthByFeed(ctx context.Context, since time.Time) ([]FeedHealth, error) {
	db := s.DB.WithContext(ctx)
	byFeed := map[int64]*FeedHealth{}
	get := func(id int64) *FeedHealth {
		if byFeed[id] == nil {
			byFeed[id] = &FeedHealth{FeedID: id}
		}
		return byFeed[id]
	}
	var counts []struct{ FeedID, N int64 }
	if err := db.Raw(`SELECT i.feed_id AS feed_id, COUNT(*) AS n FROM outbox o JOIN items i ON i.id = o.item_id
WHERE o.state = ? AND o.sent_at >= ? AND o.kind = ? GROUP BY i.feed_id`, OutboxSent, utc(since), KindItem).Scan(&counts).Error; err != nil {
		return nil, fmt.Errorf("mail health by feed: sent: %w", err)
	}
	for _, c := range counts {
		get(c.FeedID).Sent += c.N
	}
	counts = nil
	if err := db.Raw(`SELECT i.feed_id AS feed_id, COUNT(*) AS n FROM mail_events e JOIN outbox o ON o.id = e.outbox_id
JOIN items i ON i.id = o.item_id WHERE e.kind = ? AND e.at >= ? GROUP BY i.feed_id`, MailComplaint, utc(since)).Scan(&counts).Error; err != nil {
		return nil, fmt.Errorf("mail health by feed: complaints: %w", err)
	}
	for _, c := range counts {
		get(c.FeedID).Complaints += c.N
	}
	ids := make([]int64, 0, len(byFeed))
	for id := range byFeed {
		ids = append(ids, id)
	}
	for start := 0; start < len(ids); start += 500 {
		var feeds []Feed
		if err := db.Select("id", "url").Where(s.sqlDialect().idsIn("id", ids[start:min(start+500, len(ids))])).
			Find(&feeds).Error; err != nil {
			return nil, fmt.Errorf("mail health by feed: feeds: %w", err)
		}
		for _, f := range feeds {
			byFeed[f.ID].URL = f.URL
		}
	}
	return rankFeedHealth(byFeed), nil
}

// rankFeedHealth orders the feeds as MailHealthByFeed says.
func rankFeedHealth(byFeed map[int64]*FeedHealth) []FeedHealth {
	out := make([]FeedHealth, 0, len(byFeed))
	for _, h := range byFeed {
		out = append(out, *h)
	}
	// rate compares a/b with c/d without dividing (0 sent: no rate).
	rateLess := func(a, b FeedHealth) bool { return a.Complaints*b.Sent < b.Complaints*a.Sent }
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Complaints != b.Complaints:
			return a.Complaints > b.Complaints
		case rateLess(b, a) != rateLess(a, b):
			return rateLess(b, a)
		case a.Sent != b.Sent:
			return a.Sent > b.Sent
		}
		return a.URL < b.URL
	})
	return out
}
