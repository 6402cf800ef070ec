package store

import (
	"context"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/model"
)

// APIToken is one of a person's tokens for the JSON API. Only the
// SHA-256 of the token is kept (TokenHash); Key is the public part that
// finds the row. The format and the comparison are package api's.
type APIToken struct {
	ID         int64 `gorm:"primaryKey"`
	UserID     int64
	Name       string
	Key        string
	TokenHash  []byte
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// CreateAPIToken stores a new token of userID: its name, the key that
// finds it and the hash of the whole token.
func (s *Store) CreateAPIToken(ctx context.Context, userID int64, name, key string, hash []byte) (*APIToken, error) {
	t := APIToken{UserID: userID, Name: name, Key: key, TokenHash: hash, CreatedAt: s.now()}
	if err := s.DB.WithContext(ctx).Create(&t).Error; err != nil {
		return nil, fmt.Errorf("create api token of user %d: %w", userID, err)
	}
	return &t, nil
}

// APITokenByKey returns the token with this key, revoked or not (the
// caller decides), or ErrNotFound.
func (s *Store) APITokenByKey(ctx context.Context, key string) (*APIToken, error) {
	var t APIToken
	if err := s.DB.WithContext(ctx).Where("key = ?", key).Take(&t).Error; err != nil {
		return nil, fmt.Errorf("api token %s: %w", key, notFound(err))
	}
	return &t, nil
}

// APITokensOfUser lists userID's tokens, revoked ones too, oldest first.
func (s *Store) APITokensOfUser(ctx context.Context, userID int64) ([]APIToken, error) {
	var out []APIToken
	if err := s.DB.WithContext(ctx).Where("user_id = ?", userID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("api tokens of user %d: %w", userID, err)
	}
	return out, nil
}

// RevokeAPIToken revokes token id (idempotent: the first revocation's
// time stays) and returns it. userID 0 means any person's (the operator);
// otherwise a token of someone else is ErrNotFound.
func (s *Store) RevokeAPIToken(ctx context.Context, userID, id int64) (*APIToken, error) {
	q := s.DB.WithContext(ctx).Model(&APIToken{}).Where("id = ? AND revoked_at IS NULL", id)
	if userID != 0 {
		q = q.Where("user_id = ?", userID)
	}
	if err := q.Update("revoked_at", s.now()).Error; err != nil {
		return nil, fmt.Errorf("revoke api token %d: %w", id, err)
	}
	var t APIToken
	q = s.DB.WithContext(ctx).Where("id = ?", id)
	if userID != 0 {
		q = q.Where("user_id = ?", userID)
	}
	if err := q.Take(&t).Error; err != nil {
		return nil, fmt.Errorf("api token %d: %w", id, notFound(err))
	}
	return &t, nil
}

// TouchAPIToken records that token id was used at now, unless its last
// use is recorded less than every ago: one write per token per every at
// most, however many requests (and processes) use it. It reports whether
// it wrote.
func (s *Store) TouchAPIToken(ctx context.Context, id int64, now time.Time, every time.Duration) (bool, error) {
	now = now.UTC()
	res := s.DB.WithContext(ctx).Model(&APIToken{}).
		Where("id = ? AND (last_used_at IS NULL OR last_used_at <= ?)", id, now.Add(-every)).
		Update("last_used_at", now)
	if res.Error != nil {
		return false, fmt.Errorf("record use of api token %d: %w", id, res.Error)
	}
	return res.RowsAffected > 0, nil
}

// DeleteAPITokensOfUser erases userID's tokens (account deletion).
func (s *Store) DeleteAPITokensOfUser(ctx context.Context, userID int64) error {
	if err := s.DB.WithContext(ctx).Where("user_id = ?", userID).Delete(&APIToken{}).Error; err != nil {
		return fmt.Errorf("delete api tokens of user %d: %w", userID, err)
	}
	return nil
}

// exportAPITokens is userID's tokens as their data export shows them,
// oldest first.
func (s *Store) exportAPITokens(ctx context.Context, userID int64) ([]model.ExportAPIToken, error) {
	ts, err := s.APITokensOfUser(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	out := make([]model.ExportAPIToken, 0, len(ts))
	for _, t := range ts {
		out = append(out, model.ExportAPIToken{Name: t.Name, CreatedAt: t.CreatedAt.UTC(), LastUsedAt: utcPtrOf(t.LastUsedAt),
			RevokedAt: utcPtrOf(t.RevokedAt)})
	}
	return out, nil
}
