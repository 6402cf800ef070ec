package poller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/recovery"
	"github.com/feedmail/feedmail/internal/store"
)

// ErrNotMovable is returned for a move to a feed that cannot take readers
// (the same feed, or one that is gone or merged).
var ErrNotMovable = errors.New("cannot move readers there")

// applyRecovery carries out rep's verdict on feed f (res is the attempt
// that reached it) and records the attempt on the feed: readers moved and
// told (moved), offered the new address (offered), or, once the feed has
// ailed TellAfter, told once that nothing was found (none). The next
// attempt is planned by RetryAfter, or StaleRecheck for a feed that
// answers; none after a move.
func (p *Poller) applyRecovery(ctx context.Context, f *store.Feed, res recovery.Result, rep *RecoverReport, now time.Time) error {
	failing := f.ConsecutiveErrors > 0
	episode := episodeOf(f)
	rec := store.RecoveryRecord{At: now, Attempts: 1, Episode: episode, State: f.RecoveryState}
	if sameTime(f.RecoveryEpisode, episode) {
		rec.Attempts = f.RecoveryAttempts + 1
	} else {
		rec.State = store.RecoveryNone
	}
	next := now.Add(StaleRecheck)
	if failing {
		next = now.Add(RetryAfter(rec.Attempts))
	}
	rec.NextAt = &next
	var err error
	switch rep.Verdict {
	case VerdictMoved:
		c := chosen(res)
		why := "feedmail found it there (" + c.FoundBy + ") with " + strconv.Itoa(c.PostsInCommon) + " posts in common with the old address."
		rep.Readers, rep.Told, err = p.moveReaders(ctx, f, c, res.To, store.FeedMove{Kind: store.MoveSame,
			FoundBy: c.FoundBy, PostsInCommon: c.PostsInCommon, Reason: why}, why)
		rec.State, rec.NextAt = store.RecoveryMoved, nil
	case VerdictOffered:
		rep.Readers, rep.Told, err = p.offerReaders(ctx, f, chosen(res), res.To)
		rec.State = store.RecoveryOffered
	default:
		switch {
		case !failing:
			rec.State = store.RecoveryNone // stale, and nothing newer on its site
		case rec.State == store.RecoveryTold || rec.State == store.RecoveryOffered:
		case TellReaders(f, now):
			rep.Told, err = p.tellAiling(ctx, f, res.Tried)
			rec.State = store.RecoveryTold
		case Ailing(f, now):
			rec.State = store.RecoveryAiling
		}
	}
	if err != nil {
		return err
	}
	if rep.Verdict != VerdictMoved && !failing && rep.Verdict != VerdictNone {
		rep.State = store.RecoveryFrozen
	}
	if rep.Verdict == VerdictOffered && !failing {
		rec.State = store.RecoveryFrozen
	}
	rec.Note = noteOf(rep)
	return p.st.RecordRecovery(ctx, f.ID, rec)
}

