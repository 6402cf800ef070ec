package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// The outbox: what the mailer's worker does with the rows it claimed
// (ClaimOutbox in claims.go). Every write is guarded by lease_owner and
// state = 'queued', so a worker whose lease ran out (another worker claimed
// the row since) changes nothing; the functions report how many rows they
// touched.
//
// A held row waits in state "held" with the reason in last_error (one of
// the Hold* constants below): credits arriving release rows held for
// credits (ledger.go), ClearBouncing releases rows held for a bouncing
// address. Held rows expire when they are older than the hold limit the
// mailer passes to ExpireHeld, counted from when the row was queued
// (created_at), so releases and re-holds cannot keep an email waiting for
// ever.
//
// Multi-table transactions lock the user row first and the outbox rows
// after, so that two of them never wait on each other in a cycle.

// Hold reasons, stored in last_error of a held row.
const (
	HoldCredits  = "held: waiting for credits"
	HoldBouncing = "held: address is bouncing"
)

// KeyFunc names the ledger entries of one outbox row: its charge and the
// refund of that charge. The mailer decides the scheme.
type KeyFunc func(row *OutboxEmail) (charge, refund string)

// CreditNotice builds the free out-of-credits notice for userID in notice
// episode episode (see noticeEpisode): its outbox dedupe key and content.
type CreditNotice func(userID, episode int64) (dedupeKey string, n Notice)

// ChargeOutcome is what ChargeOutbox did with one row.
type ChargeOutcome int

// Charge outcomes.
const (
	ChargeFree     ChargeOutcome = iota // costs nothing: send it
	Charged                             // charged now: send it
	ChargedBefore                       // an earlier attempt paid: send it, charge nothing
	HeldForCredits                      // the balance did not cover it: now held
	LeaseLost                           // no longer this worker's: leave it alone
)

func (c ChargeOutcome) String() string {
	switch c {
	case ChargeFree:
		return "free"
	case Charged:
		return "charged"
	case ChargedBefore:
		return "charged-before"
	case HeldForCredits:
		return "held"
	case LeaseLost:
		return "lease-lost"
	}
	return fmt.Sprintf("ChargeOutcome(%d)", int(c))
}

// Sendable reports whether the row may go out.
func (c ChargeOutcome) Sendable() bool {
	return c == ChargeFree || c == Charged || c == ChargedBefore
}

