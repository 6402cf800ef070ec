package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/feedmail/feedmail/billing"
)

// Routing of a new item: instant subscription -> outbox email row, digest
// subscription -> pending digest item. A paused subscription or person
// gets no instant email (notPaused); digests collect while paused.
//
// Each item a poll inserts and does not ignore goes to every subscription
// active when it is first seen: an instant one gets an outbox row (kind
// "item", priced by billing, see routeInstantStart; dedupe key
// "item:<subscription>:<item>", the subscription's channel, held with
// HoldBouncing when it goes by email to an address that bounces; the
// mailer charges when it sends); a digest one gets a digest_items row for
// its next issue. One
// INSERT … SELECT per kind for the whole batch, ON CONFLICT DO NOTHING.
//
// A subscription confirmed after it was asked for also gets, at that
// moment, the feed's deliverable items seen since it was asked for
// (routeCatchUp): the items the person saw at signup are the baseline, and
// a post a poll found while the confirmation email was on its way is theirs
// too. The same statements, one subscription instead of a batch of items.
// When that routes nothing and the person asked for it at signup, the
// feed's newest post goes to them as one email instead (routeNewest).
// Subscriptions with filters are routed in Go (fanout_filtered.go).

// The statements of the routing, around their parameters: the times and
// the item ids.
const (
	routeInstantHead = `INSERT INTO outbox (kind, dedupe_key, user_id, subscription_id, item_id, to_addr, channel, credits, free_reason, state, last_error, next_attempt_at, created_at)
SELECT 'item', 'item:' || s.id || ':' || i.id, s.user_id, s.id, i.id, u.email, s.channel,`
	routeInstantFrom = `
FROM items i
JOIN subscriptions s ON s.feed_id = i.feed_id AND s.state = 'active' AND s.digest_id IS NULL
JOIN users u ON u.id = s.user_id
`
	routeDigestHead = `INSERT INTO digest_items (digest_id, subscription_id, item_id, feed_id, queued_at)
SELECT s.digest_id, s.id, i.id, i.feed_id, `
	routeDigestFrom = `
FROM items i
JOIN subscriptions s ON s.feed_id = i.feed_id AND s.state = 'active' AND s.digest_id IS NOT NULL
`
)

// routeInstantState returns the middle of routeInstantHead's SELECT: the
// row's state and hold reason by the bounce hold (bounce_hold.go), ending
// where the reason's parameter goes.
func routeInstantState() string {
	held := bounceHoldSQL("'"+KindItem+"'", "s.channel", "u.bouncing_since")
	return ",\n  CASE WHEN " + held + " THEN 'held' ELSE 'queued' END,\n  CASE WHEN " + held + " THEN "
}

// routeInstantStart begins an instant routing statement, up to its FROM:
// each row's price is billing's (PostCharge: a post that came in a burst,
// items.burst, is free to a reader who pays for themselves, and its row
// says why in free_reason), held with HoldBouncing when the address
// bounces, created at now. A payer other than the reader (a feed's owner)
// would price the row with its own PostCharge here.
func (s *Store) routeInstantStart(now time.Time) *psQuery {
	paid, _ := billing.PostCharge(billing.PaidByReader, false)
	free, why := billing.PostCharge(billing.PaidByReader, true)
	q := s.psNew().sql(routeInstantHead, "\n  CASE WHEN i.burst THEN ").arg(free, "integer").sql(" ELSE ").arg(paid, "integer").
		sql(" END, CASE WHEN i.burst THEN ").arg(why, "text").sql(" ELSE '' END")
	return q.sql(routeInstantState()).arg(HoldBouncing, "text").sql(` ELSE '' END, `).
		arg(now, "timestamptz").sql(", ").arg(now, "timestamptz")
}

// notPaused appends the condition that neither the subscription s nor its
// person u is paused at now (pause.go): a paused one gets no instant email.
func notPaused(q *psQuery, now time.Time) *psQuery {
	return pausedArg(pausedArg(q.sql(" AND NOT "), "s", now).sql(" AND NOT "), "u", now)
}

// routeNewItems is step 3 of a poll's write: it routes the inserted,
// deliverable items (deliver) to instant email and digests (see above) and
// counts the rows written in each record's outcome (Emails, DigestItems).
func (s *Store) routeNewItems(ctx context.Context, c gorm.ConnPool, recs []PollRecord, outs []PollOutcome,
	idx map[int64]int, deliver []int64, now time.Time) error {
	itemFeed := make(map[int64]int64, len(deliver))
	for i := range outs {
		for _, it := range outs[i].Items {
			itemFeed[it.ID] = recs[i].FeedID
		}
	}
	for start, chunk := 0, s.psChunkOf(len(deliver)); start < len(deliver); start += chunk {
		part := deliver[start:min(start+chunk, len(deliver))]
		q := s.routeInstantStart(now).sql(routeInstantFrom, "WHERE i.id").in(part).sql(routeUnfiltered)
		q = notPaused(q, now).sql(`
ON CONFLICT (dedupe_key) DO NOTHING
RETURNING item_id`)
		if err := s.psCountByFeed(ctx, c, q, itemFeed, idx, func(o *PollOutcome) { o.Emails++ }, outs); err != nil {
			return fmt.Errorf("fan out to instant subscribers: %w", err)
		}
		q = s.psNew().sql(routeDigestHead).arg(now, "timestamptz").sql(routeDigestFrom, "WHERE i.id").in(part).sql(routeUnfiltered, `
ON CONFLICT (subscription_id, item_id) DO NOTHING
RETURNING item_id`)
		if err := s.psCountByFeed(ctx, c, q, itemFeed, idx, func(o *PollOutcome) { o.DigestItems++ }, outs); err != nil {
			return fmt.Errorf("fan out to digests: %w", err)
		}
	}
	return s.routeFilteredBatch(ctx, c, recs, outs, idx, deliver, now)
}

