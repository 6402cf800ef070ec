package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/feedmail/feedmail/internal/model"
)

// Subscription states.
const (
	SubPending = "pending"
	SubActive  = "active"
	SubEnded   = "ended"
)

// How a subscription was confirmed (Subscription.ConfirmedBy): the proof of
// consent the person's data export carries.
const (
	ConfirmedByLink     = "link"     // the person followed the emailed confirmation link
	ConfirmedByOperator = "operator" // the operator vouched for the address (--confirmed)
	ConfirmedByAccount  = "account"  // the person confirmed or imported it on their account page
)

// Subscription links a person to a feed, delivered instantly (DigestID nil) or
// into one of their digests, at one channel and target: a person may get
// one feed in several places, one subscription per (person, feed,
// channel, target), each with its own format, filters, pause and charges.
type Subscription struct {
	ID        int64 `gorm:"primaryKey"`
	UserID    int64
	FeedID    int64
	DigestID  *int64
	State     string
	CreatedAt time.Time
	// RequestedAt is when the person last asked for it (signup, or asking
	// again after it ended): the feed's items seen after it are theirs,
	// even those seen before they confirmed (see ConfirmSubscription).
	RequestedAt *time.Time
	ConfirmedAt *time.Time
	// ConfirmedBy is how it was last confirmed (ConfirmedBy*; "" before
	// this was recorded).
	ConfirmedBy string
	EndedAt     *time.Time
	EndedReason string
	// PausedAt and PausedUntil pause this subscription (see Pause).
	PausedAt    *time.Time
	PausedUntil *time.Time
	// Folder is the folder an OPML import put the feed in ("" at the top).
	Folder string
	// SendNewest: on confirmation the feed's newest post goes out at once
	// (the signup form's choice), unless the catch-up already sent posts.
	SendNewest bool
	// SignupCreditsMonth is what the forecast shown at signup said it
	// costs a month by email (0: it could not tell), for the running-low
	// line while the feed's stored posts cannot tell a rate.
	SignupCreditsMonth float64
	// IncludeTerms and ExcludeTerms decide which new posts reach it
	// (package filter; "" for none), in their canonical form.
	IncludeTerms string
	ExcludeTerms string
	// Format is how its emails show a post (Format*).
	Format string `gorm:"not null;default:full"`
	// Channel is how its posts go out (model.ChannelEmail, or a package of
	// internal/channel), Target where to (a URL; "" for email, which goes to
	// the person's address) and ChannelSecret the channel's secret (a
	// webhook's signing secret, an access token; "" for none).
	Channel       string `gorm:"not null;default:email"`
	Target        string
	ChannelSecret string
	// Created is true on the row SubscribeConfirmedBy has just inserted
	// (not stored): an API answers 201 for it, 200 for a row it changed.
	Created bool `gorm:"-"`
}

// Subscribe adds (or revives) user's email subscription to feed. With confirmed
// it is active at once, confirmed by the operator; otherwise it waits in
// "pending" for the person to confirm. digestID nil means instant delivery.
func (s *Store) Subscribe(ctx context.Context, userID, feedID int64, digestID *int64, confirmed bool) (*Subscription, error) {
	by := ""
	if confirmed {
		by = ConfirmedByOperator
	}
	return s.SubscribeConfirmedBy(ctx, userID, feedID, digestID, by)
}

// SubscribeConfirmedBy is Subscribe recording who confirmed it: confirmedBy
// "" leaves it pending, a ConfirmedBy* value activates it at once (when it
// is not active already) and is kept as the proof of consent.
func (s *Store) SubscribeConfirmedBy(ctx context.Context, userID, feedID int64, digestID *int64, confirmedBy string) (*Subscription, error) {
	return s.SubscribeDelivery(ctx, userID, feedID, model.ChannelChoice{}, digestID, confirmedBy)
}

