package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// What comes back about sent mail: a bounce reported after the first hop
// accepted the email, a spam complaint, an unsubscribe by email. Each names
// its outbox row (the caller checked the signed token that says so) and
// has its effect once: inbound_events is keyed by the effect, so the same
// report twice, or two reports of one failure, change things once.

// Inbound kinds and severities with an effect.
const (
	InboundBounce      = "bounce"
	InboundComplaint   = "complaint"
	InboundUnsubscribe = "unsubscribe"
	SeverityHard       = "hard"
	SeveritySoft       = "soft"
)

// InboundEvent is one effect of a report (see above).
type InboundEvent struct {
	EffectKey  string `gorm:"primaryKey"`
	OutboxID   int64
	UserID     int64
	Kind       string
	Severity   string
	Reason     string // a bounce.Reason, bounces only
	Party      string // a bounce.Party, bounces only
	Status     string
	Detail     string
	ReceivedAt time.Time
}

// Report is what a report says about one outbox row.
type Report struct {
	OutboxID int64
	Kind     string // InboundBounce, InboundComplaint or InboundUnsubscribe
	// Severity is what a bounce counts against the reader's address:
	// SeverityHard, SeveritySoft, or "" when its cause is not the
	// reader's (the sender's own problem, a transient one, unknown).
	Severity string
	Reason   string // bounces: the cause (a bounce.Reason)
	Party    string // bounces: whose problem (a bounce.Party)
	// Final: the report says the email will not be delivered (not a
	// delay warning), so its credit goes back.
	Final  bool
	Status string // enhanced status code, e.g. "5.1.1"
	Detail string // the reporting system's words, one line
	// Source says how the report came (MailSourceMail, MailSourceWebhook).
	Source string
	// BounceLimit: consecutive hard bounces that mark the address bouncing
	// (the mailer's, so late bounces count like SMTP ones).
	BounceLimit int
}

// ReportResult is what ApplyReport did.
type ReportResult struct {
	Duplicate   bool   // this effect was had before: nothing changed
	UserID      int64  // whose email it was
	Address     string // where it went
	Refunded    bool   // a final failure gave the email's credit back
	NowBouncing bool   // a hard bounce marked the address bouncing
	Ended       int    // subscriptions a complaint or unsubscribe ended now
	// Action says in a few words what happened, for logs and the command.
	Action string
}

// ErrNoSuchEmail: the report names an outbox row that no longer exists.
var ErrNoSuchEmail = errors.New("no such email")

