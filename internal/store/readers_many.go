package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm/clause"

	"github.com/feedmail/feedmail/internal/model"
)

// Readers in bulk, for an operator's import of many people at once: a few
// statements per few hundred people, in the caller's transaction.

// usersChunk is how many users one INSERT of EnsureUsers writes (about 25
// columns, under SQLite's parameter limit).
const usersChunk = 500

// EnsureUsers is EnsureUser for many addresses, in a few statements: it
// returns every account by normalized address (NormalizeEmail) and the
// ids of those this call created, which have no balance, ledger or
// subscriptions yet.
func (s *Store) EnsureUsers(ctx context.Context, emails []string) (map[string]*User, map[int64]bool, error) {
	norm := make([]string, 0, len(emails))
	seen := make(map[string]bool, len(emails))
	for _, e := range emails {
		if n := NormalizeEmail(e); !seen[n] {
			seen[n] = true
			norm = append(norm, n)
		}
	}
	have, err := s.usersByEmail(ctx, norm)
	if err != nil {
		return nil, nil, err
	}
	now := s.now()
	var missing []User
	var missingEmails []string
	for _, e := range norm {
		if have[e] == nil {
			missing = append(missing, User{Email: e, Timezone: "UTC", CreatedAt: now})
			missingEmails = append(missingEmails, e)
		}
	}
	created := make(map[int64]bool, len(missing))
	if len(missing) == 0 {
		return have, created, nil
	}
	if err := s.DB.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).
		CreateInBatches(&missing, usersChunk).Error; err != nil {
		return nil, nil, fmt.Errorf("create users: %w", err)
	}
	made, err := s.usersByEmail(ctx, missingEmails)
	if err != nil {
		return nil, nil, err
	}
	for e, u := range made {
		have[e], created[u.ID] = u, true
	}
	return have, created, nil
}

// usersByEmail returns the accounts (not deleted) with these normalized
// addresses, by address.
func (s *Store) usersByEmail(ctx context.Context, emails []string) (map[string]*User, error) {
	out := make(map[string]*User, len(emails))
	for start := 0; start < len(emails); start += psChunk {
		var rows []User
		part := emails[start:min(start+psChunk, len(emails))]
		if err := s.DB.WithContext(ctx).Where("email IN ? AND deleted_at IS NULL", part).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("users by email: %w", err)
		}
		for i := range rows {
			out[rows[i].Email] = &rows[i]
		}
	}
	return out, nil
}

// ReaderSubscription is one email subscription SubscribeReaders adds.
type ReaderSubscription struct {
	UserID, FeedID int64
	Folder         string
}

// ReaderFeed names a subscription by person and feed.
type ReaderFeed struct{ UserID, FeedID int64 }

// SubscribeReaders is SubscribeMany for many people at once, in the
// caller's transaction: email deliveries confirmed by confirmedBy ("":
// pending). A person's subscription that exists and is active, or pending
// with nothing to confirm it, is left as it is and returned in already;
// an ended one, or a pending one now confirmed, is taken up as
// SubscribeConfirmedBy does; the rest are inserted several hundred a
// statement. fresh holds people created by this import (EnsureUsers),
// who have no subscriptions to look up: the feeds only they joined get
// their subscriber counts raised, the others recounted.
func (s *Store) SubscribeReaders(ctx context.Context, subs []ReaderSubscription, confirmedBy string, fresh map[int64]bool) (map[ReaderFeed]bool, error) {
	existing, err := s.emailSubscriptionsOf(ctx, subs, fresh)
	if err != nil {
		return nil, err
	}
	already := map[ReaderFeed]bool{}
	var rows []Subscription
	recount := map[int64]bool{}
	for _, n := range subs {
		key := ReaderFeed{n.UserID, n.FeedID}
		sub := existing[key]
		switch {
		case sub == nil:
			row := s.newSubscription(n.UserID, n.FeedID, nil, confirmedBy)
			row.Folder = n.Folder
			rows = append(rows, row)
		case sub.State == SubActive || (sub.State == SubPending && confirmedBy == ""):
			already[key] = true
		default:
			if err := s.resubscribe(ctx, sub, nil, confirmedBy); err != nil {
				return nil, err
			}
		}
		if !fresh[n.UserID] {
			recount[n.FeedID] = true
		}
	}
	if len(rows) > 0 {
		if err := s.DB.WithContext(ctx).CreateInBatches(&rows, subscribeManyChunk).Error; err != nil {
			return nil, fmt.Errorf("create subscriptions: %w", err)
		}
	}
	if err := s.raiseSubscriberCounts(ctx, rows, recount); err != nil {
		return nil, err
	}
	return already, s.recountSubscribersOf(mapKeys(recount))
}

