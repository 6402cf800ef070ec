package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/feedmail/feedmail/billing"
)

// SlotPlan is what package digest decided for one claimed digest.
type SlotPlan struct {
	DigestID int64
	// Slot is the slot the issue is for: the newest slot at or before now,
	// so slots missed during downtime collapse into one issue. The zero
	// time means no slot is due after all (the schedule was changed under
	// the claim): only Next is applied and waiting items stay queued.
	Slot time.Time
	// Next is the digest's following slot, strictly after now.
	Next time.Time
}

// AssembleResult counts what one AssembleDigestIssues call did.
type AssembleResult struct {
	// Issued is the number of new issues, each queued as one outbox email.
	Issued int
	// Joined is the number of digests whose new items joined an issue that
	// waits for credits (see AssembleDigestIssues).
	Joined int
	// Empty is the number of digests with nothing waiting: the slot passed
	// and nothing was sent or charged.
	Empty int
	// Skipped is the number of plans for digests no longer leased by the
	// caller (its lease ran out and another worker took the digest over);
	// nothing was done for them.
	Skipped int
	// IssueIDs are the new issues.
	IssueIDs []int64
	// Credits is the sum of the credits on the new issues' outbox rows.
	Credits int64
}

// AssembleDigestIssues turns the slots of digests leased by owner into
// issues, in one transaction for the batch. Digests no longer leased are
// skipped, waiting items of ended subscriptions dropped, and a digest with
// nothing waiting gets no issue. New items join an issue whose email is
// held (repriced), else a new issue for (digest, slot) becomes one outbox
// email costing charge(feeds with items). Last the digest moves to
// plan.Next and its lease is released. A crash rolls everything back and
// the slot is assembled again when the lease runs out.
func (s *Store) AssembleDigestIssues(ctx context.Context, owner string, plans []SlotPlan, charge func(feeds int) int) (AssembleResult, error) {
	var res AssembleResult
	if len(plans) == 0 {
		return res, nil
	}
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		res, err = tx.assemble(owner, plans, charge)
		return err
	})
	if err != nil {
		return AssembleResult{}, fmt.Errorf("assemble %d digest slots: %w", len(plans), err)
	}
	return res, nil
}

// assembly is the state of one AssembleDigestIssues call as its steps
// fill it in.
type assembly struct {
	owner  string
	now    time.Time
	charge func(int) int
	res    AssembleResult

	live    []SlotPlan // the plans of digests still leased by owner
	users   []int64    // their people
	slotted []int64    // the live digests with a slot due
	pending []int64    // the slotted digests with items waiting
	// target maps a digest with waiting items to the issue they go into.
	target     map[int64]int64
	heldOutbox map[int64]int64 // issue id → held outbox row id
}

// assemble does AssembleDigestIssues's work inside its transaction, step
// by step in the order its comment gives.
func (s *Store) assemble(owner string, plans []SlotPlan, charge func(int) int) (AssembleResult, error) {
	a := &assembly{owner: owner, now: s.now(), charge: charge}
	if err := s.fenceDigests(a, plans); err != nil || len(a.live) == 0 {
		return a.res, err
	}
	if err := s.findWaitingItems(a); err != nil {
		return a.res, err
	}
	a.target, a.heldOutbox = make(map[int64]int64, len(a.pending)), map[int64]int64{}
	if len(a.pending) > 0 {
		if err := s.joinHeldIssues(a); err != nil {
			return a.res, err
		}
		if err := s.createIssues(a); err != nil {
			return a.res, err
		}
	}
	if len(a.target) > 0 {
		if err := s.fillIssues(a); err != nil {
			return a.res, err
		}
	}
	return a.res, s.advanceDigests(a)
}

// fenceDigests is step 1: it keeps only the digests still leased by owner,
// locks them, and fills in live, users and slotted.
func (s *Store) fenceDigests(a *assembly, plans []SlotPlan) error {
	ids := make([]int64, 0, len(plans))
	for _, p := range plans {
		ids = append(ids, p.DigestID)
	}
	var fenced []struct{ ID, UserID int64 }
	if err := s.DB.Raw(`UPDATE digests SET lease_owner = lease_owner WHERE id IN ? AND lease_owner = ? RETURNING id, user_id`,
		ids, a.owner).Scan(&fenced).Error; err != nil {
		return fmt.Errorf("fence digests: %w", err)
	}
	a.res.Skipped = len(plans) - len(fenced)
	if len(fenced) == 0 {
		return nil
	}
	ours := make(map[int64]bool, len(fenced))
	a.users = make([]int64, 0, len(fenced))
	for _, f := range fenced {
		ours[f.ID] = true
		a.users = append(a.users, f.UserID)
	}
	for _, p := range plans {
		if ours[p.DigestID] {
			a.live = append(a.live, p)
			if !p.Slot.IsZero() {
				a.slotted = append(a.slotted, p.DigestID)
			}
		}
	}
	return nil
}

