package subscribe

import (
	"context"

	"github.com/feedmail/feedmail/internal/store"
)

// Confirm activates sub when it is pending, recording how (by: the emailed
// link, or the account page), and records the person's confirmation
// (PersonConfirmed). Doing it twice is harmless. It returns the trial
// credits granted now.
func (s *Service) Confirm(ctx context.Context, sub *store.Subscription, by string) (int64, error) {
	if sub.State == store.SubPending {
		if _, err := s.Store.ConfirmSubscription(ctx, sub.ID, by); err != nil {
			return 0, err
		}
		if s.Log != nil {
			s.Log.Info("subscription confirmed", "user", sub.UserID, "subscription", sub.ID, "feed", sub.FeedID, "by", by)
		}
	}
	return s.PersonConfirmed(ctx, sub.UserID)
}

// PersonConfirmed records that the person proved their address works (a
// link we emailed was followed, or the operator vouched for it): the account
// is confirmed, a "bouncing" mark from earlier hard failures is cleared
// (releasing mail held for it), and the trial credits are granted the first
// time. It returns the credits granted now, 0 when they had them already.
func (s *Service) PersonConfirmed(ctx context.Context, userID int64) (int64, error) {
	if _, err := s.Store.MarkUserConfirmed(ctx, userID); err != nil {
		return 0, err
	}
	if _, err := s.Store.ClearBouncing(ctx, userID); err != nil {
		return 0, err
	}
	return s.grantTrial(ctx, userID)
}

// grantTrial grants the trial credits once per person; it returns the
// credits granted now.
func (s *Service) grantTrial(ctx context.Context, userID int64) (int64, error) {
	e, applied, err := s.Store.GrantTrialOnce(ctx, userID, s.TrialCredits)
	if err != nil || !applied {
		return 0, err
	}
	return e.Amount, nil
}
