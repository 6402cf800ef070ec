package main

import (
	"context"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/retention"
	"github.com/feedmail/feedmail/mailer"
)

// mailHealthUsage is the usage of `feedmail mail health`.
const mailHealthUsage = "[--days N]"

// maxHealthDays is the longest window: sent email (what the failures are
// counted against) is kept no longer, and mail events no longer than that.
const maxHealthDays = int(min(retention.OutboxKeep, mailer.MailEventsKeep) / (24 * time.Hour))

// cmdMailHealth prints, as a JSON array, one object per destination
// domain of the last --days days (default 30), by volume: what was sent,
// bounced, refused for the sender's own sake and complained about, whether
// the domain is paused, and what to fix (mailer.Health). It reads the
// store only: no account is created, nothing changes.
func cmdMailHealth(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "mail health")
	days := fs.Int("days", 30, fmt.Sprintf("the window, in days back from now (1 to %d: sent email is kept that long)", maxHealthDays))
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *days < 1 || *days > maxHealthDays {
		return fmt.Errorf("%w: --days must be a whole number from 1 to %d, got %d", errUsage, maxHealthDays, *days)
	}
	s, err := a.openExistingStore(ctx)
	if err != nil {
		return err
	}
	now := a.clock.Now()
	rows, err := s.MailHealth(ctx, now.Add(-time.Duration(*days)*24*time.Hour))
	if err != nil {
		return err
	}
	return a.printJSON(mailer.Health(rows, now))
}