// emailSubscriptionsOf returns the email subscriptions (any state) that the
// people of subs who are not fresh have to the feeds of subs.
func (s *Store) emailSubscriptionsOf(ctx context.Context, subs []ReaderSubscription, fresh map[int64]bool) (map[ReaderFeed]*Subscription, error) {
	users, feeds := map[int64]bool{}, map[int64]bool{}
	for _, n := range subs {
		if !fresh[n.UserID] {
			users[n.UserID], feeds[n.FeedID] = true, true
		}
	}
	out := map[ReaderFeed]*Subscription{}
	uids, fids := mapKeys(users), mapKeys(feeds)
	for us := 0; us < len(uids); us += psChunk {
		for fs := 0; fs < len(fids); fs += psChunk {
			var rows []Subscription
			err := s.DB.WithContext(ctx).Where("channel = ? AND target = '' AND user_id IN ? AND feed_id IN ?", model.ChannelEmail,
				uids[us:min(us+psChunk, len(uids))], fids[fs:min(fs+psChunk, len(fids))]).Find(&rows).Error
			if err != nil {
				return nil, fmt.Errorf("subscriptions of readers: %w", err)
			}
			for i := range rows {
				out[ReaderFeed{rows[i].UserID, rows[i].FeedID}] = &rows[i]
			}
		}
	}
	return out, nil
}

// raiseSubscriberCounts adds to each feed's subscriber count the active
// rows just inserted for it, leaving out the feeds to be recounted; one
// statement per few hundred feeds, rows locked in id order (on Postgres)
// as the poller's writes lock them.
func (s *Store) raiseSubscriberCounts(ctx context.Context, inserted []Subscription, recount map[int64]bool) error {
	by := map[int64]int{}
	for _, r := range inserted {
		if r.State == SubActive && !recount[r.FeedID] {
			by[r.FeedID]++
		}
	}
	ids := mapKeys(by)
	for start := 0; start < len(ids); start += psChunk {
		part := ids[start:min(start+psChunk, len(ids))]
		var b strings.Builder
		args := make([]any, 0, 2*len(part)+1)
		b.WriteString("UPDATE feeds SET subscriber_count = subscriber_count + CASE id")
		for _, id := range part {
			b.WriteString(" WHEN ? THEN ?")
			args = append(args, id, by[id])
		}
		b.WriteString(" ELSE 0 END WHERE id IN (SELECT id FROM feeds WHERE id IN ?" + s.sqlDialect().lockOrderedBy("id") + ")")
		args = append(args, part)
		if err := s.DB.WithContext(ctx).Exec(b.String(), args...).Error; err != nil {
			return fmt.Errorf("raise subscriber counts: %w", err)
		}
	}
	return nil
}

// ConfirmReaders is what a confirmed import does for each person of ids,
// in the caller's transaction: their address counts as confirmed (the
// bouncing mark stays), their running-low line is due again, and they get
// the trial credits once. The people in fresh (created by this import,
// nothing on their ledger) get them in a few multi-row statements; the
// others one by one, as GrantTrialOnce does.
func (s *Store) ConfirmReaders(ctx context.Context, ids []int64, fresh map[int64]bool, credits int64) error {
	if len(ids) == 0 {
		return nil
	}
	ids = slices.Sorted(slices.Values(ids))
	now := utc(s.now())
	var untried []User
	for start := 0; start < len(ids); start += psChunk {
		part := ids[start:min(start+psChunk, len(ids))]
		db := s.DB.WithContext(ctx)
		if err := db.Model(&User{}).Where("id IN ? AND confirmed_at IS NULL", part).Update("confirmed_at", now).Error; err != nil {
			return fmt.Errorf("confirm readers: %w", err)
		}
		if err := db.Model(&User{}).Where("id IN ? AND low_line_due > ?", part, now).UpdateColumn("low_line_due", now).Error; err != nil {
			return fmt.Errorf("running-low lines of readers: %w", err)
		}
		var rows []User
		q := s.sqlDialect().lockRow(db.Select("id", "balance").Where("id IN ? AND NOT trial_granted", part).Order("id"))
		if err := q.Find(&rows).Error; err != nil {
			return fmt.Errorf("readers without trial: %w", err)
		}
		untried = append(untried, rows...)
	}
	var bulk []int64
	for _, u := range untried {
		if fresh[u.ID] && u.Balance == 0 {
			bulk = append(bulk, u.ID)
			continue
		}
		if _, _, err := s.GrantTrialOnce(ctx, u.ID, credits); err != nil {
			return err
		}
	}
	return s.grantFreshTrials(ctx, bulk, credits)
}

// grantFreshTrials grants the trial credits to people with nothing on
// their ledger: one grant each (its key the trial's, so GrantTrialOnce
// never grants it again), the balance set to it, trial_granted set.
func (s *Store) grantFreshTrials(ctx context.Context, ids []int64, credits int64) error {
	for start := 0; start < len(ids); start += psChunk {
		part := ids[start:min(start+psChunk, len(ids))]
		db := s.DB.WithContext(ctx)
		if credits > 0 {
			now := s.now()
			entries := make([]LedgerEntry, len(part))
			for i, id := range part {
				entries[i] = LedgerEntry{UserID: id, Kind: LedgerGrant, Amount: credits, BalanceAfter: credits,
					IdempotencyKey: TrialKey(id), Reason: "trial credits", CreatedAt: now}
			}
			if err := db.Create(&entries).Error; err != nil {
				return fmt.Errorf("trial credits: %w", err)
			}
		}
		if err := db.Model(&User{}).Where("id IN ? AND NOT trial_granted AND balance = 0", part).
			Updates(map[string]any{"trial_granted": true, "balance": credits}).Error; err != nil {
			return fmt.Errorf("trial balances: %w", err)
		}
	}
	return nil
}

// mapKeys returns m's keys in increasing order.
func mapKeys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