// ApplyReport has report r's effect, once, in one transaction:
//   - a hard bounce counts toward the address's bounce state like an SMTP
//     5xx (FailOutbox);
//   - a soft bounce is counted and shown, never stopping delivery;
//   - a bounce whose cause is not the reader's (Severity "") is recorded
//     for the operator and counts against nobody;
//   - a final bounce of any cause gives the email's credit back;
//   - a complaint or an unsubscribe ends the subscription the email belongs
//     to (every subscription of a digest, for a digest email), so the
//     address gets no more of it without a new confirmation.
func (s *Store) ApplyReport(ctx context.Context, r Report) (ReportResult, error) {
	var out ReportResult
	key, err := effectKey(r)
	if err != nil {
		return out, err
	}
	err = s.Tx(ctx, func(tx *Store) error {
		var row OutboxRow
		if err := tx.DB.WithContext(ctx).Take(&row, r.OutboxID).Error; err != nil {
			if errors.Is(notFound(err), ErrNotFound) {
				return fmt.Errorf("outbox %d: %w", r.OutboxID, ErrNoSuchEmail)
			}
			return err
		}
		out.UserID, out.Address = row.UserID, row.Address
		charge, _ := outboxKeys(&row)
		if err := tx.lockForRefund(ctx, row.UserID, charge); err != nil {
			return err
		}
		res := tx.DB.WithContext(ctx).Exec(`INSERT INTO inbound_events (effect_key, outbox_id, user_id, kind, severity, reason, party, status, detail, received_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (effect_key) DO NOTHING`,
			key, row.ID, row.UserID, r.Kind, r.Severity, clip(r.Reason, 32), clip(r.Party, 16), clip(r.Status, 16), clip(r.Detail, 300), tx.now())
		if res.Error != nil {
			return fmt.Errorf("record: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			out.Duplicate, out.Action = true, "already handled"
			return nil
		}
		if err := tx.recordReportEvent(ctx, r, &row); err != nil {
			return err
		}
		switch r.Kind {
		case InboundBounce:
			return tx.applyBounce(ctx, r, &row, &out)
		default:
			return tx.applyEnd(ctx, r, &row, &out)
		}
	})
	if err != nil {
		return ReportResult{}, fmt.Errorf("apply %s report on outbox %d: %w", r.Kind, r.OutboxID, err)
	}
	return out, nil
}

// effectKey names r's effect (see the migration of inbound_events).
func effectKey(r Report) (string, error) {
	switch {
	case r.Kind == InboundBounce && (r.Severity == SeverityHard || r.Severity == SeveritySoft):
		return fmt.Sprintf("%s:%d", r.Severity, r.OutboxID), nil
	case r.Kind == InboundBounce && r.Severity == "":
		return fmt.Sprintf("other:%d", r.OutboxID), nil
	case r.Kind == InboundComplaint || r.Kind == InboundUnsubscribe:
		return fmt.Sprintf("%s:%d", r.Kind, r.OutboxID), nil
	}
	return "", fmt.Errorf("report of kind %q severity %q has no effect", r.Kind, r.Severity)
}

// recordReportEvent appends the report to mail_events, for the health of
// the address's domain.
func (s *Store) recordReportEvent(ctx context.Context, r Report, row *OutboxRow) error {
	ev := MailEvent{Domain: AddressDomain(row.Address), Source: r.Source, Kind: MailFailure, Reason: r.Reason,
		Party: r.Party, Severity: r.Severity, Status: r.Status, OutboxID: &row.ID, Detail: r.Detail}
	switch r.Kind {
	case InboundComplaint:
		ev.Kind, ev.Reason, ev.Party, ev.Severity = MailComplaint, "", "", ""
	case InboundUnsubscribe:
		return nil
	}
	if ev.Source == "" {
		ev.Source = MailSourceMail
	}
	return s.RecordMailEvent(ctx, ev)
}

// applyBounce counts a bounce of row against its address when its cause is
// the reader's, and gives a final one's credit back whatever its cause.
func (s *Store) applyBounce(ctx context.Context, r Report, row *OutboxRow, out *ReportResult) error {
	db := s.DB.WithContext(ctx)
	last := strings.TrimSpace(r.Severity + " " + r.Status + " " + clip(r.Detail, 200))
	if r.Severity != "" {
		if err := db.Model(&User{}).Where("id = ?", row.UserID).
			UpdateColumns(map[string]any{"last_bounce": last, "last_bounce_at": s.now()}).Error; err != nil {
			return fmt.Errorf("record bounce: %w", err)
		}
	}
	if r.Final {
		charge, refund := outboxKeys(row)
		var err error
		if out.Refunded, err = s.refundIfCharged(ctx, charge, refund,
			"refund: "+row.Kind+" email "+row.DedupeKey+" bounced"); err != nil {
			return err
		}
	}
	switch r.Severity {
	case SeveritySoft:
		if err := db.Exec(`UPDATE users SET soft_bounces = soft_bounces + 1 WHERE id = ?`, row.UserID).Error; err != nil {
			return fmt.Errorf("count soft bounce: %w", err)
		}
		out.Action = "soft bounce counted"
	case SeverityHard:
		if err := db.Model(&OutboxRow{}).Where("id = ?", row.ID).
			UpdateColumn("last_error", outboxClip("bounced after sending: "+last)).Error; err != nil {
			return fmt.Errorf("note bounce on the email: %w", err)
		}
		var err error
		if out.NowBouncing, _, err = s.countHardBounce(ctx, row.UserID, r.BounceLimit); err != nil {
			return err
		}
		out.Action = "hard bounce counted"
	default:
		note := "bounced after sending (" + r.Reason + ", not the reader's): " + strings.TrimSpace(r.Status+" "+clip(r.Detail, 200))
		if err := db.Model(&OutboxRow{}).Where("id = ?", row.ID).UpdateColumn("last_error", outboxClip(note)).Error; err != nil {
			return fmt.Errorf("note bounce on the email: %w", err)
		}
		out.Action = "not counted against the reader (" + r.Reason + ")"
		if r.Party == "sender" {
			out.Action = "sender-side failure (" + r.Reason + "): not counted against the reader"
		}
	}
	if out.Refunded {
		out.Action += ", credit refunded"
	}
	if out.NowBouncing {
		out.Action += ", address now bouncing: deliveries paused"
	}
	return nil
}

// applyEnd ends the subscription row belongs to: its own, or for a digest
// email every subscription of that digest.
func (s *Store) applyEnd(ctx context.Context, r Report, row *OutboxRow, out *ReportResult) error {
	reason := "unsubscribed by email"
	if r.Kind == InboundComplaint {
		reason = "spam complaint"
	}
	var subs []int64
	db := s.DB.WithContext(ctx)
	switch {
	case row.SubscriptionID != nil:
		subs = []int64{*row.SubscriptionID}
	case row.IssueID != nil:
		if err := db.Raw(`SELECT s.id FROM subscriptions s JOIN digest_issues di ON di.digest_id = s.digest_id
WHERE di.id = ?`, *row.IssueID).Scan(&subs).Error; err != nil {
			return fmt.Errorf("subscriptions of the digest: %w", err)
		}
	}
	for _, id := range subs {
		var sub Subscription
		if err := db.Take(&sub, id).Error; err != nil {
			continue // gone with a deleted account
		}
		res := db.Model(&Subscription{}).Where("id = ? AND state <> ?", id, SubEnded).
			Updates(map[string]any{"state": SubEnded, "ended_at": s.now(), "ended_reason": reason})
		if res.Error != nil {
			return fmt.Errorf("end subscription %d: %w", id, res.Error)
		}
		if res.RowsAffected > 0 {
			out.Ended++
			if err := s.recountSubscribers(sub.FeedID); err != nil {
				return err
			}
		}
	}
	out.Action = fmt.Sprintf("%d subscription(s) ended (%s)", out.Ended, reason)
	return nil
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// OutboxByMessageID returns the id of the sent email whose Message-ID is
// one of ids (with or without angle brackets), trying them in order, or
// ErrNoSuchEmail: a complaint that names the email only that way.
func (s *Store) OutboxByMessageID(ctx context.Context, ids []string) (int64, error) {
	for _, id := range ids {
		id = strings.Trim(strings.TrimSpace(id), "<>")
		if id == "" || len(id) > 250 {
			continue
		}
		var found []int64
		if err := s.DB.WithContext(ctx).Model(&OutboxRow{}).Where("message_id = ?", "<"+id+">").
			Limit(1).Pluck("id", &found).Error; err != nil {
			return 0, fmt.Errorf("outbox by Message-ID: %w", err)
		}
		if len(found) == 1 {
			return found[0], nil
		}
	}
	return 0, ErrNoSuchEmail
}

// BounceSummary says in a sentence what bounces did to u's deliveries, for
// the account page and `feedmail account status`; "" when nothing
// bounced.
func BounceSummary(u *User) string {
	last := ""
	if u.LastBounce != "" && u.LastBounceAt != nil {
		last = fmt.Sprintf(" (latest %s: %s)", u.LastBounceAt.UTC().Format("2 Jan 2006 15:04 UTC"), u.LastBounce)
	}
	switch {
	case u.BouncingSince != nil:
		return fmt.Sprintf("Deliveries are paused since %s: mail to this address bounced %d times in a row%s. "+
			"Confirming a subscription again resumes them.", u.BouncingSince.UTC().Format("2 Jan 2006"), u.HardBounces, last)
	case u.HardBounces > 0:
		return fmt.Sprintf("The last %d email(s) to this address bounced%s; deliveries pause if that goes on.",
			u.HardBounces, last)
	case u.SoftBounces > 0:
		return fmt.Sprintf("%d email(s) to this address were delayed or refused for a while%s; that does not stop deliveries.",
			u.SoftBounces, last)
	}
	return ""
}

// InboundEventsOf returns u's latest recorded reports, newest first, at
// most limit (all of them when limit ≤ 0).
func (s *Store) InboundEventsOf(ctx context.Context, userID int64, limit int) ([]InboundEvent, error) {
	var out []InboundEvent
	q := s.DB.WithContext(ctx).Where("user_id = ?", userID).Order("received_at DESC, effect_key DESC")
	if limit > 0 {
		q = q.Limit(limit)
	}
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("reports about user %d: %w", userID, err)
	}
	return out, nil
}
