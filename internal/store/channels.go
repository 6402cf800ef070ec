package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/feedmail/feedmail/internal/model"
)

// Channels of subscriptions and digests: where their deliveries go
// (Subscription.Channel). Package channel validates targets; these only
// store them.

// ErrDeliveryExists: the person already gets the feed at that channel and
// target, in another subscription.
var ErrDeliveryExists = errors.New("this feed already goes to that channel and target in another subscription")

// SetSubscriptionChannel sets the channel of userID's subscription subID;
// ErrNotFound when it is not theirs, ErrDeliveryExists when another of
// their subscriptions to the feed has that channel and target already (one
// subscription per person, feed, channel and target). Rows already queued
// for another channel are cancelled when they are rendered.
func (s *Store) SetSubscriptionChannel(ctx context.Context, userID, subID int64, c model.ChannelChoice) error {
	c = normalChoice(c)
	return s.Tx(ctx, func(tx *Store) error {
		var n int64
		if err := tx.DB.Model(&Subscription{}).Where(`user_id = ? AND channel = ? AND target = ? AND id <> ?
AND feed_id = (SELECT feed_id FROM subscriptions WHERE id = ?)`, userID, c.Channel, c.Target, subID, subID).
			Count(&n).Error; err != nil {
			return fmt.Errorf("set channel of subscription %d: %w", subID, err)
		}
		if n > 0 {
			return fmt.Errorf("subscription %d: %w", subID, ErrDeliveryExists)
		}
		res := tx.DB.Model(&Subscription{}).Where("id = ? AND user_id = ?", subID, userID).
			Updates(map[string]any{"channel": c.Channel, "target": c.Target, "channel_secret": c.Secret})
		if res.Error != nil {
			return fmt.Errorf("set channel of subscription %d: %w", subID, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("subscription %d of user %d: %w", subID, userID, ErrNotFound)
		}
		return nil
	})
}

// SetDigestChannel sets the channel of userID's digest digestID;
// ErrNotFound when it is not theirs.
func (s *Store) SetDigestChannel(ctx context.Context, userID, digestID int64, c model.ChannelChoice) error {
	c = normalChoice(c)
	res := s.DB.WithContext(ctx).Model(&Digest{}).Where("id = ? AND user_id = ?", digestID, userID).
		Updates(map[string]any{"channel": c.Channel, "target": c.Target, "channel_secret": c.Secret})
	if res.Error != nil {
		return fmt.Errorf("set channel of digest %d: %w", digestID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("digest %d of user %d: %w", digestID, userID, ErrNotFound)
	}
	return nil
}

// normalChoice returns c, but email (which has no target or secret) for
// an empty channel or email.
func normalChoice(c model.ChannelChoice) model.ChannelChoice {
	if c.Channel == "" || c.Channel == model.ChannelEmail {
		return model.ChannelChoice{Channel: model.ChannelEmail}
	}
	return c
}
