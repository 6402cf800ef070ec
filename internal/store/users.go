package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm/clause"
)

// User is a person who receives email. Balance is the cached sum of their
// ledger entries; the database refuses to let it go below zero.
type User struct {
	ID            int64 `gorm:"primaryKey"`
	Email         string
	Timezone      string
	Balance       int64
	ConfirmedAt   *time.Time
	TrialGranted  bool
	HardBounces   int
	BouncingSince *time.Time
	// SoftBounces counts temporary failures reported after sending (never
	// stopping delivery); LastBounce says what the latest bounce was.
	SoftBounces    int
	LastBounce     string
	LastBounceAt   *time.Time
	CreditNoticeAt *time.Time // the free out-of-credits notice for the current shortage
	// LowLine, LowLineDue and LowNoticeAt are the running-low warning's
	// (see lowbalance.go).
	LowLine     int64
	LowLineDue  *time.Time
	LowNoticeAt *time.Time
	// PausedAt and PausedUntil pause the whole account (see Pause).
	PausedAt    *time.Time
	PausedUntil *time.Time
	CreatedAt   time.Time
	// DeletedAt is when the person deleted their account (DeleteUser); the
	// row stays with a tombstone address for the ledger's sake, and the
	// lookups below treat it as absent.
	DeletedAt *time.Time
	// SignedOutAt is the person's last "sign out everywhere": account links
	// issued before it no longer work (SignOutEverywhere).
	SignedOutAt *time.Time
}

// NormalizeEmail is the form an address is stored and looked up in: trimmed,
// with the domain lower-cased (the local part is left as the person typed it).
func NormalizeEmail(email string) string {
	email = strings.TrimSpace(email)
	if i := strings.LastIndexByte(email, '@'); i >= 0 {
		return email[:i] + "@" + strings.ToLower(email[i+1:])
	}
	return email
}

// EnsureUser returns the user with this address, creating it when absent.
// created says whether this call created it.
func (s *Store) EnsureUser(ctx context.Context, email string) (u *User, created bool, err error) {
	email = NormalizeEmail(email)
	nu := User{Email: email, Timezone: "UTC", CreatedAt: s.now()}
	res := s.DB.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&nu)
	if res.Error != nil {
		return nil, false, fmt.Errorf("create user: %w", res.Error)
	}
	u, err = s.UserByEmail(ctx, email)
	return u, res.RowsAffected == 1, err
}

// UserByEmail looks a user up by address.
func (s *Store) UserByEmail(ctx context.Context, email string) (*User, error) {
	var u User
	if err := s.DB.WithContext(ctx).Where("email = ? AND deleted_at IS NULL", NormalizeEmail(email)).Take(&u).Error; err != nil {
		return nil, fmt.Errorf("user %s: %w", email, notFound(err))
	}
	return &u, nil
}

// UserByID looks a user up by id; a deleted account is ErrNotFound.
func (s *Store) UserByID(ctx context.Context, id int64) (*User, error) {
	var u User
	if err := s.DB.WithContext(ctx).Where("deleted_at IS NULL").Take(&u, id).Error; err != nil {
		return nil, fmt.Errorf("user %d: %w", id, notFound(err))
	}
	return &u, nil
}

// MarkUserConfirmed records that the person proved they own the address.
// It returns true the first time.
func (s *Store) MarkUserConfirmed(ctx context.Context, id int64) (bool, error) {
	res := s.DB.WithContext(ctx).Model(&User{}).Where("id = ? AND confirmed_at IS NULL", id).
		Update("confirmed_at", s.now())
	return res.RowsAffected == 1, res.Error
}

// SetUserTimezone stores the person's preferred zone.
func (s *Store) SetUserTimezone(ctx context.Context, id int64, zone string) error {
	return s.DB.WithContext(ctx).Model(&User{}).Where("id = ?", id).Update("timezone", zone).Error
}

// UsersByIDs loads users by id (deleted accounts left out).
func (s *Store) UsersByIDs(ctx context.Context, ids []int64) (map[int64]*User, error) {
	out := make(map[int64]*User, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var us []User
	cond, arg := s.sqlDialect().idsIn("id", outboxUniq(ids))
	if err := s.DB.WithContext(ctx).Where(cond+" AND deleted_at IS NULL", arg).Find(&us).Error; err != nil {
		return nil, fmt.Errorf("load users: %w", err)
	}
	for i := range us {
		out[us[i].ID] = &us[i]
	}
	return out, nil
}
