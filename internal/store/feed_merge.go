package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"
)

// FeedMerged is the state of a feed whose URL moved permanently (301/308) to
// the URL of another feed: its subscriptions were moved there and it is not
// polled again.
const FeedMerged = "merged"

// FeedEnd says that this poll ends the feed's service (410 Gone, or
// blacklisting): each active subscriber is told by a free notice, queued
// once per NoticeKey(userID).
type FeedEnd struct {
	// EndSubscriptions ends every subscription of the feed (410) with
	// EndedReason. Blacklisting keeps them: a revived feed resumes.
	EndSubscriptions bool
	EndedReason      string
	NoticeKey        func(userID int64) string
	Notice           func(userID int64) Notice
}

// psEndFeed ends a feed's service: subscriptions ended (410) and a notice
// queued for each active subscriber. It returns how many notices were queued.
func (s *Store) psEndFeed(ctx context.Context, r PollRecord, now time.Time) (int, error) {
	var users []int64
	if err := s.DB.WithContext(ctx).Model(&Subscription{}).Where("feed_id = ? AND state = ?", r.FeedID, SubActive).
		Order("user_id").Distinct().Pluck("user_id", &users).Error; err != nil {
		return 0, fmt.Errorf("subscribers of feed %d: %w", r.FeedID, err)
	}
	if r.End.EndSubscriptions {
		if err := s.DB.WithContext(ctx).Model(&Subscription{}).Where("feed_id = ? AND state <> ?", r.FeedID, SubEnded).
			Updates(map[string]any{"state": SubEnded, "ended_at": now, "ended_reason": r.End.EndedReason}).Error; err != nil {
			return 0, fmt.Errorf("end subscriptions of feed %d: %w", r.FeedID, err)
		}
		if err := s.recountSubscribers(r.FeedID); err != nil {
			return 0, err
		}
	}
	n := 0
	if r.End.Notice == nil || r.End.NoticeKey == nil {
		return 0, nil
	}
	for _, u := range users {
		ok, err := s.QueueNotice(ctx, u, r.End.NoticeKey(u), r.End.Notice(u))
		if err != nil {
			return 0, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// psMergeFeed moves feed from's subscriptions and item identities to feed
// into and makes into due now. Each delivery (person, channel, target)
// moves unless into has it already, when it ends: a person who had the
// feed by email at one address and by webhook at the other keeps both. It
// returns how many subscriptions moved.
func (s *Store) psMergeFeed(ctx context.Context, c gorm.ConnPool, from, into int64, now time.Time) (int64, error) {
	q := s.psNew().sql(`INSERT INTO items (feed_id, identity, guid, link, title, content, author, published_at, seen_at, ignored_rule, media, content_hash)
SELECT `).arg(into, "bigint").sql(`, identity, guid, link, title, content, author, published_at, `).arg(now, "timestamptz").
		sql(`, `).arg("merged from feed "+strconv.FormatInt(from, 10), "text").sql(`, media, content_hash
FROM items WHERE feed_id = `).arg(from, "bigint").sql(` ON CONFLICT (feed_id, identity) DO NOTHING`)
	if _, err := q.exec(ctx, c); err != nil {
		return 0, fmt.Errorf("merge feed %d into %d: copy items: %w", from, into, err)
	}
	// A delivery moves unless the person has the same one (channel and
	// target) on into already; those stay behind and are ended below.
	q = s.psNew().sql(`UPDATE subscriptions SET feed_id = `).arg(into, "bigint").sql(`
WHERE feed_id = `).arg(from, "bigint").sql(` AND NOT EXISTS (SELECT 1 FROM subscriptions o WHERE o.feed_id = `).arg(into, "bigint").
		sql(` AND o.user_id = subscriptions.user_id AND o.channel = subscriptions.channel AND o.target = subscriptions.target)`)
	moved, err := q.exec(ctx, c)
	if err != nil {
		return 0, fmt.Errorf("merge feed %d into %d: move subscriptions: %w", from, into, err)
	}
	q = s.psNew().sql(`UPDATE subscriptions SET state = 'ended', ended_at = `).arg(now, "timestamptz").
		sql(`, ended_reason = `).arg("feed moved to feed "+strconv.FormatInt(into, 10)+", already followed there", "text").
		sql(` WHERE feed_id = `).arg(from, "bigint").sql(` AND state <> 'ended'`)
	if _, err := q.exec(ctx, c); err != nil {
		return 0, fmt.Errorf("merge feed %d into %d: end duplicates: %w", from, into, err)
	}
	if err := s.recountSubscribers(from); err != nil {
		return 0, err
	}
	if err := s.recountSubscribers(into); err != nil {
		return 0, err
	}
	q = s.psNew().sql(`UPDATE feeds SET next_poll_at = `).arg(now, "timestamptz").sql(`, poll_reason = `).
		arg("feed "+strconv.FormatInt(from, 10)+" moved here (permanent redirect): poll now", "text").
		sql(` WHERE id = `).arg(into, "bigint").sql(` AND state = 'active' AND next_poll_at > `).arg(now, "timestamptz").
		sql(` AND (lease_until IS NULL OR lease_until <= `).arg(now, "timestamptz").sql(`)`)
	if _, err := q.exec(ctx, c); err != nil {
		return 0, fmt.Errorf("merge feed %d into %d: make due: %w", from, into, err)
	}
	return moved, nil
}

// endAndMergeFeeds is step 4 of a poll's write: for each record written it
// ends the feed's service (End) and merges the feed into another
// (MergeInto), counting notices and moved subscriptions in its outcome.
func (s *Store) endAndMergeFeeds(ctx context.Context, c gorm.ConnPool, recs []PollRecord, outs []PollOutcome, now time.Time) error {
	for i, r := range recs {
		if outs[i].Lost {
			continue
		}
		if r.End != nil {
			n, err := s.psEndFeed(ctx, r, now)
			if err != nil {
				return err
			}
			outs[i].Notices = n
		}
		if r.MergeInto != 0 && r.MergeInto != r.FeedID {
			n, err := s.psMergeFeed(ctx, c, r.FeedID, r.MergeInto, now)
			if err != nil {
				return err
			}
			outs[i].Moved = n
		}
	}
	return nil
}
