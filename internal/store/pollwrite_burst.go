package store

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"

	"github.com/feedmail/feedmail/billing"
)

// Burst protection in a poll's write (billing.FeedRate is the rule). Step
// 2b, between inserting the items and routing them: each written record's
// inserted, deliverable items are one update of its feed, at the time they
// were seen. The feeds' rates are read (locked on Postgres, so a push and
// a poll of one feed do not both spend its allowance), the rule marks the
// posts that came in a burst (items.burst, which the fan-out prices with
// billing.PostCharge) and the new rates are written, in three statements
// per batch whatever its size, none when the batch brought no new posts
// and no feed's first poll.

// feedRateCols are the feeds columns of billing.FeedRate.
const feedRateCols = "rate_score, rate_allowance, rate_at, rate_since"

// applyBurstRule is step 2b (see above). A feed's first poll seeds its
// rate from the posts' published dates (billing.SeedRate), unless it has
// one already.
func (s *Store) applyBurstRule(ctx context.Context, c gorm.ConnPool, recs []PollRecord, outs []PollOutcome, now time.Time) error {
	news := map[int64][]int64{} // feed → its new deliverable items, by id
	at := map[int64]time.Time{}
	seeds := map[int64][]time.Time{} // feed → its first poll's published dates
	var feeds, locked []int64
	for i := range recs {
		if outs[i].Lost {
			continue
		}
		for _, it := range outs[i].Items {
			if it.IgnoredRule == "" {
				news[recs[i].FeedID] = append(news[recs[i].FeedID], it.ID)
			}
		}
		at[recs[i].FeedID] = recs[i].logAt(now)
		if len(news[recs[i].FeedID]) > 0 {
			feeds = append(feeds, recs[i].FeedID)
		} else if dates := firstPollDates(recs[i].Items); len(dates) > 1 {
			seeds[recs[i].FeedID] = dates
			locked = append(locked, recs[i].FeedID)
		}
	}
	if len(feeds) == 0 && len(seeds) == 0 {
		return nil
	}
	rates, err := s.lockFeedRates(ctx, c, append(locked, feeds...))
	if err != nil {
		return err
	}
	var bursts, seeded []int64
	for _, f := range locked {
		if r, ok := billing.SeedRate(seeds[f], at[f]); ok && rates[f].At.IsZero() {
			rates[f] = r
			seeded = append(seeded, f)
		}
	}
	for _, f := range feeds {
		items := news[f]
		sort.Slice(items, func(a, b int) bool { return items[a] < items[b] })
		next, burst := rates[f].Update(at[f], len(items))
		rates[f] = next
		for k, b := range burst {
			if b {
				bursts = append(bursts, items[k])
			}
		}
	}
	if err := s.markBursts(ctx, c, bursts); err != nil {
		return err
	}
	return s.writeFeedRates(ctx, c, append(seeded, feeds...), rates)
}

// firstPollDates returns the published dates of a first poll's items (those
// recorded as IgnoredFirstPoll), nil for any other poll.
func firstPollDates(items []NewItem) []time.Time {
	var out []time.Time
	for _, it := range items {
		if it.IgnoredRule == IgnoredFirstPoll && it.PublishedAt != nil {
			out = append(out, *it.PublishedAt)
		}
	}
	return out
}

// lockFeedRates reads the rates of feeds (locking their rows in id order
// on Postgres), by feed id.
func (s *Store) lockFeedRates(ctx context.Context, c gorm.ConnPool, feeds []int64) (map[int64]billing.FeedRate, error) {
	ids := append([]int64(nil), feeds...)
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	out := make(map[int64]billing.FeedRate, len(ids))
	for start, chunk := 0, s.psChunkOf(len(ids)); start < len(ids); start += chunk {
		part := ids[start:min(start+chunk, len(ids))]
		q := s.psNew().sql("SELECT id, " + feedRateCols + " FROM feeds WHERE id").in(part)
		q.sql(q.d.lockOrderedBy("id"))
		rows, err := q.query(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("read feed rates: %w", err)
		}
		for rows.Next() {
			var id int64
			var r billing.FeedRate
			var rAt, since sql.NullTime
			if err := rows.Scan(&id, &r.Score, &r.Allowance, &rAt, &since); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read feed rates: %w", err)
			}
			r.At, r.Since = rAt.Time, since.Time
			out[id] = r
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read feed rates: %w", err)
		}
	}
	return out, nil
}

// markBursts sets items.burst on the items that came in a burst.
func (s *Store) markBursts(ctx context.Context, c gorm.ConnPool, ids []int64) error {
	for start, chunk := 0, s.psChunkOf(len(ids)); start < len(ids); start += chunk {
		q := s.psNew().sql("UPDATE items SET burst = TRUE WHERE id").in(ids[start:min(start+chunk, len(ids))])
		if _, err := q.exec(ctx, c); err != nil {
			return fmt.Errorf("mark burst posts: %w", err)
		}
	}
	return nil
}

// writeFeedRates writes the rates of feeds with one UPDATE … FROM a
// VALUES list per chunk.
func (s *Store) writeFeedRates(ctx context.Context, c gorm.ConnPool, feeds []int64, rates map[int64]billing.FeedRate) error {
	for start, chunk := 0, s.psChunkOf(len(feeds)); start < len(feeds); start += chunk {
		q := s.psNew().sql("WITH v(id, score, allowance, at, since) AS (VALUES ")
		for j, f := range feeds[start:min(start+chunk, len(feeds))] {
			if j > 0 {
				q.sql(", ")
			}
			r := rates[f]
			q.sql("(").arg(f, "bigint").sql(", ").arg(r.Score, "double precision").sql(", ").
				arg(r.Allowance, "double precision").sql(", ").arg(utc(r.At), "timestamptz").sql(", ").
				arg(utc(r.Since), "timestamptz").sql(")")
		}
		q.sql(`)
UPDATE feeds SET rate_score = v.score, rate_allowance = v.allowance, rate_at = v.at, rate_since = v.since
FROM v WHERE feeds.id = v.id`)
		if _, err := q.exec(ctx, c); err != nil {
			return fmt.Errorf("write feed rates: %w", err)
		}
	}
	return nil
}
