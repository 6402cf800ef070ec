package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// What a feed is to its readers while it fails or stands still
// (Feed.RecoveryState, written only by the rediscovery worker).
const (
	RecoveryNone    = ""        // fine, or never looked at
	RecoveryAiling  = "ailing"  // failing for longer than an outage; rediscovery found nothing yet
	RecoveryFrozen  = "frozen"  // answers, but its site advertises a newer feed
	RecoveryOffered = "offered" // readers were offered a probable new address
	RecoveryTold    = "told"    // readers were told that nothing was found
	RecoveryMoved   = "moved"   // readers were moved to the same feed at a new address
)

// Kinds of FeedMove.
const (
	MoveSame     = "moved"    // rediscovery found the same feed elsewhere: readers moved, told, may undo
	MoveOffered  = "offered"  // rediscovery found probably the new feed: each reader chooses
	MoveOperator = "operator" // `feedmail feed move`
	MoveOwner    = "owner"    // the feed's verified publisher, on their page
)

// States of a ReaderMove.
const (
	ReaderMoved    = "moved"
	ReaderUndone   = "undone"
	ReaderOffered  = "offered"
	ReaderAccepted = "accepted"
	ReaderDeclined = "declined"
)

// FeedMove is one move (or offer) of a feed's readers to another feed.
type FeedMove struct {
	ID            int64 `gorm:"primaryKey"`
	FromFeedID    int64
	ToFeedID      int64
	Kind          string
	FoundBy       string
	PostsInCommon int
	Reason        string
	CreatedAt     time.Time
}

// ReaderMove is one subscription's side of a FeedMove.
type ReaderMove struct {
	ID             int64 `gorm:"primaryKey"`
	MoveID         int64
	SubscriptionID int64
	UserID         int64
	State          string
	CreatedAt      time.Time
	ActedAt        *time.Time
}

// RecoveryRecord is what one rediscovery attempt leaves on its feed.
type RecoveryRecord struct {
	At       time.Time
	NextAt   *time.Time // nil: no attempt planned
	Attempts int
	Episode  *time.Time
	State    string
	Note     string // the attempt's result, JSON
}

// DueRecoveries returns up to limit followed, active feeds whose
// rediscovery attempt is due at now (recovery_next_at unset or past):
// failing ones (at least minErrors consecutive errors since failingBefore
// or earlier) and stale ones (no error, no new item since staleBefore).
// Failing feeds come first and through the small feeds_failing index.
func (s *Store) DueRecoveries(ctx context.Context, now, failingBefore, staleBefore time.Time, minErrors, limit int) ([]Feed, error) {
	due := "(recovery_next_at IS NULL OR recovery_next_at <= ?)"
	var failing []Feed
	if err := s.DB.WithContext(ctx).Where("consecutive_errors >= ? AND errors_since <= ? AND "+polledSQL("")+" AND "+due,
		minErrors, failingBefore.UTC(), now.UTC()).Order("errors_since, id").Limit(limit).Find(&failing).Error; err != nil {
		return nil, fmt.Errorf("failing feeds due for rediscovery: %w", err)
	}
	if len(failing) >= limit {
		return failing, nil
	}
	var stale []Feed
	if err := s.DB.WithContext(ctx).Where("consecutive_errors = 0 AND last_new_item_at <= ? AND "+polledSQL("")+" AND "+due,
		staleBefore.UTC(), now.UTC()).Order("id").Limit(limit - len(failing)).Find(&stale).Error; err != nil {
		return nil, fmt.Errorf("stale feeds due for rediscovery: %w", err)
	}
	return append(failing, stale...), nil
}