// SubscribeDelivery is SubscribeConfirmedBy for the delivery at channel c
// (zero: email): the person's subscription to the feed with c's channel
// and target is created (Created), or the one they have (ended too) takes
// the new delivery and c's secret, unless that was Generated and theirs is
// not ended (its receiver knows the old one). Their other deliveries of
// the feed are left as they are.
func (s *Store) SubscribeDelivery(ctx context.Context, userID, feedID int64, c model.ChannelChoice, digestID *int64, confirmedBy string) (*Subscription, error) {
	c = normalChoice(c)
	var out *Subscription
	err := s.Tx(ctx, func(tx *Store) error {
		var sub Subscription
		err := tx.DB.Where("user_id = ? AND feed_id = ? AND channel = ? AND target = ?", userID, feedID, c.Channel, c.Target).
			Take(&sub).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			sub = tx.newSubscription(userID, feedID, digestID, confirmedBy)
			sub.Channel, sub.Target, sub.ChannelSecret = c.Channel, c.Target, c.Secret
			if err := tx.DB.Create(&sub).Error; err != nil {
				return fmt.Errorf("create subscription: %w", err)
			}
			sub.Created = true
		case err != nil:
			return err
		default:
			if c.Secret != "" && (!c.Generated || sub.State == SubEnded) && c.Secret != sub.ChannelSecret {
				if err := tx.DB.Model(&sub).Update("channel_secret", c.Secret).Error; err != nil {
					return fmt.Errorf("update subscription: %w", err)
				}
			}
			if err := tx.resubscribe(ctx, &sub, digestID, confirmedBy); err != nil {
				return err
			}
		}
		out = &sub
		if err := tx.lowLineStale(ctx, userID); err != nil {
			return err
		}
		return tx.recountSubscribers(feedID)
	})
	return out, err
}

// newSubscription is the row SubscribeConfirmedBy creates: pending, or
// active when confirmedBy says who confirmed it.
func (s *Store) newSubscription(userID, feedID int64, digestID *int64, confirmedBy string) Subscription {
	now := s.now()
	sub := Subscription{UserID: userID, FeedID: feedID, DigestID: digestID, State: SubPending, CreatedAt: now, RequestedAt: &now}
	if confirmedBy != "" {
		sub.State, sub.ConfirmedAt, sub.ConfirmedBy = SubActive, &now, confirmedBy
	}
	return sub
}

// resubscribe is SubscribeConfirmedBy for an existing row, in the caller's
// transaction: the new delivery, an ended one asked for again, an activation
// with its catch-up; sub is read back afterwards.
func (s *Store) resubscribe(ctx context.Context, sub *Subscription, digestID *int64, confirmedBy string) error {
	now := s.now()
	upd := map[string]any{"digest_id": digestID}
	if sub.State == SubEnded {
		upd["state"], upd["ended_at"], upd["ended_reason"], upd["requested_at"] = SubPending, nil, "", now
		sub.State = SubPending
	}
	activate := confirmedBy != "" && sub.State != SubActive
	if activate {
		upd["state"], upd["confirmed_at"], upd["confirmed_by"] = SubActive, now, confirmedBy
	}
	if err := s.DB.Model(sub).Updates(upd).Error; err != nil {
		return fmt.Errorf("update subscription: %w", err)
	}
	if activate {
		if err := s.routeCatchUp(ctx, sub.ID, now); err != nil {
			return err
		}
	}
	return s.DB.Take(sub, sub.ID).Error
}

// ConfirmSubscription activates a pending subscription (idempotent),
// recording how (by, a ConfirmedBy* value), and returns it. The feed's
// items seen since the person asked for it, while it waited, are routed to
// it then (routeCatchUp).
func (s *Store) ConfirmSubscription(ctx context.Context, id int64, by string) (*Subscription, error) {
	var out Subscription
	err := s.Tx(ctx, func(tx *Store) error {
		now := tx.now()
		res := tx.DB.Model(&Subscription{}).Where("id = ? AND state = ?", id, SubPending).
			Updates(map[string]any{"state": SubActive, "confirmed_at": now, "confirmed_by": by})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected > 0 {
			if err := tx.routeCatchUp(ctx, id, now); err != nil {
				return err
			}
		}
		if err := tx.DB.Take(&out, id).Error; err != nil {
			return notFound(err)
		}
		if err := tx.lowLineStale(ctx, out.UserID); err != nil {
			return err
		}
		return tx.recountSubscribers(out.FeedID)
	})
	if err != nil {
		return nil, fmt.Errorf("confirm subscription %d: %w", id, err)
	}
	return &out, nil
}

