package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm/clause"
)

// Owner-paid feeds (the rules are billing's: InstantBill, DigestBill): a
// feed_owners row names the feed's verified publisher, who pays for its
// readers. The operator sets it (`feedmail feed owner set`) or the
// publisher proves ownership with a claim token (feed_owner_claims). The
// lapse state (the owner's credits ran out, the readers' notice period)
// is written by the charge (outbox_owner.go) and by the lapse sweep
// (owner_lapse.go).

// How an owner was verified (feed_owners.verified_by).
const (
	OwnerByOperator  = "operator"
	OwnerByFeed      = "feed"       // the claim token was in the feed's body
	OwnerByWellKnown = "well-known" // the claim token was at the host's well-known URL
)

// FeedOwner is the verified publisher of an owner-paid feed.
type FeedOwner struct {
	FeedID      int64 `gorm:"primaryKey"`
	UserID      int64
	VerifiedBy  string
	CreatedAt   time.Time
	LapseSeq    int
	NotifiedSeq int
	// LapsedAt is when a charge to the owner last failed with no
	// successful one since: the readers' notice period runs from here.
	LapsedAt *time.Time
	// SweptAt is when the notice period ended and the readers who had not
	// chosen to pay were unsubscribed.
	SweptAt *time.Time
}

// TableName is feed_owners.
func (FeedOwner) TableName() string { return "feed_owners" }

// OwnerPaidChoice records that a reader pays for an owner-paid feed
// themselves while its owner's credits are out.
type OwnerPaidChoice struct {
	SubscriptionID int64 `gorm:"primaryKey"`
	FeedID         int64
	ChosenAt       time.Time
}

// TableName is owner_paid_choices.
func (OwnerPaidChoice) TableName() string { return "owner_paid_choices" }

// ErrNotOwnerPaid: the feed has no owner, or no lapse to choose in.
var ErrNotOwnerPaid = errors.New("feed is not owner-paid")

// SetFeedOwner makes userID the owner of feedID (verified by how): from
// now on userID pays for its readers. Setting another owner replaces the
// previous one and ends any lapse (and the readers' choices with it).
func (s *Store) SetFeedOwner(ctx context.Context, feedID, userID int64, how string) (*FeedOwner, error) {
	o := FeedOwner{FeedID: feedID, UserID: userID, VerifiedBy: how, CreatedAt: s.now()}
	err := s.Tx(ctx, func(tx *Store) error {
		db := tx.DB.WithContext(ctx)
		err := db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "feed_id"}},
			DoUpdates: clause.Assignments(map[string]any{"user_id": userID, "verified_by": how, "created_at": o.CreatedAt,
				"lapsed_at": nil, "swept_at": nil})}).Create(&o).Error
		if err != nil {
			return err
		}
		if err := db.Where("feed_id = ?", feedID).Delete(&OwnerPaidChoice{}).Error; err != nil {
			return err
		}
		if err := tx.lowLinesStaleOfFeed(ctx, feedID); err != nil {
			return err
		}
		return db.Take(&o, "feed_id = ?", feedID).Error
	})
	if err != nil {
		return nil, fmt.Errorf("set owner of feed %d: %w", feedID, err)
	}
	return &o, nil
}

// ClearFeedOwner ends owner payment for feedID: its readers pay for it
// again as for any feed. It reports whether the feed had an owner.
func (s *Store) ClearFeedOwner(ctx context.Context, feedID int64) (bool, error) {
	var n int64
	err := s.Tx(ctx, func(tx *Store) error {
		db := tx.DB.WithContext(ctx)
		res := db.Where("feed_id = ?", feedID).Delete(&FeedOwner{})
		if res.Error != nil {
			return res.Error
		}
		n = res.RowsAffected
		if err := db.Where("feed_id = ?", feedID).Delete(&OwnerPaidChoice{}).Error; err != nil {
			return err
		}
		return tx.lowLinesStaleOfFeed(ctx, feedID)
	})
	if err != nil {
		return false, fmt.Errorf("clear owner of feed %d: %w", feedID, err)
	}
	return n > 0, nil
}

// FeedOwnerOf returns feedID's owner, or ErrNotFound when the feed is not
// owner-paid.
func (s *Store) FeedOwnerOf(ctx context.Context, feedID int64) (*FeedOwner, error) {
	var o FeedOwner
	if err := s.DB.WithContext(ctx).Take(&o, "feed_id = ?", feedID).Error; err != nil {
		return nil, fmt.Errorf("owner of feed %d: %w", feedID, notFound(err))
	}
	return &o, nil
}

