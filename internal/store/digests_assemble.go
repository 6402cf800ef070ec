package store

import (
	"context"
	"fmt"
	"strings"
	"time"
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
// issues, in one transaction for the whole batch (a handful of statements
// however many digests it holds). For each plan:
//
//   - The digest must still be leased by owner; its row stays locked until
//     commit, so no other worker can claim it meanwhile (one issue per
//     (digest, slot) is also a unique key, the last line of defence).
//   - Items waiting for it (issue_id NULL) whose subscription has ended are
//     dropped: the person asked not to get them.
//   - No item waiting: no issue, nothing sent, nothing charged.
//   - An issue of this digest whose outbox email is held (out of credits, or
//     a bouncing address): the new items join that issue and its credits
//     (on the issue and the outbox row) are recomputed, instead of a second
//     email piling up behind the first. When the credits come, the person
//     gets one digest with everything since the last one sent.
//   - Otherwise a new issue for (digest, slot) takes the waiting items and
//     becomes one outbox email of kind "digest" with issue_id set,
//     credits = charge(feeds with items) and dedupe key "digest:<issue>".
//   - Last, next_slot_at becomes plan.Next, last_slot_at plan.Slot, and the
//     lease is released.
//
// charge prices an issue from the number of feeds with items in it
// (digest.Charge). A crash anywhere rolls everything back: the digests stay
// due and their leases run out, so the slot is assembled again.
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

func (s *Store) assemble(owner string, plans []SlotPlan, charge func(int) int) (AssembleResult, error) {
	var res AssembleResult
	now := s.now()
	ids := make([]int64, 0, len(plans))
	for _, p := range plans {
		ids = append(ids, p.DigestID)
	}

	// 1. Fence: keep only digests still leased by owner, and lock them.
	var fenced []struct{ ID, UserID int64 }
	if err := s.DB.Raw(`UPDATE digests SET lease_owner = lease_owner WHERE id IN ? AND lease_owner = ? RETURNING id, user_id`,
		ids, owner).Scan(&fenced).Error; err != nil {
		return res, fmt.Errorf("fence digests: %w", err)
	}
	res.Skipped = len(plans) - len(fenced)
	if len(fenced) == 0 {
		return res, nil
	}
	ours := make(map[int64]bool, len(fenced))
	ids, users := ids[:0], make([]int64, 0, len(fenced))
	for _, f := range fenced {
		ours[f.ID] = true
		ids = append(ids, f.ID)
		users = append(users, f.UserID)
	}
	var live []SlotPlan
	var slotted []int64
	for _, p := range plans {
		if ours[p.DigestID] {
			live = append(live, p)
			if !p.Slot.IsZero() {
				slotted = append(slotted, p.DigestID)
			}
		}
	}

	// 2. Drop waiting items whose subscription has ended.
	if len(slotted) > 0 {
		if err := s.DB.Exec(`DELETE FROM digest_items WHERE digest_id IN ? AND issue_id IS NULL
AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = digest_items.subscription_id AND s.state = 'active')`,
			slotted).Error; err != nil {
			return res, fmt.Errorf("drop items of ended subscriptions: %w", err)
		}
	}

	// 3. Which digests have items waiting.
	var pending []int64
	if len(slotted) > 0 {
		if err := s.DB.Raw(`SELECT DISTINCT digest_id FROM digest_items WHERE digest_id IN ? AND issue_id IS NULL`,
			slotted).Scan(&pending).Error; err != nil {
			return res, fmt.Errorf("find waiting items: %w", err)
		}
	}
	res.Empty = len(slotted) - len(pending)

	// target maps a digest with waiting items to the issue they go into.
	target := make(map[int64]int64, len(pending))
	heldOutbox := map[int64]int64{} // issue id → held outbox row id
	if len(pending) > 0 {
		// 4. Issues held for credits take the new items.
		var held []struct{ DigestID, OutboxID, IssueID int64 }
		q := `SELECT t.digest_id, o.id AS outbox_id, o.issue_id FROM outbox o JOIN digest_issues t ON t.id = o.issue_id
WHERE o.user_id IN ? AND o.kind = 'digest' AND o.state = 'held' AND t.digest_id IN ? ORDER BY o.issue_id`
		if s.Postgres() {
			q += " FOR UPDATE OF o"
		}
		if err := s.DB.Raw(q, users, pending).Scan(&held).Error; err != nil {
			return res, fmt.Errorf("find held issues: %w", err)
		}
		for _, h := range held { // ordered by issue: the newest held issue wins
			if old, ok := target[h.DigestID]; ok {
				delete(heldOutbox, old)
			}
			target[h.DigestID] = h.IssueID
			heldOutbox[h.IssueID] = h.OutboxID
		}
		res.Joined = len(target)

		// 5. New issues for the rest.
		slotOf := make(map[int64]time.Time, len(live))
		for _, p := range live {
			slotOf[p.DigestID] = p.Slot
		}
		var sb strings.Builder
		var args []any
		for _, d := range pending {
			if _, ok := target[d]; ok {
				continue
			}
			if len(args) > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(?, ?, '" + IssueQueued + "', 0, 0, 0, ?)")
			args = append(args, d, utc(slotOf[d]), now)
		}
		if len(args) > 0 {
			var created []struct{ ID, DigestID int64 }
			if err := s.DB.Raw(`INSERT INTO digest_issues (digest_id, slot_at, state, feed_count, item_count, credits, created_at)
VALUES `+sb.String()+` ON CONFLICT (digest_id, slot_at) DO NOTHING RETURNING id, digest_id`, args...).Scan(&created).Error; err != nil {
				return res, fmt.Errorf("create issues: %w", err)
			}
			// A conflict means this slot was issued already (by a worker
			// whose lease ran out under it): its items wait for the next.
			for _, c := range created {
				target[c.DigestID] = c.ID
			}
		}
	}

	if len(target) > 0 {
		issues := make([]int64, 0, len(target))
		digests := make([]int64, 0, len(target))
		for d, is := range target {
			digests = append(digests, d)
			issues = append(issues, is)
		}
		// 6. The waiting items go into their issue.
		if err := s.DB.Exec(`UPDATE digest_items SET issue_id = t.id FROM digest_issues t
WHERE t.id IN ? AND digest_items.digest_id = t.digest_id AND digest_items.digest_id IN ? AND digest_items.issue_id IS NULL`,
			issues, digests).Error; err != nil {
			return res, fmt.Errorf("assign items to issues: %w", err)
		}
		// 7. Count feeds and items per issue and price it.
		var counts []struct {
			IssueID      int64
			Items, Feeds int
		}
		if err := s.DB.Raw(`SELECT issue_id, COUNT(*) AS items, COUNT(DISTINCT feed_id) AS feeds FROM digest_items
WHERE digest_id IN ? AND issue_id IN ? GROUP BY issue_id`, digests, issues).Scan(&counts).Error; err != nil {
			return res, fmt.Errorf("count issue items: %w", err)
		}
		rows := make([][]any, 0, len(counts))
		var fresh, empty []int64
		nonEmpty := make(map[int64]bool, len(counts))
		for _, c := range counts {
			credits := charge(c.Feeds)
			rows = append(rows, []any{c.IssueID, c.Feeds, c.Items, credits})
			nonEmpty[c.IssueID] = true
			if _, isHeld := heldOutbox[c.IssueID]; !isHeld {
				fresh = append(fresh, c.IssueID)
				res.Credits += int64(credits)
			}
		}
		for _, is := range issues {
			if _, isHeld := heldOutbox[is]; !nonEmpty[is] && !isHeld {
				empty = append(empty, is) // its items vanished (a subscription was deleted meanwhile)
			}
		}
		if len(rows) > 0 {
			cte, args := s.valuesCTE("v", []string{"id", "feeds", "items", "credits"}, []string{"bigint", "integer", "integer", "integer"}, rows)
			if err := s.DB.Exec(cte+` UPDATE digest_issues SET feed_count = v.feeds, item_count = v.items, credits = v.credits
FROM v WHERE digest_issues.id = v.id`, args...).Error; err != nil {
				return res, fmt.Errorf("price issues: %w", err)
			}
		}
		// 8. Held emails carry their issue's new price.
		if len(heldOutbox) > 0 {
			held := make([]int64, 0, len(heldOutbox))
			for _, o := range heldOutbox {
				held = append(held, o)
			}
			if err := s.DB.Exec(`UPDATE outbox SET credits = t.credits FROM digest_issues t
WHERE outbox.issue_id = t.id AND outbox.id IN ? AND outbox.state = 'held'`, held).Error; err != nil {
				return res, fmt.Errorf("reprice held digests: %w", err)
			}
		}
		// 9. One outbox email per new issue.
		if len(fresh) > 0 {
			if err := s.DB.Exec(`INSERT INTO outbox (kind, dedupe_key, user_id, issue_id, to_addr, credits, state, next_attempt_at, created_at)
SELECT 'digest', 'digest:' || CAST(t.id AS TEXT), d.user_id, t.id, u.email, t.credits, 'queued', ?, ?
FROM digest_issues t JOIN digests d ON d.id = t.digest_id JOIN users u ON u.id = d.user_id
WHERE t.id IN ? ON CONFLICT (dedupe_key) DO NOTHING`, now, now, fresh).Error; err != nil {
				return res, fmt.Errorf("queue digest emails: %w", err)
			}
			res.Issued, res.IssueIDs = len(fresh), fresh
		}
		if len(empty) > 0 {
			if err := s.DB.Exec(`DELETE FROM digest_issues WHERE id IN ?`, empty).Error; err != nil {
				return res, fmt.Errorf("drop empty issues: %w", err)
			}
		}
	}

	// 10. Last: the next slot, and the lease given back.
	rows := make([][]any, 0, len(live))
	for _, p := range live {
		var last any // keep last_slot_at when no slot was due
		if !p.Slot.IsZero() {
			last = utc(p.Slot)
		}
		rows = append(rows, []any{p.DigestID, utc(p.Next), last})
	}
	cte, args := s.valuesCTE("v", []string{"id", "next_slot_at", "last_slot_at"}, []string{"bigint", "timestamptz", "timestamptz"}, rows)
	args = append(args, owner)
	if err := s.DB.Exec(cte+` UPDATE digests SET next_slot_at = v.next_slot_at,
last_slot_at = COALESCE(v.last_slot_at, digests.last_slot_at), lease_owner = '', lease_until = NULL
FROM v WHERE digests.id = v.id AND digests.lease_owner = ?`, args...).Error; err != nil {
		return res, fmt.Errorf("advance digests: %w", err)
	}
	return res, nil
}
