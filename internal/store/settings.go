package store

import (
	"context"
	"fmt"

	"gorm.io/gorm/clause"
)

// Setting is one operator or process-wide value (e.g. the generated HMAC secret).
type Setting struct {
	Key   string `gorm:"primaryKey"`
	Value string
}

// Setting returns the value stored under key, or ErrNotFound.
func (s *Store) Setting(ctx context.Context, key string) (string, error) {
	var st Setting
	if err := s.DB.WithContext(ctx).Where("key = ?", key).Take(&st).Error; err != nil {
		return "", notFound(err)
	}
	return st.Value, nil
}

// SettingOrInit returns the value stored under key; when there is none it
// stores value first. Two processes racing both get the one value that won.
func (s *Store) SettingOrInit(ctx context.Context, key, value string) (string, error) {
	if err := s.DB.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).
		Create(&Setting{Key: key, Value: value}).Error; err != nil {
		return "", fmt.Errorf("init setting %s: %w", key, err)
	}
	return s.Setting(ctx, key)
}