// ClaimRecovery takes feed id's rediscovery for one attempt: it moves
// recovery_next_at to until, unless another process did so first (its
// next attempt is no longer due at now). It reports whether this caller
// holds the attempt; one that dies leaves the feed due again at until.
func (s *Store) ClaimRecovery(ctx context.Context, id int64, now, until time.Time) (bool, error) {
	res := s.DB.WithContext(ctx).Model(&Feed{}).
		Where("id = ? AND (recovery_next_at IS NULL OR recovery_next_at <= ?)", id, now.UTC()).
		Update("recovery_next_at", until.UTC())
	if res.Error != nil {
		return false, fmt.Errorf("claim rediscovery of feed %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// RecordRecovery writes what a rediscovery attempt concluded on feed id.
func (s *Store) RecordRecovery(ctx context.Context, id int64, r RecoveryRecord) error {
	err := s.DB.WithContext(ctx).Model(&Feed{}).Where("id = ?", id).Updates(map[string]any{
		"recovery_at": r.At.UTC(), "recovery_next_at": utcPtrOrNil(r.NextAt), "recovery_attempts": r.Attempts,
		"recovery_episode": utcPtrOrNil(r.Episode), "recovery_state": r.State, "recovery_note": r.Note,
	}).Error
	if err != nil {
		return fmt.Errorf("record rediscovery of feed %d: %w", id, err)
	}
	return nil
}

// PlanRecovery sets when the rediscovery worker looks at feed id next,
// and nothing else (the feed was found fine).
func (s *Store) PlanRecovery(ctx context.Context, id int64, next time.Time) error {
	if err := s.DB.WithContext(ctx).Model(&Feed{}).Where("id = ?", id).Update("recovery_next_at", next.UTC()).Error; err != nil {
		return fmt.Errorf("plan rediscovery of feed %d: %w", id, err)
	}
	return nil
}

// ActiveSubscriptionsOf returns the active subscriptions of feed feedID,
// by person.
func (s *Store) ActiveSubscriptionsOf(ctx context.Context, feedID int64) ([]Subscription, error) {
	var subs []Subscription
	if err := s.DB.WithContext(ctx).Where("feed_id = ? AND state = ?", feedID, SubActive).
		Order("user_id, id").Find(&subs).Error; err != nil {
		return nil, fmt.Errorf("subscriptions of feed %d: %w", feedID, err)
	}
	return subs, nil
}

// MoveReaders moves every subscription of feed from to feed into, as a
// permanent redirect would (store.psMergeFeed: the items' identities go
// along, a reader who already follows into keeps that subscription), and
// records the move with each reader's side of it ('moved', which they may
// undo). A verified publisher of from becomes into's, unless into has
// one. from is no longer polled (state merged); into is due now. It
// returns the move and the readers' sides, one per subscription that was
// active or waiting for confirmation.
func (s *Store) MoveReaders(ctx context.Context, from, into int64, m FeedMove) (FeedMove, []ReaderMove, error) {
	var readers []ReaderMove
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		now := tx.now()
		if m, err = tx.insertMove(ctx, from, into, m, now); err != nil {
			return err
		}
		if readers, err = tx.insertReaderMoves(ctx, m.ID, from, ReaderMoved, now); err != nil {
			return err
		}
		if _, err = tx.psMergeFeed(ctx, tx.psConn(ctx), from, into, now); err != nil {
			return err
		}
		// The same feed: its publisher, if verified, pays there too.
		if err := tx.DB.Exec(`UPDATE feed_owners SET feed_id = ? WHERE feed_id = ?
AND NOT EXISTS (SELECT 1 FROM feed_owners o WHERE o.feed_id = ?)`, into, from, into).Error; err != nil {
			return fmt.Errorf("move the feed's owner: %w", err)
		}
		return tx.DB.Model(&Feed{}).Where("id = ?", from).Updates(map[string]any{
			"state": FeedMerged, "poll_reason": "readers moved to " + feedURLOf(tx, into) + " (" + m.Kind + ")",
			"recovery_state": RecoveryMoved, "recovery_next_at": nil,
		}).Error
	})
	if err != nil {
		return FeedMove{}, nil, fmt.Errorf("move readers of feed %d to %d: %w", from, into, err)
	}
	return m, readers, nil
}

// OfferMove records an offer to every reader of feed from to follow feed
// into instead: one 'offered' side per active subscription that has not
// been offered into before. Nothing moves until a reader accepts
// (AcceptOffer). It returns the move and the new offers.
func (s *Store) OfferMove(ctx context.Context, from, into int64, m FeedMove) (FeedMove, []ReaderMove, error) {
	var offers []ReaderMove
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		now := tx.now()
		if m, err = tx.insertMove(ctx, from, into, m, now); err != nil {
			return err
		}
		offers, err = tx.insertReaderMoves(ctx, m.ID, from, ReaderOffered, now)
		return err
	})
	if err != nil {
		return FeedMove{}, nil, fmt.Errorf("offer feed %d's readers feed %d: %w", from, into, err)
	}
	return m, offers, nil
}

// insertMove records move m of from's readers to into, or finds the one
// already recorded for the same feeds and kind.
func (s *Store) insertMove(ctx context.Context, from, into int64, m FeedMove, now time.Time) (FeedMove, error) {
	var old FeedMove
	err := s.DB.WithContext(ctx).Where("from_feed_id = ? AND to_feed_id = ? AND kind = ?", from, into, m.Kind).Take(&old).Error
	if err == nil {
		return old, nil
	}
	if err != gorm.ErrRecordNotFound {
		return FeedMove{}, fmt.Errorf("find move: %w", err)
	}
	m.ID, m.FromFeedID, m.ToFeedID, m.CreatedAt = 0, from, into, now
	if err := s.DB.WithContext(ctx).Create(&m).Error; err != nil {
		return FeedMove{}, fmt.Errorf("record move: %w", err)
	}
	return m, nil
}