// itemNotPaused returns the condition that a waiting digest item's
// subscription and person are not paused at the time parameter (given
// twice): a paused one's items keep waiting for the first issue after the
// pause (pause.go).
func itemNotPaused() string {
	return `
AND NOT EXISTS (SELECT 1 FROM subscriptions ps JOIN users pu ON pu.id = ps.user_id WHERE ps.id = digest_items.subscription_id
  AND (` + pausedSQL("ps") + ` OR ` + pausedSQL("pu") + `))`
}

// findWaitingItems is steps 2 and 3: it drops waiting items whose
// subscription has ended, and fills in pending, the digests with items
// still waiting (items of a paused subscription or person wait on).
func (s *Store) findWaitingItems(a *assembly) error {
	if len(a.slotted) > 0 {
		if err := s.DB.Exec(`DELETE FROM digest_items WHERE digest_id IN ? AND issue_id IS NULL
AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = digest_items.subscription_id AND s.state = 'active')`,
			a.slotted).Error; err != nil {
			return fmt.Errorf("drop items of ended subscriptions: %w", err)
		}
		if err := s.DB.Raw(`SELECT DISTINCT digest_id FROM digest_items WHERE digest_id IN ? AND issue_id IS NULL`+itemNotPaused(),
			a.slotted, a.now, a.now).Scan(&a.pending).Error; err != nil {
			return fmt.Errorf("find waiting items: %w", err)
		}
	}
	a.res.Empty = len(a.slotted) - len(a.pending)
	return nil
}

// joinHeldIssues is step 4: a pending digest whose latest issue's email is
// held (for credits or a bouncing address) targets that issue, locking its
// outbox row.
func (s *Store) joinHeldIssues(a *assembly) error {
	var held []struct{ DigestID, OutboxID, IssueID int64 }
	q := `SELECT t.digest_id, o.id AS outbox_id, o.issue_id FROM outbox o JOIN digest_issues t ON t.id = o.issue_id
WHERE o.user_id IN ? AND o.kind = 'digest' AND o.state = 'held' AND t.digest_id IN ? ORDER BY o.issue_id` + s.sqlDialect().forUpdateOf("o")
	if err := s.DB.Raw(q, a.users, a.pending).Scan(&held).Error; err != nil {
		return fmt.Errorf("find held issues: %w", err)
	}
	for _, h := range held { // ordered by issue: the newest held issue wins
		if old, ok := a.target[h.DigestID]; ok {
			delete(a.heldOutbox, old)
		}
		a.target[h.DigestID] = h.IssueID
		a.heldOutbox[h.IssueID] = h.OutboxID
	}
	a.res.Joined = len(a.target)
	return nil
}

// createIssues is step 5: a new issue for (digest, slot) of each pending
// digest without a held one.
func (s *Store) createIssues(a *assembly) error {
	slotOf := make(map[int64]time.Time, len(a.live))
	for _, p := range a.live {
		slotOf[p.DigestID] = p.Slot
	}
	var sb strings.Builder
	var args []any
	for _, d := range a.pending {
		if _, ok := a.target[d]; ok {
			continue
		}
		if len(args) > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, '" + IssueQueued + "', 0, 0, 0, ?)")
		args = append(args, d, utc(slotOf[d]), a.now)
	}
	if len(args) == 0 {
		return nil
	}
	var created []struct{ ID, DigestID int64 }
	if err := s.DB.Raw(`INSERT INTO digest_issues (digest_id, slot_at, state, feed_count, item_count, credits, created_at)
VALUES `+sb.String()+` ON CONFLICT (digest_id, slot_at) DO NOTHING RETURNING id, digest_id`, args...).Scan(&created).Error; err != nil {
		return fmt.Errorf("create issues: %w", err)
	}
	// A conflict means this slot was issued already (by a worker whose
	// lease ran out under it): its items wait for the next.
	for _, c := range created {
		a.target[c.DigestID] = c.ID
	}
	return nil
}

