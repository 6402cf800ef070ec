package store

import (
	"context"
	"fmt"
	"slices"
)

// Account deletion: the person's address, subscriptions, digests and the
// mail not sent yet are erased; the users row stays with a tombstone
// address ("deleted-<id>@invalid") and deleted_at, so the ledger and the
// purchases keep a user for accounting (their foreign keys, and the cached
// balance equal to the last entry's balance_after). The lookups by id and
// address treat the row as absent, so account links stop working and the
// same address signs up as a new account.

// AccountDeletion is what DeleteUser erased.
type AccountDeletion struct {
	UserID        int64
	Subscriptions int     // subscriptions erased, ended ones included
	Digests       int     // digests erased
	PendingMail   int     // outbox rows not sent yet (queued or held) erased
	Feeds         []int64 // the feeds whose subscriber counts were recounted
}

// Tombstone is the address a deleted account's row keeps: unique, and in
// the .invalid domain, which can never receive mail.
func Tombstone(userID int64) string { return fmt.Sprintf("deleted-%d@invalid", userID) }

// DeleteUser erases the account userID in one transaction (see above) and
// returns what it erased. An unknown or already deleted account is
// ErrNotFound, and nothing changes.
func (s *Store) DeleteUser(ctx context.Context, userID int64) (*AccountDeletion, error) {
	out := &AccountDeletion{UserID: userID}
	err := s.Tx(ctx, func(tx *Store) error {
		// The user row first, as the ledger's transactions lock it: a charge
		// or grant running now waits for us or we for it, never a cycle.
		if _, err := tx.ledgerLockUser(ctx, userID); err != nil {
			return err
		}
		var u User
		if err := tx.DB.Where("id = ? AND deleted_at IS NULL", userID).Take(&u).Error; err != nil {
			return fmt.Errorf("user %d: %w", userID, notFound(err))
		}
		if err := tx.DB.Model(&Subscription{}).Where("user_id = ?", userID).Distinct().
			Order("feed_id").Pluck("feed_id", &out.Feeds).Error; err != nil {
			return fmt.Errorf("feeds of user %d: %w", userID, err)
		}
		for _, step := range []func(context.Context, *Store, int64, *AccountDeletion) error{
			deleteUserMail, deleteUserDeliveries, deleteUserPublishing, tombstoneUser,
		} {
			if err := step(ctx, tx, userID, out); err != nil {
				return err
			}
		}
		for _, f := range slices.Compact(out.Feeds) {
			if err := tx.recountSubscribers(f); err != nil {
				return fmt.Errorf("recount feed %d: %w", f, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("delete account %d: %w", userID, err)
	}
	return out, nil
}

// deleteUserMail is DeleteUser's step for the person's email: failure
// details cleared, pending mail deleted (counted in out), sent mail kept
// for the records without the address or the message.
func deleteUserMail(_ context.Context, tx *Store, userID int64, out *AccountDeletion) error {
	// A failure's reply often quotes the address: clear it before the
	// pending rows (which SMTP-time events name too) are deleted.
	if err := tx.DB.Model(&MailEvent{}).Where("outbox_id IN (SELECT id FROM outbox WHERE user_id = ?)", userID).
		Update("detail", "").Error; err != nil {
		return fmt.Errorf("clear mail event details: %w", err)
	}
	res := tx.DB.Where("user_id = ? AND state IN ?", userID, []string{OutboxQueued, OutboxHeld}).Delete(&OutboxRow{})
	if res.Error != nil {
		return fmt.Errorf("delete pending mail: %w", res.Error)
	}
	out.PendingMail = int(res.RowsAffected)
	if err := tx.DB.Model(&OutboxRow{}).Where("user_id = ?", userID).
		Updates(map[string]any{"to_addr": Tombstone(userID), "payload": "", "last_error": ""}).Error; err != nil {
		return fmt.Errorf("scrub sent mail: %w", err)
	}
	return nil
}

// deleteUserDeliveries is DeleteUser's step for what the person follows:
// digest entries and issues, subscriptions and digests (counted in out).
func deleteUserDeliveries(_ context.Context, tx *Store, userID int64, out *AccountDeletion) error {
	subs := tx.DB.Model(&Subscription{}).Select("id").Where("user_id = ?", userID)
	digests := tx.DB.Model(&Digest{}).Select("id").Where("user_id = ?", userID)
	if err := tx.DB.Where("subscription_id IN (?) OR digest_id IN (?)", subs, digests).Delete(&DigestItem{}).Error; err != nil {
		return fmt.Errorf("delete digest items: %w", err)
	}
	if err := tx.DB.Where("digest_id IN (?)", digests).Delete(&DigestIssue{}).Error; err != nil {
		return fmt.Errorf("delete digest issues: %w", err)
	}
	res := tx.DB.Where("user_id = ?", userID).Delete(&Subscription{})
	if res.Error != nil {
		return fmt.Errorf("delete subscriptions: %w", res.Error)
	}
	out.Subscriptions = int(res.RowsAffected)
	res = tx.DB.Where("user_id = ?", userID).Delete(&Digest{})
	if res.Error != nil {
		return fmt.Errorf("delete digests: %w", res.Error)
	}
	out.Digests = int(res.RowsAffected)
	return nil
}

// deleteUserPublishing is DeleteUser's step for what the person does as a
// publisher or a program: the feeds they pay for (ClearFeedOwner), their
// claims and their API tokens.
func deleteUserPublishing(ctx context.Context, tx *Store, userID int64, _ *AccountDeletion) error {
	if err := tx.DB.Where("user_id = ?", userID).Delete(&FeedOwner{}).Error; err != nil {
		return fmt.Errorf("end owner payment: %w", err)
	}
	if err := tx.DB.Where("user_id = ?", userID).Delete(&OwnerClaim{}).Error; err != nil {
		return fmt.Errorf("delete feed claims: %w", err)
	}
	return tx.DeleteAPITokensOfUser(ctx, userID)
}

// tombstoneUser is DeleteUser's last step: the user row keeps its id (the
// ledger's) under a tombstone address, and bounce details that quote the
// address are cleared.
func tombstoneUser(_ context.Context, tx *Store, userID int64, _ *AccountDeletion) error {
	if err := tx.DB.Model(&User{}).Where("id = ?", userID).Updates(map[string]any{
		"email": Tombstone(userID), "timezone": "UTC", "confirmed_at": nil, "hard_bounces": 0,
		"soft_bounces": 0, "last_bounce": "", "last_bounce_at": nil, "bouncing_since": nil, "credit_notice_at": nil, "deleted_at": tx.now(),
	}).Error; err != nil {
		return fmt.Errorf("tombstone user %d: %w", userID, err)
	}
	if err := tx.DB.Model(&InboundEvent{}).Where("user_id = ?", userID).Update("detail", "").Error; err != nil {
		return fmt.Errorf("clear bounce details: %w", err)
	}
	return nil
}