// psCountByFeed runs a fan-out INSERT … RETURNING item_id and counts the
// rows per record.
func (s *Store) psCountByFeed(ctx context.Context, c gorm.ConnPool, q *psQuery, itemFeed map[int64]int64,
	idx map[int64]int, add func(*PollOutcome), outs []PollOutcome) error {
	rows, err := q.query(ctx, c)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var itemID int64
		if err := rows.Scan(&itemID); err != nil {
			return err
		}
		if i, ok := idx[itemFeed[itemID]]; ok {
			add(&outs[i])
		}
	}
	return rows.Err()
}

// routeCatchUp routes to subscription subID, just made active at now, the
// deliverable items of its feed seen after it was asked for (see above). It
// returns the first failure; the caller's transaction makes it all or
// nothing with the activation.
func (s *Store) routeCatchUp(ctx context.Context, subID int64, now time.Time) error {
	var sub Subscription
	if err := s.DB.WithContext(ctx).Take(&sub, subID).Error; err != nil {
		return fmt.Errorf("catch up subscription %d: %w", subID, notFound(err))
	}
	if sub.RequestedAt == nil || sub.State != SubActive {
		return nil
	}
	if sub.IncludeTerms != "" || sub.ExcludeTerms != "" {
		routed, err := s.catchUpFiltered(ctx, &sub, now)
		if err != nil {
			return err
		}
		if sub.SendNewest && routed == 0 {
			return s.routeNewest(ctx, sub.ID, now)
		}
		return nil
	}
	c := s.psConn(ctx)
	var routed int64
	where := func(q *psQuery) *psQuery {
		return q.sql("WHERE s.id = ").arg(sub.ID, "bigint").sql(" AND i.ignored_rule = '' AND i.seen_at > ").
			arg(sub.RequestedAt.UTC(), "timestamptz")
	}
	q := s.routeInstantStart(now).sql(routeInstantFrom)
	n, err := notPaused(where(q), now).sql("\nON CONFLICT (dedupe_key) DO NOTHING").exec(ctx, c)
	if err != nil {
		return fmt.Errorf("catch up subscription %d by email: %w", subID, err)
	}
	routed += n
	q = s.psNew().sql(routeDigestHead).arg(now, "timestamptz").sql(routeDigestFrom)
	if n, err = where(q).sql("\nON CONFLICT (subscription_id, item_id) DO NOTHING").exec(ctx, c); err != nil {
		return fmt.Errorf("catch up subscription %d in its digest: %w", subID, err)
	}
	routed += n
	if sub.SendNewest && routed == 0 {
		return s.routeNewest(ctx, sub.ID, now)
	}
	return nil
}

// routeNewestFrom picks the feed's newest item (by its date, else when it
// was seen) for one subscription, whatever its delivery.
const routeNewestFrom = `
FROM subscriptions s
JOIN users u ON u.id = s.user_id
JOIN items i ON i.id = (SELECT n.id FROM items n WHERE n.feed_id = s.feed_id
  ORDER BY COALESCE(n.published_at, n.seen_at) DESC, n.id DESC LIMIT 1)
WHERE s.state = 'active' AND s.id = `

// routeOneFrom picks one given item for one subscription.
const routeOneFrom = `
FROM subscriptions s
JOIN users u ON u.id = s.user_id
JOIN items i ON i.feed_id = s.feed_id
WHERE s.state = 'active' AND i.id = `

// SendNewestNow queues the feed's newest post for active subscription
// subID at once (routeNewest): an operator's confirmed subscription that
// asked for it.
func (s *Store) SendNewestNow(ctx context.Context, subID int64) error {
	return s.routeNewest(ctx, subID, s.now())
}

// routeNewest queues the feed's newest post for subscription subID as one
// email, at once and charged like any other (the signup's "send me the
// newest post now"); a digest subscription gets it by email too, since
// the point is to see at once what one signed up for.
func (s *Store) routeNewest(ctx context.Context, subID int64, now time.Time) error {
	var sub Subscription
	if err := s.DB.WithContext(ctx).Take(&sub, subID).Error; err != nil {
		return fmt.Errorf("send the newest post to subscription %d: %w", subID, notFound(err))
	}
	q := s.routeInstantStart(now)
	if sub.IncludeTerms != "" || sub.ExcludeTerms != "" {
		// The newest post that passes its filters.
		itemID, err := s.newestPassing(ctx, &sub)
		if err != nil || itemID == 0 {
			return err
		}
		q.sql(routeOneFrom).arg(itemID, "bigint").sql(" AND s.id = ").arg(subID, "bigint")
	} else {
		q.sql(routeNewestFrom).arg(subID, "bigint")
	}
	q = notPaused(q, now).sql("\nON CONFLICT (dedupe_key) DO NOTHING")
	if _, err := q.exec(ctx, s.psConn(ctx)); err != nil {
		return fmt.Errorf("send the newest post to subscription %d: %w", subID, err)
	}
	return nil
}