// fillIssues is steps 6 to 9: the waiting items go into their issue, each
// issue is counted and priced, held emails carry their issue's new price,
// each new issue becomes one outbox email, and issues left empty go.
func (s *Store) fillIssues(a *assembly) error {
	issues := make([]int64, 0, len(a.target))
	digests := make([]int64, 0, len(a.target))
	for d, is := range a.target {
		digests = append(digests, d)
		issues = append(issues, is)
	}
	if err := s.DB.Exec(`UPDATE digest_items SET issue_id = t.id FROM digest_issues t
WHERE t.id IN ? AND digest_items.digest_id = t.digest_id AND digest_items.digest_id IN ? AND digest_items.issue_id IS NULL`+itemNotPaused(),
		issues, digests, a.now, a.now).Error; err != nil {
		return fmt.Errorf("assign items to issues: %w", err)
	}
	fresh, empty, err := s.priceIssues(a, issues, digests)
	if err != nil {
		return err
	}
	if len(a.heldOutbox) > 0 {
		held := make([]int64, 0, len(a.heldOutbox))
		for _, o := range a.heldOutbox {
			held = append(held, o)
		}
		if err := s.DB.Exec(`UPDATE outbox SET credits = t.credits FROM digest_issues t
WHERE outbox.issue_id = t.id AND outbox.id IN ? AND outbox.state = 'held'`, held).Error; err != nil {
			return fmt.Errorf("reprice held digests: %w", err)
		}
	}
	if len(fresh) > 0 {
		if err := s.DB.Exec(`INSERT INTO outbox (kind, dedupe_key, user_id, issue_id, to_addr, channel, credits, state, next_attempt_at, created_at)
SELECT 'digest', 'digest:' || CAST(t.id AS TEXT), d.user_id, t.id, u.email, d.channel, t.credits, 'queued', ?, ?
FROM digest_issues t JOIN digests d ON d.id = t.digest_id JOIN users u ON u.id = d.user_id
WHERE t.id IN ? ON CONFLICT (dedupe_key) DO NOTHING`, a.now, a.now, fresh).Error; err != nil {
			return fmt.Errorf("queue digest emails: %w", err)
		}
		a.res.Issued, a.res.IssueIDs = len(fresh), fresh
	}
	if len(empty) > 0 {
		if err := s.DB.Where("id IN ?", empty).Delete(&DigestIssue{}).Error; err != nil {
			return fmt.Errorf("drop empty issues: %w", err)
		}
	}
	return nil
}

// priceIssues is step 7: it counts the feeds and items of each issue and
// writes its price to the reader (charge of its feeds that are not
// owner-paid; their owners pay when it is sent). It returns the new issues (not
// held) with items, and the issues whose items vanished (a subscription
// was deleted meanwhile).
func (s *Store) priceIssues(a *assembly, issues, digests []int64) (fresh, empty []int64, err error) {
	var counts []struct {
		IssueID      int64
		Items, Feeds int
	}
	if err := s.DB.Raw(`SELECT issue_id, COUNT(*) AS items, COUNT(DISTINCT feed_id) AS feeds FROM digest_items
WHERE digest_id IN ? AND issue_id IN ? GROUP BY issue_id`, digests, issues).Scan(&counts).Error; err != nil {
		return nil, nil, fmt.Errorf("count issue items: %w", err)
	}
	owned, err := s.ownedFeedsOfIssues(s.DB.Statement.Context, issues)
	if err != nil {
		return nil, nil, err
	}
	rows := make([][]any, 0, len(counts))
	nonEmpty := make(map[int64]bool, len(counts))
	for _, c := range counts {
		// The reader's share: owner-paid feeds are their owners' (billing.DigestBill).
		credits := int(billing.DigestBill(c.Feeds, owned[c.IssueID], a.charge).Reader)
		rows = append(rows, []any{c.IssueID, c.Feeds, c.Items, credits})
		nonEmpty[c.IssueID] = true
		if _, isHeld := a.heldOutbox[c.IssueID]; !isHeld {
			fresh = append(fresh, c.IssueID)
			a.res.Credits += int64(credits)
		}
	}
	for _, is := range issues {
		if _, isHeld := a.heldOutbox[is]; !nonEmpty[is] && !isHeld {
			empty = append(empty, is)
		}
	}
	if len(rows) > 0 {
		cte, args := s.valuesCTE("v", []string{"id", "feeds", "items", "credits"}, []string{"bigint", "integer", "integer", "integer"}, rows)
		if err := s.DB.Exec(cte+` UPDATE digest_issues SET feed_count = v.feeds, item_count = v.items, credits = v.credits
FROM v WHERE digest_issues.id = v.id`, args...).Error; err != nil {
			return nil, nil, fmt.Errorf("price issues: %w", err)
		}
	}
	return fresh, empty, nil
}

// advanceDigests is step 10, last: each live digest's next slot is
// written and its lease given back.
func (s *Store) advanceDigests(a *assembly) error {
	rows := make([][]any, 0, len(a.live))
	for _, p := range a.live {
		var last any // keep last_slot_at when no slot was due
		if !p.Slot.IsZero() {
			last = utc(p.Slot)
		}
		rows = append(rows, []any{p.DigestID, utc(p.Next), last})
	}
	cte, args := s.valuesCTE("v", []string{"id", "next_slot_at", "last_slot_at"}, []string{"bigint", "timestamptz", "timestamptz"}, rows)
	args = append(args, a.owner)
	if err := s.DB.Exec(cte+` UPDATE digests SET next_slot_at = v.next_slot_at,
last_slot_at = COALESCE(v.last_slot_at, digests.last_slot_at), lease_owner = '', lease_until = NULL
FROM v WHERE digests.id = v.id AND digests.lease_owner = ?`, args...).Error; err != nil {
		return fmt.Errorf("advance digests: %w", err)
	}
	return nil
}