// ChargeOutbox charges the claimed rows (all of which owner holds) before
// they are sent, in one transaction: rows already charged by an earlier
// attempt (their charge key exists) are not charged again; the others are
// charged in the order given, each one if what is left of its person's
// balance covers it, and held for credits otherwise (so a 3-credit digest
// may wait while a later 1-credit email still fits). For each person with newly held rows whose
// current shortage has not been told yet (users.credit_notice_at is null),
// one free notice is queued (dedupe key from notice, so once per episode)
// and credit_notice_at is set. Rows owner no longer holds are LeaseLost.
// The result has one outcome per row.
func (s *Store) ChargeOutbox(ctx context.Context, owner string, rows []*OutboxEmail, keys KeyFunc, notice CreditNotice) ([]ChargeOutcome, error) {
	out := make([]ChargeOutcome, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	err := s.Tx(ctx, func(tx *Store) error {
		db := tx.DB.WithContext(ctx)
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		var mine []int64
		if err := db.Model(&OutboxEmail{}).Where("id IN ? AND lease_owner = ? AND state = ?", ids, owner, OutboxQueued).
			Pluck("id", &mine).Error; err != nil {
			return fmt.Errorf("check leases: %w", err)
		}
		held := make(map[int64]bool, len(mine))
		for _, id := range mine {
			held[id] = true
		}
		chargeKeys := make([]string, len(rows))
		var paidKeys []string
		for i, r := range rows {
			switch {
			case !held[r.ID]:
				out[i] = LeaseLost
			case r.Credits <= 0:
				out[i] = ChargeFree
			default:
				chargeKeys[i], _ = keys(r)
				paidKeys = append(paidKeys, chargeKeys[i])
			}
		}
		if len(paidKeys) == 0 {
			return nil
		}
		var existing []string
		if err := db.Model(&LedgerEntry{}).Where("idempotency_key IN ?", paidKeys).
			Pluck("idempotency_key", &existing).Error; err != nil {
			return fmt.Errorf("look up charges: %w", err)
		}
		done := make(map[string]bool, len(existing))
		for _, k := range existing {
			done[k] = true
		}
		var userIDs []int64
		seen := map[int64]bool{}
		for i, r := range rows {
			if chargeKeys[i] == "" {
				continue
			}
			if done[chargeKeys[i]] {
				out[i] = ChargedBefore
				continue
			}
			if !seen[r.UserID] {
				seen[r.UserID] = true
				userIDs = append(userIDs, r.UserID)
			}
		}
		if len(userIDs) == 0 {
			return nil
		}
		sort.Slice(userIDs, func(a, b int) bool { return userIDs[a] < userIDs[b] })
		balances, err := tx.ledgerLockUsers(ctx, userIDs)
		if err != nil {
			return err
		}
		now := tx.now()
		var entries []LedgerEntry
		var heldIDs []int64
		heldUsers := map[int64]bool{}
		changed := map[int64]bool{}
		for i, r := range rows {
			if chargeKeys[i] == "" || out[i] == ChargedBefore {
				continue
			}
			bal, ok := balances[r.UserID]
			if !ok {
				return fmt.Errorf("outbox %d: user %d: %w", r.ID, r.UserID, ErrNotFound)
			}
			next, err := applyAmount(bal, -int64(r.Credits))
			if err != nil {
				out[i] = HeldForCredits
				heldIDs = append(heldIDs, r.ID)
				heldUsers[r.UserID] = true
				continue
			}
			balances[r.UserID], changed[r.UserID] = next, true
			entries = append(entries, LedgerEntry{UserID: r.UserID, Kind: LedgerCharge, Amount: -int64(r.Credits),
				BalanceAfter: next, IdempotencyKey: chargeKeys[i], Reason: r.Kind + " email " + r.DedupeKey, CreatedAt: now})
			out[i] = Charged
		}
		if len(entries) > 0 {
			if err := db.CreateInBatches(&entries, 500).Error; err != nil {
				return fmt.Errorf("insert charges: %w", err)
			}
			vals := make(map[int64]any, len(changed))
			for u := range changed {
				vals[u] = balances[u]
			}
			q, args := outboxCaseUpdate("users", "balance", vals, "")
			if err := db.Exec(q, args...).Error; err != nil {
				return fmt.Errorf("update balances: %w", err)
			}
		}
		if len(heldIDs) == 0 {
			return nil
		}
		if err := db.Exec(`UPDATE outbox SET state = ?, last_error = ?, lease_owner = '', lease_until = NULL
WHERE id IN ? AND lease_owner = ?`, OutboxHeld, HoldCredits, heldIDs, owner).Error; err != nil {
			return fmt.Errorf("hold for credits: %w", err)
		}
		for _, u := range outboxSortedKeys(heldUsers) {
			if err := tx.noticeShortage(ctx, u, notice); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("charge outbox: %w", err)
	}
	return out, nil
}

// noticeShortage queues the out-of-credits notice for userID unless this
// shortage was already told. It runs inside Tx with the user locked.
func (s *Store) noticeShortage(ctx context.Context, userID int64, notice CreditNotice) error {
	if notice == nil {
		return nil
	}
	res := s.DB.WithContext(ctx).Exec(`UPDATE users SET credit_notice_at = ? WHERE id = ? AND credit_notice_at IS NULL`,
		s.now(), userID)
	if res.Error != nil {
		return fmt.Errorf("mark credit notice: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return nil
	}
	ep, err := s.noticeEpisode(ctx, userID)
	if err != nil {
		return err
	}
	key, n := notice(userID, ep)
	if _, err := s.QueueNotice(ctx, userID, key, n); err != nil {
		return err
	}
	return nil
}

// SentMark is one row accepted by the transport.
type SentMark struct {
	ID        int64
	UserID    int64
	MessageID string
}

// MarkOutboxSent records accepted rows as sent in one statement, with their
// Message-IDs, and returns how many owner still held. Accepted mail also
// resets its recipients' count of consecutive hard bounces.
func (s *Store) MarkOutboxSent(ctx context.Context, owner string, marks []SentMark) (int64, error) {
	if len(marks) == 0 {
		return 0, nil
	}
	vals := make(map[int64]any, len(marks))
	users := map[int64]bool{}
	for _, m := range marks {
		vals[m.ID] = m.MessageID
		users[m.UserID] = true
	}
	q, args := outboxCaseUpdate("outbox", "message_id", vals,
		"state = ?, sent_at = ?, attempts = attempts + 1, lease_owner = '', lease_until = NULL, last_error = ''")
	// caseUpdate puts the extra assignments first; their arguments lead.
	args = append([]any{OutboxSent, s.now()}, args...)
	q += " AND lease_owner = ? AND state = ?"
	args = append(args, owner, OutboxQueued)
	res := s.DB.WithContext(ctx).Exec(q, args...)
	if res.Error != nil {
		return 0, fmt.Errorf("mark sent: %w", res.Error)
	}
	// Outside any transaction on purpose: the user row is locked after the
	// outbox rows only in statements of their own (see the notes above).
	if err := s.DB.WithContext(ctx).Exec(`UPDATE users SET hard_bounces = 0 WHERE id IN ? AND hard_bounces > 0`,
		outboxSortedKeys(users)).Error; err != nil {
		return res.RowsAffected, fmt.Errorf("reset bounces: %w", err)
	}
	return res.RowsAffected, nil
}

// RetryOutbox puts a row owner holds back in the queue, due at next, after
// a failed attempt (attempts + 1, the failure kept in last_error). It
// reports whether owner still held the row.
func (s *Store) RetryOutbox(ctx context.Context, owner string, id int64, next time.Time, lastErr string) (bool, error) {
	res := s.DB.WithContext(ctx).Exec(`UPDATE outbox SET next_attempt_at = ?, attempts = attempts + 1, last_error = ?,
  lease_owner = '', lease_until = NULL WHERE id = ? AND lease_owner = ? AND state = ?`,
		utc(next), outboxClip(lastErr), id, owner, OutboxQueued)
	if res.Error != nil {
		return false, fmt.Errorf("retry outbox %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ReleaseOutbox gives rows back without counting an attempt (the worker is
// shutting down, or its lease is about to run out): they are due at once,
// for this or another process.
func (s *Store) ReleaseOutbox(ctx context.Context, owner string, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res := s.DB.WithContext(ctx).Exec(`UPDATE outbox SET next_attempt_at = ?, lease_owner = '', lease_until = NULL
WHERE id IN ? AND lease_owner = ? AND state = ?`, s.now(), ids, owner, OutboxQueued)
	if res.Error != nil {
		return 0, fmt.Errorf("release outbox: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// HoldOutbox holds a row owner holds, for reason (one of the Hold*
// constants). It reports whether owner still held the row.
func (s *Store) HoldOutbox(ctx context.Context, owner string, id int64, reason string) (bool, error) {
	res := s.DB.WithContext(ctx).Exec(`UPDATE outbox SET state = ?, last_error = ?, lease_owner = '', lease_until = NULL
WHERE id = ? AND lease_owner = ? AND state = ?`, OutboxHeld, reason, id, owner, OutboxQueued)
	if res.Error != nil {
		return false, fmt.Errorf("hold outbox %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// Failure describes a row that will not be sent.
type Failure struct {
	Owner  string
	Row    *OutboxEmail
	Reason string // kept in last_error
	// ChargeKey and RefundKey: when a charge with ChargeKey exists, it is
	// refunded under RefundKey. Empty for free rows.
	ChargeKey, RefundKey string
	// HardBounce counts the failure against the address (SMTP 5xx); at
	// BounceLimit consecutive ones the address is marked bouncing.
	HardBounce  bool
	BounceLimit int
}

// FailResult is what FailOutbox did.
type FailResult struct {
	Failed      bool  // false: owner no longer held the row; nothing changed
	Refunded    bool  // a charge was given back
	NowBouncing bool  // this failure marked the address bouncing
	Held        int64 // queued paid rows held because the address is now bouncing
}

// FailOutbox marks a row failed, in one transaction with its refund (if it
// was charged) and, for a hard bounce, the address's bounce count; the
// failure that reaches the limit marks the address bouncing
// (users.bouncing_since) and holds the person's queued paid email that no
// worker holds.
func (s *Store) FailOutbox(ctx context.Context, f Failure) (FailResult, error) {
	var r FailResult
	err := s.Tx(ctx, func(tx *Store) error {
		if _, err := tx.ledgerLockUser(ctx, f.Row.UserID); err != nil {
			return err
		}
		db := tx.DB.WithContext(ctx)
		res := db.Exec(`UPDATE outbox SET state = ?, last_error = ?, attempts = attempts + 1, lease_owner = '', lease_until = NULL
WHERE id = ? AND lease_owner = ? AND state = ?`, OutboxFailed, outboxClip(f.Reason), f.Row.ID, f.Owner, OutboxQueued)
		if res.Error != nil {
			return fmt.Errorf("mark failed: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		r.Failed = true
		if f.ChargeKey != "" {
			var err error
			if r.Refunded, err = tx.refundIfCharged(ctx, f.ChargeKey, f.RefundKey,
				"refund: "+f.Row.Kind+" email "+f.Row.DedupeKey+" failed"); err != nil {
				return err
			}
		}
		if !f.HardBounce {
			return nil
		}
		if err := db.Exec(`UPDATE users SET hard_bounces = hard_bounces + 1 WHERE id = ?`, f.Row.UserID).Error; err != nil {
			return fmt.Errorf("count bounce: %w", err)
		}
		limit := max(f.BounceLimit, 1)
		res = db.Exec(`UPDATE users SET bouncing_since = ? WHERE id = ? AND bouncing_since IS NULL AND hard_bounces >= ?`,
			tx.now(), f.Row.UserID, limit)
		if res.Error != nil {
			return fmt.Errorf("mark bouncing: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		r.NowBouncing = true
		res = db.Exec(`UPDATE outbox SET state = ?, last_error = ?
WHERE user_id = ? AND state = ? AND credits > 0 AND (lease_until IS NULL OR lease_until <= ?)`,
			OutboxHeld, HoldBouncing, f.Row.UserID, OutboxQueued, tx.now())
		if res.Error != nil {
			return fmt.Errorf("hold for bouncing: %w", res.Error)
		}
		r.Held = res.RowsAffected
		return nil
	})
	if err != nil {
		return FailResult{}, fmt.Errorf("fail outbox %d: %w", f.Row.ID, err)
	}
	return r, nil
}

// ClearBouncing takes the bouncing mark off userID's address (the person
// proved it works again, e.g. by confirming a subscription): the bounce
// count is zeroed and email held for the bouncing address goes back to the
// queue. It returns how many emails were released.
func (s *Store) ClearBouncing(ctx context.Context, userID int64) (int64, error) {
	var n int64
	err := s.Tx(ctx, func(tx *Store) error {
		if _, err := tx.ledgerLockUser(ctx, userID); err != nil {
			return err
		}
		if err := tx.DB.WithContext(ctx).Exec(`UPDATE users SET hard_bounces = 0, bouncing_since = NULL WHERE id = ?`,
			userID).Error; err != nil {
			return err
		}
		var err error
		n, err = tx.releaseHeld(ctx, userID, HoldBouncing)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("clear bouncing of user %d: %w", userID, err)
	}
	return n, nil
}

// ExpireHeld ends held rows queued more than holdFor before now (state
// "expired"), refunding any that an earlier attempt had charged, and returns
// them. At most limit rows per call.
func (s *Store) ExpireHeld(ctx context.Context, now time.Time, holdFor time.Duration, limit int, keys KeyFunc) ([]OutboxEmail, error) {
	var due []OutboxEmail
	if err := s.DB.WithContext(ctx).Where("state = ? AND created_at <= ?", OutboxHeld, utc(now.Add(-holdFor))).
		Order("id").Limit(limit).Find(&due).Error; err != nil {
		return nil, fmt.Errorf("find expired held email: %w", err)
	}
	var out []OutboxEmail
	for i := range due {
		row := &due[i]
		expired := false
		err := s.Tx(ctx, func(tx *Store) error {
			if _, err := tx.ledgerLockUser(ctx, row.UserID); err != nil {
				return err
			}
			res := tx.DB.WithContext(ctx).Exec(`UPDATE outbox SET state = ?, last_error = ? WHERE id = ? AND state = ?`,
				OutboxExpired, outboxClip("expired: "+row.LastError), row.ID, OutboxHeld)
			if res.Error != nil {
				return res.Error
			}
			expired = res.RowsAffected == 1
			if !expired || row.Credits <= 0 || keys == nil {
				return nil
			}
			charge, refund := keys(row)
			_, err := tx.refundIfCharged(ctx, charge, refund, "refund: "+row.Kind+" email "+row.DedupeKey+" expired")
			return err
		})
		if err != nil {
			return out, fmt.Errorf("expire outbox %d: %w", row.ID, err)
		}
		if expired {
			row.State = OutboxExpired
			out = append(out, *row)
		}
	}
	return out, nil
}

// OutboxDepths counts queued and held email, for the queue-depth gauges
// ("outbox" and "held").
func (s *Store) OutboxDepths(ctx context.Context) (map[string]int64, error) {
	type row struct {
		State string
		N     int64
	}
	var rows []row
	if err := s.DB.WithContext(ctx).Raw(`SELECT state, COUNT(*) AS n FROM outbox WHERE state IN (?, ?) GROUP BY state`,
		OutboxQueued, OutboxHeld).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("outbox depths: %w", err)
	}
	out := map[string]int64{"outbox": 0, "held": 0}
	for _, r := range rows {
		if r.State == OutboxQueued {
			out["outbox"] = r.N
		} else {
			out["held"] = r.N
		}
	}
	return out, nil
}

// OutboxByID looks an outbox row up.
func (s *Store) OutboxByID(ctx context.Context, id int64) (*OutboxEmail, error) {
	var r OutboxEmail
	if err := s.DB.WithContext(ctx).Take(&r, id).Error; err != nil {
		return nil, fmt.Errorf("outbox %d: %w", id, notFound(err))
	}
	return &r, nil
}

// UsersByIDs loads users by id.
func (s *Store) UsersByIDs(ctx context.Context, ids []int64) (map[int64]*User, error) {
	out := make(map[int64]*User, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var us []User
	if err := s.DB.WithContext(ctx).Where("id IN ?", outboxUniq(ids)).Find(&us).Error; err != nil {
		return nil, fmt.Errorf("load users: %w", err)
	}
	for i := range us {
		out[us[i].ID] = &us[i]
	}
	return out, nil
}

// ItemDelivery is what an instant email is made of.
type ItemDelivery struct {
	Item         *Item
	Feed         *Feed
	Subscription *Subscription
}

// ItemDeliveries loads the item, feed and subscription of each "item" row,
// in three queries whatever the number of rows, keyed by outbox id. A row
// whose item or subscription is gone (or was never set) has no entry.
func (s *Store) ItemDeliveries(ctx context.Context, rows []*OutboxEmail) (map[int64]ItemDelivery, error) {
	out := make(map[int64]ItemDelivery, len(rows))
	var itemIDs, subIDs []int64
	for _, r := range rows {
		if r.ItemID != nil && r.SubscriptionID != nil {
			itemIDs, subIDs = append(itemIDs, *r.ItemID), append(subIDs, *r.SubscriptionID)
		}
	}
	if len(itemIDs) == 0 {
		return out, nil
	}
	db := s.DB.WithContext(ctx)
	var items []Item
	if err := db.Where("id IN ?", outboxUniq(itemIDs)).Find(&items).Error; err != nil {
		return nil, fmt.Errorf("load items: %w", err)
	}
	var subs []Subscription
	if err := db.Where("id IN ?", outboxUniq(subIDs)).Find(&subs).Error; err != nil {
		return nil, fmt.Errorf("load subscriptions: %w", err)
	}
	itemBy := make(map[int64]*Item, len(items))
	var feedIDs []int64
	for i := range items {
		itemBy[items[i].ID] = &items[i]
		feedIDs = append(feedIDs, items[i].FeedID)
	}
	var feeds []Feed
	if err := db.Where("id IN ?", outboxUniq(feedIDs)).Find(&feeds).Error; err != nil {
		return nil, fmt.Errorf("load feeds: %w", err)
	}
	feedBy := make(map[int64]*Feed, len(feeds))
	for i := range feeds {
		feedBy[feeds[i].ID] = &feeds[i]
	}
	subBy := make(map[int64]*Subscription, len(subs))
	for i := range subs {
		subBy[subs[i].ID] = &subs[i]
	}
	for _, r := range rows {
		if r.ItemID == nil || r.SubscriptionID == nil {
			continue
		}
		it, sub := itemBy[*r.ItemID], subBy[*r.SubscriptionID]
		if it == nil || sub == nil || feedBy[it.FeedID] == nil {
			continue
		}
		out[r.ID] = ItemDelivery{Item: it, Feed: feedBy[it.FeedID], Subscription: sub}
	}
	return out, nil
}

// caseUpdate builds "UPDATE table SET [extra, ]col = CASE id WHEN ? THEN ?
// … ELSE col END WHERE id IN ?" for per-row values in one statement. The
// caller supplies extra's arguments before the returned ones.
func outboxCaseUpdate(table, col string, vals map[int64]any, extra string) (string, []any) {
	ids := make([]int64, 0, len(vals))
	for id := range vals {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	var b strings.Builder
	args := make([]any, 0, 2*len(ids)+1)
	b.WriteString("UPDATE " + table + " SET ")
	if extra != "" {
		b.WriteString(extra + ", ")
	}
	b.WriteString(col + " = CASE id")
	for _, id := range ids {
		b.WriteString(" WHEN ? THEN ?")
		args = append(args, id, vals[id])
	}
	b.WriteString(" ELSE " + col + " END WHERE id IN ?")
	args = append(args, ids)
	return b.String(), args
}

// clip keeps an error text within reason for a column.
func outboxClip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= 1000 {
		return s
	}
	cut := 1000
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func outboxUniq(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func outboxSortedKeys(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}
