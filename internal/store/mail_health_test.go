package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestMailHealth: per recipient domain, the window's sent mail and judged
// events, the destination's pause, sorted by volume; mail before the
// window, unsent mail and tombstoned addresses are left out.
func TestMailHealth(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC))
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	now := clk.Now()
	since := now.Add(-30 * 24 * time.Hour)
	u := newUser(t, s, "ann@a.example", 0)
	n := 0
	sent := func(to string, at time.Time, state string) {
		n++
		r := store.OutboxRow{Kind: store.KindItem, DedupeKey: fmt.Sprint("k", n), UserID: u.ID, Address: to, State: state,
			NextAttemptAt: at, CreatedAt: at}
		if state == store.OutboxSent {
			r.SentAt = &at
		}
		addOutbox(t, s, r)
	}
	for i := range 10 {
		sent(fmt.Sprintf("Reader%d@A.Example", i%3), now.Add(-time.Duration(i)*time.Hour), store.OutboxSent)
	}
	sent("ann@a.example", since.Add(-time.Hour), store.OutboxSent) // before the window
	sent("ann@a.example", now, store.OutboxQueued)                 // not sent
	sent("ann@a.example", now, store.OutboxFailed)
	for range 3 {
		sent("bob@b.example", now.Add(-time.Hour), store.OutboxSent)
	}
	sent(store.Tombstone(99), now.Add(-time.Hour), store.OutboxSent)

	ev := func(domain, source, kind, reason, party, severity string, at time.Time, times int) {
		for range times {
			if err := s.RecordMailEvent(ctx, store.MailEvent{At: at, Domain: domain, Source: source, Kind: kind,
				Reason: reason, Party: party, Severity: severity}); err != nil {
				t.Fatal(err)
			}
		}
	}
	hour := now.Add(-time.Hour)
	ev("a.example", store.MailSourceSMTP, store.MailFailure, "unknown-user", "reader", "hard", hour, 1)
	ev("a.example", store.MailSourceMail, store.MailFailure, "mailbox-full", "reader", "soft", hour, 2)
	ev("a.example", store.MailSourceSMTP, store.MailFailure, "blocked", "sender", "", hour, 3)
	ev("a.example", store.MailSourceWebhook, store.MailFailure, "authentication", "sender", "", hour, 1)
	ev("a.example", store.MailSourceSMTP, store.MailFailure, "temporary", "none", "", hour, 1)
	ev("a.example", store.MailSourceMail, store.MailComplaint, "", "", "", hour, 1)
	ev("a.example", store.MailSourceSMTP, store.MailFailure, "unknown-user", "reader", "hard", since.Add(-time.Minute), 5)
	ev("c.example", store.MailSourceMail, store.MailComplaint, "", "", "", hour, 2)
	if _, _, err := s.PauseMailDestination(ctx, "d.example", "rate-limited", doubling, time.Hour); err != nil {
		t.Fatal(err)
	}

	got, err := s.MailHealth(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, h := range got {
		order = append(order, h.Domain)
	}
	if fmt.Sprint(order) != "[a.example b.example c.example d.example]" {
		t.Fatalf("domains %v", order)
	}
	a := got[0]
	if a.Sent != 10 || a.Hard != 1 || a.Soft != 2 || a.Sender["blocked"] != 3 || a.Sender["authentication"] != 1 ||
		a.Other != 1 || a.Complaints != 1 || a.Pause != nil {
		t.Errorf("a.example: %+v", a)
	}
	if b := got[1]; b.Sent != 3 || b.Hard+b.Soft+b.Other+b.Complaints != 0 || len(b.Sender) != 0 {
		t.Errorf("b.example: %+v", b)
	}
	if c := got[2]; c.Sent != 0 || c.Complaints != 2 {
		t.Errorf("c.example: %+v", c)
	}
	if d := got[3]; d.Pause == nil || d.Pause.Reason != "rate-limited" || !d.Pause.PausedUntil.Equal(now.Add(5*time.Minute)) {
		t.Errorf("d.example: %+v %+v", d, d.Pause)
	}
}
