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

// TestMailHealthCommand: usage errors exit 2; the report is a JSON array,
// one object per destination domain by volume, with the complaint rate
// against the 0.3 % line, the pause, and what to fix.
func TestMailHealthCommand(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, nil)
	for _, args := range [][]string{
		{"mail", "health", "--days", "0"},
		{"mail", "health", "--days", "31"},
		{"mail", "health", "--days", "a week"},
		{"mail", "health", "gmail.com"},
		{"mail"},
	} {
		if code, out, errs := cli(args...); code != 2 || out != "" || !strings.Contains(errs, "feedmail mail") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and a usage line", args, code, out, errs)
		}
	}
	if code, out, _ := cli("help"); code != 0 || !strings.Contains(out, "feedmail mail health [--days N]") {
		t.Errorf("help (exit %d) does not list mail health:\n%s", code, out)
	}
	if code, _, errs := cli("mail", "health"); storetest.URL() == "sqlite" && (code != 1 || !strings.Contains(errs, "no database")) {
		t.Errorf("no database: exit %d, %s; want 1 (a report reads, it creates nothing)", code, errs)
	}
	s := storetest.OpenDSN(t, dsn, storetest.Options{})
	if code, out, errs := cli("mail", "health"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("empty database: exit %d, %q, %s", code, out, errs)
	}
	ctx := context.Background()
	u, _, err := s.EnsureUser(ctx, "ann@big.example")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for i := range 600 {
		at := now.Add(-time.Duration(i) * time.Minute)
		to := "ann@big.example"
		if i%100 == 0 {
			to = "bob@small.example"
		}
		if err := s.DB.Create(&store.OutboxRow{Kind: store.KindItem, DedupeKey: fmt.Sprint("k", i), UserID: u.ID, Address: to,
			State: store.OutboxSent, NextAttemptAt: at, CreatedAt: at, SentAt: &at}).Error; err != nil {
			t.Fatal(err)
		}
	}
	events := []store.MailEvent{
		{Domain: "big.example", Source: store.MailSourceSMTP, Kind: store.MailFailure, Reason: "blocked", Party: "sender", Status: "5.7.1"},
		{Domain: "big.example", Source: store.MailSourceSMTP, Kind: store.MailFailure, Reason: "unknown-user", Party: "reader", Severity: "hard"},
		{Domain: "big.example", Source: store.MailSourceMail, Kind: store.MailComplaint},
		{Domain: "small.example", Source: store.MailSourceMail, Kind: store.MailComplaint},
		{Domain: "big.example", Source: store.MailSourceSMTP, Kind: store.MailFailure, Reason: "unknown-user", Party: "reader",
			Severity: "hard", At: now.Add(-8 * 24 * time.Hour)},
	}
	if err := s.RecordMailEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PauseMailDestination(ctx, "big.example", "blocked", outbox.DestinationPause, time.Hour); err != nil {
		t.Fatal(err)
	}

	code, out, errs := cli("mail", "health", "--days", "7")
	var got []outbox.DomainHealth
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got) != 2 {
		t.Fatalf("exit %d, %v: %s %s", code, err, out, errs)
	}
	big, small := got[0], got[1]
	if big.Domain != "big.example" || big.Sent != 594 || big.Hard != 1 || big.SenderSide["blocked"] != 1 ||
		big.Complaints != 1 || big.OverComplaintLine ||
		!big.Paused || big.PausedUntil == nil || big.PauseReason != "blocked" {
		t.Errorf("big.example: %+v", big)
	}
	for _, r := range []string{"blocked", "authentication", "policy", "rate-limited", "syntax"} {
		if _, ok := big.SenderSide[r]; !ok {
			t.Errorf("sender_side lacks %s: %v", r, big.SenderSide)
		}
	}
	if miss := hasAll(strings.Join(big.Check, "\n"), "waits until", "1 email refused as blocked", "blocklists"); miss != "" {
		t.Errorf("big.example's check lacks %q: %q", miss, big.Check)
	}
	if small.Domain != "small.example" || small.Sent != 6 || small.ComplaintRate < 0.16 || !small.OverComplaintLine ||
		len(small.Check) != 1 || !strings.Contains(small.Check[0], "0.3 %") {
		t.Errorf("small.example: %+v", small)
	}
}

// hasAll returns the first of subs that s lacks, "" when none.
func hasAll(s string, subs ...string) string {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return x
		}
	}
	return ""
}