// FeedsOwnedBy returns the feeds userID pays for, by feed id.
func (s *Store) FeedsOwnedBy(ctx context.Context, userID int64) ([]FeedOwner, error) {
	var out []FeedOwner
	if err := s.DB.WithContext(ctx).Where("user_id = ?", userID).Order("feed_id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("feeds owned by user %d: %w", userID, err)
	}
	return out, nil
}

// ChooseToPay records that userID pays for subscription subID's feed
// themselves while its owner's credits are out. It fails with
// ErrNotOwnerPaid when the feed has no owner or its owner is not out of
// credits, and with ErrNotFound when the subscription is not theirs.
// Choosing twice changes nothing.
func (s *Store) ChooseToPay(ctx context.Context, userID, subID int64) error {
	sub, err := s.AccountSubscription(ctx, userID, subID)
	if err != nil {
		return err
	}
	o, err := s.FeedOwnerOf(ctx, sub.FeedID)
	if errors.Is(err, ErrNotFound) || (err == nil && o.LapsedAt == nil) {
		return fmt.Errorf("subscription %d: %w", subID, ErrNotOwnerPaid)
	}
	if err != nil {
		return err
	}
	c := OwnerPaidChoice{SubscriptionID: subID, FeedID: sub.FeedID, ChosenAt: s.now()}
	if err := s.DB.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&c).Error; err != nil {
		return fmt.Errorf("choose to pay for subscription %d: %w", subID, err)
	}
	return nil
}

// OwnerPaidStatus is how one of a reader's subscriptions is paid for, for
// the account and signup pages.
type OwnerPaidStatus struct {
	FeedID int64
	// Lapsed: the owner's credits are out; Deadline is when readers who did
	// not choose to pay are unsubscribed.
	Lapsed   bool
	Deadline time.Time
	Chose    bool
}

// ReaderPays reports whether the reader pays for the subscription
// themselves: only once its publisher stopped paying and the reader chose
// to (during the notice period the feed's email is free).
func (o OwnerPaidStatus) ReaderPays() bool { return o.Lapsed && o.Chose }

// OwnerPaidOfUser returns, by subscription id, the owner-paid ones among
// userID's subscriptions, with the deadline computed from period.
func (s *Store) OwnerPaidOfUser(ctx context.Context, userID int64, period time.Duration) (map[int64]OwnerPaidStatus, error) {
	var rows []struct {
		SubID, FeedID int64
		LapsedAt      *time.Time
		Chose         bool
	}
	err := s.DB.WithContext(ctx).Raw(`SELECT s.id AS sub_id, s.feed_id, fo.lapsed_at,
  EXISTS (SELECT 1 FROM owner_paid_choices c WHERE c.subscription_id = s.id) AS chose
FROM subscriptions s JOIN feed_owners fo ON fo.feed_id = s.feed_id
WHERE s.user_id = ? AND s.state <> ?`, userID, SubEnded).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("owner-paid subscriptions of user %d: %w", userID, err)
	}
	out := make(map[int64]OwnerPaidStatus, len(rows))
	for _, r := range rows {
		st := OwnerPaidStatus{FeedID: r.FeedID, Chose: r.Chose}
		if r.LapsedAt != nil {
			st.Lapsed, st.Deadline = true, r.LapsedAt.Add(period)
		}
		out[r.SubID] = st
	}
	return out, nil
}

// OwnedFeedStats is what the owner's page shows for one feed they pay for.
type OwnedFeedStats struct {
	FeedOwner
	FeedURL, FeedTitle string
	// Instant and Digest count the active subscriptions by delivery.
	Instant, Digest int64
	// Used is the credits charged to the owner for the feed, all time;
	// Used30d in the last 30 days.
	Used, Used30d int64
}

