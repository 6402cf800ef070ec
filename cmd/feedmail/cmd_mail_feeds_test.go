package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestMailHealthFeeds: `mail health --feeds` ranks feeds by the spam
// complaints about their instant email (then by rate, then by volume),
// with what was sent and the rate against the 0.3 % line; digests and
// mail outside the window are not counted; --top cuts the list.
func TestMailHealthFeeds(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, nil)
	s := storetest.OpenDSN(t, dsn, storetest.Options{})
	ctx := context.Background()
	u, _, err := s.EnsureUser(ctx, "ann@example.net")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	n := 0
	// send queues a sent instant email of a new post of feed, at, and
	// complaints about it.
	send := func(feed int64, at time.Time, complaints int) {
		n++
		it := store.Item{FeedID: feed, Identity: fmt.Sprint("i", n), Title: "t", SeenAt: at}
		if err := s.DB.Create(&it).Error; err != nil {
			t.Fatal(err)
		}
		row := store.OutboxRow{Kind: store.KindItem, DedupeKey: fmt.Sprint("k", n), UserID: u.ID, ItemID: &it.ID,
			Address: u.Email, State: store.OutboxSent, NextAttemptAt: at, CreatedAt: at, SentAt: &at}
		if err := s.DB.Create(&row).Error; err != nil {
			t.Fatal(err)
		}
		for range complaints {
			if err := s.RecordMailEvent(ctx, store.MailEvent{At: at, Domain: "example.net", Source: store.MailSourceMail,
				Kind: store.MailComplaint, OutboxID: &row.ID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	feed := func(url string) int64 {
		f, _, err := s.EnsureFeed(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		return f.ID
	}
	quiet, noisy, spammy, old := feed("https://quiet.example/feed"), feed("https://noisy.example/feed"),
		feed("https://spammy.example/feed"), feed("https://old.example/feed")
	hour := now.Add(-time.Hour)
	for i := range 100 {
		send(quiet, hour, 0)
		complaints := 0
		if i < 2 {
			complaints = 1 // 2 complaints in 100
		}
		send(noisy, hour, complaints)
	}
	send(spammy, hour, 1)
	send(spammy, hour, 1) // 2 complaints in 2: same count, higher rate
	send(old, now.Add(-10*24*time.Hour), 3)
	digest := store.OutboxRow{Kind: store.KindDigest, DedupeKey: "digest", UserID: u.ID, Address: u.Email,
		State: store.OutboxSent, NextAttemptAt: hour, CreatedAt: hour, SentAt: &hour}
	if err := s.DB.Create(&digest).Error; err != nil {
		t.Fatal(err)
	}

	code, out, errs := cli("mail", "health", "--feeds", "--days", "7")
	var got []outbox.FeedHealth
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s %s", code, err, out, errs)
	}
	var order []string
	for _, h := range got {
		order = append(order, fmt.Sprintf("%s %d/%d", h.URL, h.Complaints, h.Sent))
	}
	want := []string{"https://spammy.example/feed 2/2", "https://noisy.example/feed 2/100", "https://quiet.example/feed 0/100"}
	if strings.Join(order, ", ") != strings.Join(want, ", ") {
		t.Fatalf("ranking %q, want %q", order, want)
	}
	if !got[0].OverComplaintLine || got[0].ComplaintRate != 1 || !got[1].OverComplaintLine || got[2].OverComplaintLine ||
		got[1].Feed != noisy {
		t.Errorf("rates: %+v", got)
	}
	if code, out, _ := cli("mail", "health", "--feeds", "--days", "7", "--top", "1"); code != 0 ||
		!strings.Contains(out, "spammy.example") || strings.Contains(out, "noisy.example") {
		t.Errorf("--top 1: exit %d, %s", code, out)
	}
	if code, out, errs := cli("mail", "health", "--feeds", "--top", "0"); code != 2 || out != "" || !strings.Contains(errs, "--top") {
		t.Errorf("--top 0: exit %d, %q, %q; want 2 and a usage line", code, out, errs)
	}
}
