package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Rate-limit counters (the rate_limits table): one number per key, shared
// by every process and kept across restarts. The store only reads and
// swaps them; package ratelimit owns what the number means and decides.

// RateLimit is one counter: a key and its number (Unix milliseconds).
type RateLimit struct {
	Key string `gorm:"primaryKey"`
	Tat int64
}

// RateLimitTAT returns key's stored number (Unix milliseconds) and whether
// the key has a row.
func (s *Store) RateLimitTAT(ctx context.Context, key string) (int64, bool, error) {
	var rl RateLimit
	err := s.DB.WithContext(ctx).Where("key = ?", key).Take(&rl).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("rate limit %s: %w", key, err)
	}
	return rl.Tat, true, nil
}

// SwapRateLimitTAT sets key's number to next when it is still old (had
// says whether the key had a row then). It reports false when another
// request changed the key in between, so that the caller decides again
// from what is stored now: a compare-and-swap, the same on Postgres and
// SQLite, that lets no two processes spend one token.
func (s *Store) SwapRateLimitTAT(ctx context.Context, key string, old int64, had bool, next int64) (bool, error) {
	db := s.DB.WithContext(ctx)
	var res *gorm.DB
	if had {
		res = db.Model(&RateLimit{}).Where("key = ? AND tat = ?", key, old).UpdateColumn("tat", next)
	} else {
		res = db.Exec(`INSERT INTO rate_limits (key, tat) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`, key, next)
	}
	if res.Error != nil {
		return false, fmt.Errorf("rate limit %s: %w", key, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// PruneRateLimits deletes the keys whose number is before now (a key
// without its row is the same as a full one) and returns how many went.
func (s *Store) PruneRateLimits(ctx context.Context, now time.Time) (int64, error) {
	res := s.DB.WithContext(ctx).Where("tat < ?", now.UnixMilli()).Delete(&RateLimit{})
	if res.Error != nil {
		return 0, fmt.Errorf("prune rate limits: %w", res.Error)
	}
	return res.RowsAffected, nil
}