// EndSubscription ends a subscription (idempotent) with a reason.
func (s *Store) EndSubscription(ctx context.Context, id int64, reason string) (*Subscription, error) {
	var out Subscription
	err := s.Tx(ctx, func(tx *Store) error {
		if err := tx.DB.Model(&Subscription{}).Where("id = ? AND state <> ?", id, SubEnded).
			Updates(map[string]any{"state": SubEnded, "ended_at": tx.now(), "ended_reason": reason}).Error; err != nil {
			return err
		}
		if err := tx.DB.Take(&out, id).Error; err != nil {
			return notFound(err)
		}
		return tx.recountSubscribers(out.FeedID)
	})
	if err != nil {
		return nil, fmt.Errorf("end subscription %d: %w", id, err)
	}
	return &out, nil
}

// SubscriptionByID looks a subscription up.
func (s *Store) SubscriptionByID(ctx context.Context, id int64) (*Subscription, error) {
	var sub Subscription
	if err := s.DB.WithContext(ctx).Take(&sub, id).Error; err != nil {
		return nil, fmt.Errorf("subscription %d: %w", id, notFound(err))
	}
	return &sub, nil
}

// SubscriptionView is a subscription with its feed, for account pages and OPML.
type SubscriptionView struct {
	Subscription
	FeedURL     string
	FeedTitle   string
	FeedSiteURL string
	FeedState   string
	DigestName  string
}

// SubscriptionsOfUser lists a person's subscriptions that have not ended.
func (s *Store) SubscriptionsOfUser(ctx context.Context, userID int64) ([]SubscriptionView, error) {
	var out []SubscriptionView
	err := s.DB.WithContext(ctx).Table("subscriptions AS s").
		Select("s.*, f.url AS feed_url, f.title AS feed_title, f.site_url AS feed_site_url, f.state AS feed_state, COALESCE(d.name, '') AS digest_name").
		Joins("JOIN feeds f ON f.id = s.feed_id").
		Joins("LEFT JOIN digests d ON d.id = s.digest_id").
		Where("s.user_id = ? AND s.state <> ?", userID, SubEnded).
		Order("s.id").Scan(&out).Error
	return out, err
}

// ActiveSubscriptionsOfFeed lists the active subscriptions of a feed.
func (s *Store) ActiveSubscriptionsOfFeed(ctx context.Context, feedID int64) ([]Subscription, error) {
	var out []Subscription
	err := s.DB.WithContext(ctx).Where("feed_id = ? AND state = ?", feedID, SubActive).Order("id").Find(&out).Error
	return out, err
}

// recountSubscribers keeps feeds.subscriber_count equal to the number of
// people with an active subscription (recomputed, never incremented, so it
// cannot drift): a person who gets the feed in several places is one
// subscriber to its publisher.
func (s *Store) recountSubscribers(feedID int64) error {
	return s.DB.Exec(`UPDATE feeds SET subscriber_count =
  (SELECT COUNT(DISTINCT user_id) FROM subscriptions WHERE feed_id = ? AND state = 'active') WHERE id = ?`, feedID, feedID).Error
}

