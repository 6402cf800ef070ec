package store

import (
	"context"
	"encoding/json"
	"fmt"

	"gorm.io/gorm/clause"
)

// Notice is the content of a free, plain notice email (confirmation, out of
// credits, feed gone, sign-in link). It is stored as the outbox row's payload.
type Notice struct {
	Subject string       `json:"subject"`
	Text    string       `json:"text"` // paragraphs separated by blank lines
	Links   []NoticeLink `json:"links,omitempty"`
}

// NoticeLink is a button in a notice.
type NoticeLink struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

// QueueNotice queues a free notice to user, once per dedupeKey (a second call
// with the same key does nothing and returns false).
func (s *Store) QueueNotice(ctx context.Context, userID int64, dedupeKey string, n Notice) (bool, error) {
	u, err := s.UserByID(ctx, userID)
	if err != nil {
		return false, err
	}
	payload, err := json.Marshal(n)
	if err != nil {
		return false, fmt.Errorf("notice payload: %w", err)
	}
	now := s.now()
	row := OutboxRow{Kind: KindNotice, DedupeKey: dedupeKey, UserID: userID, Address: u.Email, Credits: 0,
		State: OutboxQueued, NextAttemptAt: now, Payload: string(payload), CreatedAt: now}
	res := s.DB.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	if res.Error != nil {
		return false, fmt.Errorf("queue notice %s: %w", dedupeKey, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// NoticeOf decodes a notice row's payload.
func NoticeOf(row *OutboxRow) (Notice, error) {
	var n Notice
	if err := json.Unmarshal([]byte(row.Payload), &n); err != nil {
		return n, fmt.Errorf("outbox %d: notice payload: %w", row.ID, err)
	}
	return n, nil
}