// OwnedFeeds returns the feeds userID pays for with their readers and the
// credits used, by feed id.
func (s *Store) OwnedFeeds(ctx context.Context, userID int64) ([]OwnedFeedStats, error) {
	var out []OwnedFeedStats
	err := s.DB.WithContext(ctx).Raw(`SELECT fo.*, f.url AS feed_url, f.title AS feed_title,
  (SELECT COUNT(*) FROM subscriptions s WHERE s.feed_id = fo.feed_id AND s.state = 'active' AND s.digest_id IS NULL) AS instant,
  (SELECT COUNT(*) FROM subscriptions s WHERE s.feed_id = fo.feed_id AND s.state = 'active' AND s.digest_id IS NOT NULL) AS digest
FROM feed_owners fo JOIN feeds f ON f.id = fo.feed_id WHERE fo.user_id = ? ORDER BY fo.feed_id`, userID).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("feeds owned by user %d: %w", userID, err)
	}
	since := s.now().Add(-30 * 24 * time.Hour)
	for i := range out {
		if out[i].Used, out[i].Used30d, err = s.ownerCreditsUsed(ctx, userID, out[i].FeedID, since); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// OwnerClaim is a publisher's claim to a feed: the token they place in the
// feed or at its host's well-known URL (package ownership).
type OwnerClaim struct {
	ID         int64 `gorm:"primaryKey"`
	FeedID     int64
	UserID     int64
	Token      string
	CreatedAt  time.Time
	CheckedAt  *time.Time
	LastError  string
	VerifiedAt *time.Time
}

// TableName is feed_owner_claims.
func (OwnerClaim) TableName() string { return "feed_owner_claims" }

// OwnerClaimView is a claim with its feed, for the publisher's page.
type OwnerClaimView struct {
	OwnerClaim
	FeedURL, FeedTitle string
}

// ErrOwnedByOther: the feed already has another owner; only the operator
// can change it.
var ErrOwnedByOther = errors.New("feed already paid for by another publisher")

// ClaimFeed returns userID's claim to feedID, making it with token when
// there is none yet (a second call returns the first claim and its token).
func (s *Store) ClaimFeed(ctx context.Context, userID, feedID int64, token string) (*OwnerClaim, error) {
	c := OwnerClaim{FeedID: feedID, UserID: userID, Token: token, CreatedAt: s.now()}
	db := s.DB.WithContext(ctx)
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&c).Error; err != nil {
		return nil, fmt.Errorf("claim feed %d for user %d: %w", feedID, userID, err)
	}
	if err := db.Take(&c, "feed_id = ? AND user_id = ?", feedID, userID).Error; err != nil {
		return nil, fmt.Errorf("claim feed %d for user %d: %w", feedID, userID, notFound(err))
	}
	return &c, nil
}

// ClaimsOf returns userID's claims with their feeds, oldest first.
func (s *Store) ClaimsOf(ctx context.Context, userID int64) ([]OwnerClaimView, error) {
	var out []OwnerClaimView
	err := s.DB.WithContext(ctx).Raw(`SELECT c.*, f.url AS feed_url, f.title AS feed_title
FROM feed_owner_claims c JOIN feeds f ON f.id = c.feed_id WHERE c.user_id = ? ORDER BY c.id`, userID).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("claims of user %d: %w", userID, err)
	}
	return out, nil
}

// ClaimOf returns userID's claim id with its feed, or ErrNotFound.
func (s *Store) ClaimOf(ctx context.Context, userID, id int64) (*OwnerClaimView, error) {
	var out []OwnerClaimView
	err := s.DB.WithContext(ctx).Raw(`SELECT c.*, f.url AS feed_url, f.title AS feed_title
FROM feed_owner_claims c JOIN feeds f ON f.id = c.feed_id WHERE c.user_id = ? AND c.id = ?`, userID, id).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("claim %d: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("claim %d: %w", id, ErrNotFound)
	}
	return &out[0], nil
}

// ClaimChecked records a check of claim c: with how ("" when the token
// was not found, problem saying what was seen) it verifies the claim and
// makes its person the feed's owner, unless the feed has another owner
// (ErrOwnedByOther).
func (s *Store) ClaimChecked(ctx context.Context, c *OwnerClaim, how, problem string) error {
	now := s.now()
	return s.Tx(ctx, func(tx *Store) error {
		db := tx.DB.WithContext(ctx)
		upd := map[string]any{"checked_at": now, "last_error": problem}
		if how != "" {
			upd["verified_at"] = now
		}
		if err := db.Model(&OwnerClaim{}).Where("id = ?", c.ID).Updates(upd).Error; err != nil {
			return fmt.Errorf("record check of claim %d: %w", c.ID, err)
		}
		if how == "" {
			return nil
		}
		o, err := tx.FeedOwnerOf(ctx, c.FeedID)
		switch {
		case err == nil && o.UserID == c.UserID:
			return nil
		case err == nil:
			return fmt.Errorf("feed %d: %w", c.FeedID, ErrOwnedByOther)
		case !errors.Is(err, ErrNotFound):
			return err
		}
		_, err = tx.SetFeedOwner(ctx, c.FeedID, c.UserID, how)
		return err
	})
}