// SetSubscriptionDelivery switches one of userID's subscriptions to instant
// delivery (digestID nil) or into one of their digests. Subscriptions and
// digests of other people give ErrNotFound.
func (s *Store) SetSubscriptionDelivery(ctx context.Context, userID, subID int64, digestID *int64) error {
	return s.Tx(ctx, func(tx *Store) error {
		if digestID != nil {
			var n int64
			if err := tx.DB.Model(&Digest{}).Where("id = ? AND user_id = ?", *digestID, userID).Count(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("digest %d of user %d: %w", *digestID, userID, ErrNotFound)
			}
		}
		res := tx.DB.Model(&Subscription{}).Where("id = ? AND user_id = ?", subID, userID).Update("digest_id", digestID)
		if res.Error != nil {
			return fmt.Errorf("subscription %d delivery: %w", subID, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("subscription %d of user %d: %w", subID, userID, ErrNotFound)
		}
		return tx.lowLineStale(ctx, userID)
	})
}

// AccountSubscription returns subscription subID if it belongs to userID.
func (s *Store) AccountSubscription(ctx context.Context, userID, subID int64) (*Subscription, error) {
	var sub Subscription
	if err := s.DB.WithContext(ctx).Where("id = ? AND user_id = ?", subID, userID).Take(&sub).Error; err != nil {
		return nil, fmt.Errorf("subscription %d of user %d: %w", subID, userID, notFound(err))
	}
	return &sub, nil
}

// SubscriptionsOfDigest lists the subscriptions (not ended) delivered into a
// digest, with their feeds.
func (s *Store) SubscriptionsOfDigest(ctx context.Context, digestID int64) ([]SubscriptionView, error) {
	var out []SubscriptionView
	err := s.DB.WithContext(ctx).Table("subscriptions AS s").
		Select("s.*, f.url AS feed_url, f.title AS feed_title, f.state AS feed_state, COALESCE(d.name, '') AS digest_name").
		Joins("JOIN feeds f ON f.id = s.feed_id").
		Joins("LEFT JOIN digests d ON d.id = s.digest_id").
		Where("s.digest_id = ? AND s.state <> ?", digestID, SubEnded).
		Order("s.id").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("subscriptions of digest %d: %w", digestID, err)
	}
	return out, nil
}

// EndDigestSubscriptions ends every subscription delivered into a digest
// (idempotent) and returns how many it ended now.
func (s *Store) EndDigestSubscriptions(ctx context.Context, digestID int64, reason string) (int, error) {
	n := 0
	err := s.Tx(ctx, func(tx *Store) error {
		var subs []Subscription
		if err := tx.DB.Where("digest_id = ? AND state <> ?", digestID, SubEnded).Find(&subs).Error; err != nil {
			return err
		}
		for _, sub := range subs {
			if err := tx.DB.Model(&Subscription{}).Where("id = ? AND state <> ?", sub.ID, SubEnded).
				Updates(map[string]any{"state": SubEnded, "ended_at": tx.now(), "ended_reason": reason}).Error; err != nil {
				return err
			}
			if err := tx.recountSubscribers(sub.FeedID); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("end subscriptions of digest %d: %w", digestID, err)
	}
	return n, nil
}

// SetSendNewest records the signup's choice to get the feed's newest post
// on confirmation (see Subscription.SendNewest).
func (s *Store) SetSendNewest(ctx context.Context, id int64, v bool) error {
	if err := s.DB.WithContext(ctx).Model(&Subscription{}).Where("id = ?", id).Update("send_newest", v).Error; err != nil {
		return fmt.Errorf("set send_newest of subscription %d: %w", id, err)
	}
	return nil
}

// SetSignupForecast records what the signup's forecast said subscription
// id costs a month by email (see Subscription.SignupCreditsMonth).
func (s *Store) SetSignupForecast(ctx context.Context, id int64, creditsMonth float64) error {
	if err := s.DB.WithContext(ctx).Model(&Subscription{}).Where("id = ?", id).
		Update("signup_credits_month", max(creditsMonth, 0)).Error; err != nil {
		return fmt.Errorf("set signup forecast of subscription %d: %w", id, err)
	}
	return nil
}

// SetSubscriptionFolder records the folder (an OPML import's) of
// subscription id.
func (s *Store) SetSubscriptionFolder(ctx context.Context, id int64, folder string) error {
	if err := s.DB.WithContext(ctx).Model(&Subscription{}).Where("id = ?", id).Update("folder", folder).Error; err != nil {
		return fmt.Errorf("set folder of subscription %d: %w", id, err)
	}
	return nil
}