// insertReaderMoves adds a side in state for every subscription of feed
// from that is not ended and has none in this move yet, and returns them.
func (s *Store) insertReaderMoves(ctx context.Context, moveID, from int64, state string, now time.Time) ([]ReaderMove, error) {
	var subs []Subscription
	q := s.DB.WithContext(ctx).Where("feed_id = ? AND state <> ? AND id NOT IN (SELECT subscription_id FROM reader_moves WHERE move_id = ?)",
		from, SubEnded, moveID)
	if state == ReaderOffered {
		q = q.Where("state = ?", SubActive)
	}
	if err := q.Order("id").Find(&subs).Error; err != nil {
		return nil, fmt.Errorf("subscriptions of feed %d: %w", from, err)
	}
	out := make([]ReaderMove, 0, len(subs))
	for _, sub := range subs {
		out = append(out, ReaderMove{MoveID: moveID, SubscriptionID: sub.ID, UserID: sub.UserID, State: state, CreatedAt: now})
	}
	if len(out) == 0 {
		return out, nil
	}
	if err := s.DB.WithContext(ctx).CreateInBatches(&out, 200).Error; err != nil {
		return nil, fmt.Errorf("record readers' moves: %w", err)
	}
	return out, nil
}

// feedURLOf is feed id's URL, or "feed <id>" when it cannot be read.
func feedURLOf(s *Store, id int64) string {
	var u string
	if err := s.DB.Model(&Feed{}).Where("id = ?", id).Pluck("url", &u).Error; err != nil || u == "" {
		return fmt.Sprintf("feed %d", id)
	}
	return u
}

// ReaderMoveByID returns one reader's side of a move with the move.
func (s *Store) ReaderMoveByID(ctx context.Context, id int64) (ReaderMove, FeedMove, error) {
	var rm ReaderMove
	var m FeedMove
	if err := s.DB.WithContext(ctx).Take(&rm, id).Error; err != nil {
		return rm, m, fmt.Errorf("reader move %d: %w", id, notFound(err))
	}
	if err := s.DB.WithContext(ctx).Take(&m, rm.MoveID).Error; err != nil {
		return rm, m, fmt.Errorf("move %d: %w", rm.MoveID, notFound(err))
	}
	return rm, m, nil
}

// FeedMovesFrom returns the moves of feed id's readers, newest first.
func (s *Store) FeedMovesFrom(ctx context.Context, feedID int64) ([]FeedMove, error) {
	var out []FeedMove
	if err := s.DB.WithContext(ctx).Where("from_feed_id = ?", feedID).Order("id DESC").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("moves from feed %d: %w", feedID, err)
	}
	return out, nil
}

// OffersFor returns userID's open offers ('offered' sides), oldest first.
func (s *Store) OffersFor(ctx context.Context, userID int64) ([]ReaderMove, error) {
	var out []ReaderMove
	if err := s.DB.WithContext(ctx).Where("user_id = ? AND state = ?", userID, ReaderOffered).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("offers for user %d: %w", userID, err)
	}
	return out, nil
}

// RecoveryCounts counts feeds and readers by where rediscovery left them,
// for the gauges: ailing (failing since failingBefore or earlier, with at
// least minErrors errors in a row), frozen (no new post since), dead
// (readers told nothing was found, still failing), moved (feeds whose readers rediscovery moved), offered (open
// offers) and accepted (offers followed).
func (s *Store) RecoveryCounts(ctx context.Context, failingBefore time.Time, minErrors int) (map[string]int64, error) {
	out := map[string]int64{}
	db := s.DB.WithContext(ctx)
	var n int64
	if err := db.Model(&Feed{}).Where("consecutive_errors >= ? AND errors_since <= ? AND "+polledSQL(""), minErrors, failingBefore.UTC()).
		Count(&n).Error; err != nil {
		return nil, fmt.Errorf("count ailing feeds: %w", err)
	}
	out["ailing"] = n
	var states []struct {
		State string
		N     int64
	}
	// A state counts while its episode lasts: frozen until a new post,
	// dead (told) until the errors end.
	if err := db.Model(&Feed{}).Select("recovery_state AS state, COUNT(*) AS n").Where(`(recovery_state = ? AND consecutive_errors = 0
  AND recovery_episode = last_new_item_at) OR (recovery_state = ? AND consecutive_errors > 0 AND recovery_episode = errors_since)`,
		RecoveryFrozen, RecoveryTold).Group("recovery_state").Scan(&states).Error; err != nil {
		return nil, fmt.Errorf("count feeds by recovery: %w", err)
	}
	out["frozen"], out["dead"] = 0, 0
	for _, st := range states {
		out[map[string]string{RecoveryFrozen: "frozen", RecoveryTold: "dead"}[st.State]] = st.N
	}
	if err := db.Model(&FeedMove{}).Where("kind = ?", MoveSame).Count(&n).Error; err != nil {
		return nil, fmt.Errorf("count moves: %w", err)
	}
	out["moved"] = n
	for key, state := range map[string]string{"offered": ReaderOffered, "accepted": ReaderAccepted} {
		if err := db.Model(&ReaderMove{}).Where("state = ?", state).Count(&n).Error; err != nil {
			return nil, fmt.Errorf("count offers: %w", err)
		}
		out[key] = n
	}
	return out, nil
}
