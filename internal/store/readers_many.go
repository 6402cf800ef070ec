package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/model"
)

// Readers in bulk, for an operator's import of many people at once: a few
// statements per few hundred people, in the caller's transaction.

// NewUsers says how EnsureUsers creates the accounts missing: with
// Confirmed, confirmed now (the operator vouched for the addresses) and
// granted Trial credits in the same statements (trial_granted set, the
// balance and one grant on the ledger, keyed as GrantTrialOnce keys it).
type NewUsers struct {
	Confirmed bool
	Trial     int64
}

// EnsureUsers is EnsureUser for many addresses, in a few statements: it
// returns every account by normalized address (NormalizeEmail) and the
// ids of those this call created (as how says; an address another
// process creates meanwhile is found, not created).
func (s *Store) EnsureUsers(ctx context.Context, emails []string, how NewUsers) (map[string]*User, map[int64]bool, error) {
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
	var missing []string
	for _, e := range norm {
		if have[e] == nil {
			missing = append(missing, e)
		}
	}
	created := make(map[int64]bool, len(missing))
	step := s.rowsPerInsert(6)
	for start := 0; start < len(missing); start += step {
		made, err := s.createUsers(ctx, missing[start:min(start+step, len(missing))], how)
		if err != nil {
			return nil, nil, err
		}
		for i := range made {
			have[made[i].Email], created[made[i].ID] = &made[i], true
		}
	}
	if len(created) < len(missing) { // some were created meanwhile
		var raced []string
		for _, e := range missing {
			if have[e] == nil {
				raced = append(raced, e)
			}
		}
		found, err := s.usersByEmail(ctx, raced)
		if err != nil {
			return nil, nil, err
		}
		maps.Copy(have, found)
	}
	return have, created, nil
}

// createUsers inserts accounts for emails (skipping any that exists) in
// one statement and returns those it inserted, with their trial's ledger
// entries when how grants one.
func (s *Store) createUsers(ctx context.Context, emails []string, how NewUsers) ([]User, error) {
	now := s.now()
	var confirmedAt *time.Time
	var trial int64
	if how.Confirmed {
		confirmedAt, trial = &now, max(how.Trial, 0)
	}
	args := make([]any, 0, 6*len(emails))
	for _, e := range emails {
		args = append(args, e, "UTC", now, confirmedAt, how.Confirmed, trial)
	}
	rows, err := s.DB.WithContext(ctx).Raw("INSERT INTO users (email, timezone, created_at, confirmed_at, trial_granted, balance) VALUES "+
		valuesRows(6, len(emails))+" ON CONFLICT (email) DO NOTHING RETURNING id, email", args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("create users: %w", err)
	}
	var made []User
	for rows.Next() {
		u := User{Timezone: "UTC", CreatedAt: now, ConfirmedAt: confirmedAt, TrialGranted: how.Confirmed, Balance: trial}
		if err := rows.Scan(&u.ID, &u.Email); err != nil {
			rows.Close()
			return nil, fmt.Errorf("create users: %w", err)
		}
		made = append(made, u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("create users: %w", err)
	}
	if trial == 0 || len(made) == 0 {
		return made, nil
	}
	entries := make([]LedgerEntry, len(made))
	for i, u := range made {
		entries[i] = LedgerEntry{UserID: u.ID, Kind: LedgerGrant, Amount: trial, BalanceAfter: trial,
			IdempotencyKey: TrialKey(u.ID), Reason: "trial credits", CreatedAt: now}
	}
	if err := s.DB.WithContext(ctx).CreateInBatches(&entries, s.rowsPerInsert(7)).Error; err != nil {
		return nil, fmt.Errorf("trial credits: %w", err)
	}
	return made, nil
}

// subscriptionColumns is about how many columns a Subscription row
// inserts.
const subscriptionColumns = 22

// rowsPerInsert is how many rows of width columns one multi-row INSERT of
// an import writes: psChunk on Postgres; on SQLite about 1,000 parameters'
// worth, since its driver binds each parameter by looking through all of
// the statement's (binding costs the square of the parameters).
func (s *Store) rowsPerInsert(width int) int {
	if s.Postgres() {
		return psChunk
	}
	return max(1000/width, 1)
}

// valuesRows is "(?, …), …": n rows of width parameters.
func valuesRows(width, n int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
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
// who have no subscriptions to look up. Subscriber counts follow: the
// feeds in counted (EnsureNewFeeds counted them) are left alone, the
// feeds only fresh people joined are raised, the others recounted.
func (s *Store) SubscribeReaders(ctx context.Context, subs []ReaderSubscription, confirmedBy string, fresh, counted map[int64]bool) (map[ReaderFeed]bool, error) {
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
		if !fresh[n.UserID] && !counted[n.FeedID] {
			recount[n.FeedID] = true
		}
	}
	if len(rows) > 0 {
		if err := s.DB.WithContext(ctx).CreateInBatches(&rows, s.rowsPerInsert(subscriptionColumns)).Error; err != nil {
			return nil, fmt.Errorf("create subscriptions: %w", err)
		}
	}
	if err := s.raiseSubscriberCounts(ctx, rows, recount, counted); err != nil {
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
// rows just inserted for it, leaving out the feeds to be recounted and
// those counted already; one
// statement per few hundred feeds, rows locked in id order (on Postgres)
// as the poller's writes lock them.
func (s *Store) raiseSubscriberCounts(ctx context.Context, inserted []Subscription, recount, counted map[int64]bool) error {
	by := map[int64]int{}
	for _, r := range inserted {
		if r.State == SubActive && !recount[r.FeedID] && !counted[r.FeedID] {
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

// ConfirmReaders is what a confirmed import does for each person of ids
// who had an account (EnsureUsers confirms the ones it creates), in the
// caller's transaction: their address counts as confirmed (the bouncing
// mark stays), their running-low line is due again, and they get the
// trial credits once (GrantTrialOnce).
func (s *Store) ConfirmReaders(ctx context.Context, ids []int64, credits int64) error {
	ids = slices.Sorted(slices.Values(ids))
	now := utc(s.now())
	for start := 0; start < len(ids); start += psChunk {
		part := ids[start:min(start+psChunk, len(ids))]
		db := s.DB.WithContext(ctx)
		if err := db.Model(&User{}).Where("id IN ? AND confirmed_at IS NULL", part).Update("confirmed_at", now).Error; err != nil {
			return fmt.Errorf("confirm readers: %w", err)
		}
		if err := db.Model(&User{}).Where("id IN ? AND low_line_due > ?", part, now).UpdateColumn("low_line_due", now).Error; err != nil {
			return fmt.Errorf("running-low lines of readers: %w", err)
		}
		var untried []int64
		if err := db.Model(&User{}).Where("id IN ? AND NOT trial_granted", part).Order("id").Pluck("id", &untried).Error; err != nil {
			return fmt.Errorf("readers without trial: %w", err)
		}
		for _, id := range untried {
			if _, _, err := s.GrantTrialOnce(ctx, id, credits); err != nil {
				return err
			}
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
