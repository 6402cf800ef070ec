package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// MailEvent is one judged delivery failure or complaint, kept per
// recipient domain for `feedmail mail health` (see migration 00015).
type MailEvent struct {
	ID       int64 `gorm:"primaryKey"`
	At       time.Time
	Domain   string
	Source   string // MailSourceSMTP, MailSourceMail or MailSourceWebhook
	Kind     string // MailFailure or MailComplaint
	Reason   string // a bounce.Reason
	Party    string // a bounce.Party
	Severity string // what it counted against the reader: hard, soft or ""
	Status   string
	OutboxID *int64
	Detail   string
}

// Sources and kinds of MailEvent.
const (
	MailSourceSMTP    = "smtp"    // the SMTP reply when sending
	MailSourceMail    = "mail"    // a bounce or complaint that came back by mail
	MailSourceWebhook = "webhook" // an email service's notification
	MailFailure       = "failure"
	MailComplaint     = "complaint"
)

// AddressDomain returns the lower-cased domain of an email address, ""
// when it has none.
func AddressDomain(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return ""
	}
	return strings.ToLower(strings.Trim(strings.TrimSpace(addr[at+1:]), "<>"))
}

// RecordMailEvent appends e (At defaults to now, details are clipped).
func (s *Store) RecordMailEvent(ctx context.Context, e MailEvent) error {
	if e.At.IsZero() {
		e.At = s.now()
	}
	e.Domain, e.Status, e.Detail = clip(e.Domain, 255), clip(e.Status, 16), clip(e.Detail, 300)
	if err := s.DB.WithContext(ctx).Create(&e).Error; err != nil {
		return fmt.Errorf("record mail event: %w", err)
	}
	return nil
}
