package main

import (
	"context"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/retention"
)

// mailHealthUsage is the usage of `feedmail mail health`.
const mailHealthUsage = "[--days N] [--feeds [--top N]]"

// maxHealthDays is the longest window: sent email (what the failures are
// counted against) is kept no longer, and mail events no longer than that.
const maxHealthDays = int(min(retention.OutboxKeep, outbox.MailEventsKeep) / (24 * time.Hour))

// cmdMailHealth prints, as a JSON array, one object per destination
// domain of the last --days days (default 30), by volume: what was sent,
// bounced, refused for the sender's own sake and complained about, whether
// the domain is paused, and what to fix (outbox.Health). With --feeds it
// prints one object per feed instead, ranked by the spam complaints about
// its instant email (the --top first, default 50). It reads the store
// only: no account is created, nothing changes.
func cmdMailHealth(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "mail health")
	days := fs.Int("days", 30, fmt.Sprintf("the window, in days back from now (1 to %d: sent email is kept that long)", maxHealthDays))
	feeds := fs.Bool("feeds", false, "rank feeds by the spam complaints about their instant email, instead of destination domains")
	top := fs.Int("top", 50, "with --feeds: how many feeds to print, most complained about first (at least 1)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *days < 1 || *days > maxHealthDays {
		return fmt.Errorf("%w: --days must be a whole number from 1 to %d, got %d", errUsage, maxHealthDays, *days)
	}
	if *top < 1 {
		return fmt.Errorf("%w: --top must be a whole number of at least 1, got %d", errUsage, *top)
	}
	s, err := a.openExistingStore(ctx)
	if err != nil {
		return err
	}
	now := a.clock.Now()
	since := now.Add(-time.Duration(*days) * 24 * time.Hour)
	if *feeds {
		rows, err := s.MailHealthByFeed(ctx, since)
		if err != nil {
			return err
		}
		return a.printJSON(outbox.FeedsHealth(rows[:min(*top, len(rows))]))
	}
	rows, err := s.MailHealth(ctx, since)
	if err != nil {
		return err
	}
	return a.printJSON(outbox.Health(rows, now))
}