// episodeOf is what the rediscovery attempts of f belong to: the start of
// its errors, or for a feed that answers, its last new post.
func episodeOf(f *store.Feed) *time.Time {
	if f.ConsecutiveErrors > 0 {
		return f.ErrorsSince
	}
	return f.LastNewItemAt
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// chosen is the candidate whose URL is the attempt's verdict.
func chosen(res recovery.Result) *recovery.Candidate {
	for i := range res.Candidates {
		if res.Candidates[i].URL == res.To {
			return &res.Candidates[i]
		}
	}
	return &recovery.Candidate{URL: res.To}
}

// target is the feed with URL to, created when new and primed with the
// candidate's document when there is one: of what the new address holds
// now, the posts the old feed had (dated up to its newest post, or
// undated) are seen, never mailed; newer ones are left for the new feed's
// first poll to deliver, since they were published while the old address
// failed. The fetch is not kept as a poll (no validators), so that first
// poll reads the whole document.
func (p *Poller) target(ctx context.Context, from *store.Feed, c *recovery.Candidate, to string) (*store.Feed, error) {
	t, _, err := p.st.EnsureFeed(ctx, to)
	if err != nil {
		return nil, fmt.Errorf("poller: %w", err)
	}
	if t.ID == from.ID || t.State != store.FeedActive {
		return nil, fmt.Errorf("%w: %s is feed %d, %s", ErrNotMovable, to, t.ID, t.State)
	}
	if c != nil && c.Parsed != nil {
		seen := *c.Parsed
		seen.Items = seenBefore(c.Parsed.Items, from.NewestItemDate)
		d := newitems.Document{Feed: &seen}
		if c.Resp != nil {
			d.Bytes = int64(len(c.Resp.Body))
		}
		if err := p.Baselines(ctx, map[int64]newitems.Document{t.ID: d}); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// seenBefore keeps the items dated up to newest, and the undated ones
// (all of them when newest is unknown).
func seenBefore(items []newitems.Item, newest *time.Time) []newitems.Item {
	if newest == nil {
		return items
	}
	out := make([]newitems.Item, 0, len(items))
	for _, it := range items {
		if it.Published.IsZero() || !it.Published.After(*newest) {
			out = append(out, it)
		}
	}
	return out
}

// moveReaders moves every reader of feed from to the feed at to (m says
// how it was found) and tells each person once, with undo and unsubscribe
// buttons. It returns the subscriptions moved and the notices queued.
func (p *Poller) moveReaders(ctx context.Context, from *store.Feed, c *recovery.Candidate, to string, m store.FeedMove, why string) (int, int, error) {
	t, err := p.target(ctx, from, c, to)
	if err != nil {
		return 0, 0, err
	}
	mv, sides, err := p.st.MoveReaders(ctx, from.ID, t.ID, m)
	if err != nil {
		return 0, 0, fmt.Errorf("poller: %w", err)
	}
	told, err := p.tellEach(ctx, sides, func(user int64, ch []notices.ReaderChoice) (string, store.Notice) {
		return notices.FeedMovedKey(mv.ID, user), notices.FeedMoved(p.cfg.Links, p.clk.Now(), *from, t.URL, why, user, ch)
	})
	return len(sides), told, err
}

// offerReaders offers every reader of feed from the feed at to (c, found
// by a rediscovery: same site, no post in common), once each.
func (p *Poller) offerReaders(ctx context.Context, from *store.Feed, c *recovery.Candidate, to string) (int, int, error) {
	t, err := p.target(ctx, from, c, to)
	if err != nil {
		return 0, 0, err
	}
	why := "feedmail found it " + c.FoundBy + "."
	mv, sides, err := p.st.OfferMove(ctx, from.ID, t.ID, store.FeedMove{Kind: store.MoveOffered, FoundBy: c.FoundBy, Reason: why})
	if err != nil {
		return 0, 0, fmt.Errorf("poller: %w", err)
	}
	told, err := p.tellEach(ctx, sides, func(user int64, ch []notices.ReaderChoice) (string, store.Notice) {
		return notices.FeedOfferedKey(mv.ID, user), notices.FeedOffered(p.cfg.Links, p.clk.Now(), *from, t.URL, why, user, ch)
	})
	return len(sides), told, err
}

// tellEach queues one notice per person among sides (their sides grouped
// into choices), made by notice; it returns how many were queued (a key
// already used queues nothing).
func (p *Poller) tellEach(ctx context.Context, sides []store.ReaderMove, notice func(int64, []notices.ReaderChoice) (string, store.Notice)) (int, error) {
	choices := make([]notices.ReaderChoice, len(sides))
	users := make([]int64, len(sides))
	for i, s := range sides {
		choices[i], users[i] = notices.ReaderChoice{ReaderMoveID: s.ID, SubscriptionID: s.SubscriptionID}, s.UserID
	}
	return p.tellPeople(ctx, users, choices, notice)
}

// tellAiling tells each active reader of f once that it has failed for
// about a week and that nothing was found (tried: the addresses tried).
func (p *Poller) tellAiling(ctx context.Context, f *store.Feed, tried []string) (int, error) {
	subs, err := p.st.ActiveSubscriptionsOf(ctx, f.ID)
	if err != nil {
		return 0, fmt.Errorf("poller: %w", err)
	}
	choices := make([]notices.ReaderChoice, len(subs))
	users := make([]int64, len(subs))
	for i, s := range subs {
		choices[i], users[i] = notices.ReaderChoice{SubscriptionID: s.ID}, s.UserID
	}
	return p.tellPeople(ctx, users, choices, func(u int64, ch []notices.ReaderChoice) (string, store.Notice) {
		ids := make([]int64, len(ch))
		for i, c := range ch {
			ids[i] = c.SubscriptionID
		}
		return notices.FeedAilingKey(*f, u), notices.FeedAiling(p.cfg.Links, p.clk.Now(), *f, tried, u, ids)
	})
}

// tellPeople queues one notice per person of users (choices[i] belongs to
// users[i]), made by notice from that person's choices, in the order the
// people first appear; it returns how many were queued.
func (p *Poller) tellPeople(ctx context.Context, users []int64, choices []notices.ReaderChoice, notice func(int64, []notices.ReaderChoice) (string, store.Notice)) (int, error) {
	byUser := map[int64][]notices.ReaderChoice{}
	var order []int64
	for i, u := range users {
		if _, ok := byUser[u]; !ok {
			order = append(order, u)
		}
		byUser[u] = append(byUser[u], choices[i])
	}
	n := 0
	for _, u := range order {
		key, msg := notice(u, byUser[u])
		ok, err := p.st.QueueNotice(ctx, u, key, msg)
		if err != nil {
			return n, fmt.Errorf("poller: notice to user %d: %w", u, err)
		}
		if ok {
			n++
		}
	}
	return n, nil
}
