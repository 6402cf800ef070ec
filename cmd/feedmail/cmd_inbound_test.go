package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
)

// inboundDSN is an RFC 3464 report, as an MTA writes one, about an email
// whose envelope sender was returnPath, to finalRcpt with status.
func inboundDSN(returnPath, finalRcpt, status string) string {
	action := "failed"
	if strings.HasPrefix(status, "4") {
		action = "delayed"
	}
	return fmt.Sprintf(`Return-Path: <>
Delivered-To: %[1]s
From: MAILER-DAEMON@mx.example.net (Mail Delivery System)
To: %[1]s
Subject: Undelivered Mail Returned to Sender
Message-ID: <dsn-%[3]s-%[2]s@mx.example.net>
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="B"

--B
Content-Type: text/plain

I'm sorry to have to inform you that your message could not be delivered.

--B
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.net

Final-Recipient: rfc822; %[2]s
Action: %[4]s
Status: %[3]s
Diagnostic-Code: smtp; 550 %[3]s <%[2]s>: Recipient address rejected

--B
Content-Type: text/rfc822-headers

Return-Path: <%[1]s>
From: feedmail@example.com
To: %[2]s
Subject: A post

--B--
`, returnPath, finalRcpt, status, action)
}

// TestInboundCommand: what an MTA pipes to `feedmail inbound` has its
// effect once and is printed as one JSON line; bad input and mail about
// nothing of ours exit 0 as "unknown" and change nothing; a database that
// cannot be reached exits 75 so the MTA tries again.
func TestInboundCommand(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	env := map[string]string{"FEEDMAIL_DATABASE_URL": dsn, "FEEDMAIL_SECRET": "0123456789abcdef0123",
		"FEEDMAIL_BOUNCE_ADDRESS": "bounces@mail.example.com", "FEEDMAIL_LOG_LEVEL": "warn"}
	cli := func(stdin string, extraEnv ...string) (int, map[string]any, string) {
		var out, errb bytes.Buffer
		code := runIO(context.Background(), []string{"inbound"}, append(environOf(env), extraEnv...),
			strings.NewReader(stdin), &out, &errb)
		var got map[string]any
		if code == 0 {
			if err := json.Unmarshal(out.Bytes(), &got); err != nil || strings.Count(out.String(), "\n") != 1 {
				t.Fatalf("stdout %q is not one JSON line: %v", out.String(), err)
			}
		}
		return code, got, errb.String()
	}
	if strings.HasPrefix(dsn, "sqlite") {
		if code, _, errs := cli("whatever"); code != 75 || !strings.Contains(errs, "no database") {
			t.Fatalf("before the SQLite file exists: exit %d, stderr %q; want 75", code, errs)
		}
	}
	if code, _, errs := (func() (int, map[string]any, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"migrate"}, environOf(env), &out, &errb)
		return code, nil, errb.String()
	})(); code != 0 {
		t.Fatalf("migrate: %d %s", code, errs)
	}
	ctx := context.Background()
	st := storetest.OpenDSN(t, dsn, storetest.Options{})
	u, _, err := st.EnsureUser(ctx, "reader@example.net")
	if err != nil {
		t.Fatal(err)
	}
	feed, _, err := st.EnsureFeed(ctx, "https://blog.example.org/feed")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := st.Subscribe(ctx, u.ID, feed.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	row := store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:1", UserID: u.ID, SubscriptionID: &sub.ID,
		Address: u.Email, State: store.OutboxSent, MessageID: "<item-1-1.abc@example.com>", NextAttemptAt: time.Now(), CreatedAt: time.Now()}
	if err := st.DB.Create(&row).Error; err != nil {
		t.Fatal(err)
	}
	signer, err := token.NewSigner([]byte(env["FEEDMAIL_SECRET"]))
	if err != nil {
		t.Fatal(err)
	}
	l := links.New("http://127.0.0.1:8080", signer, "feedmail@example.com").WithBounce("bounces@mail.example.com")
	verp := l.ReturnAddress(row.ID)
	other, _ := token.NewSigner([]byte("another-install-secret-0123"))
	forged := links.New("http://x", other, "feedmail@example.com").WithBounce("bounces@mail.example.com").ReturnAddress(row.ID)
	hardBounces := func() int {
		got, err := st.UserByID(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.HardBounces
	}
	garbage := make([]byte, 4096)
	_, _ = rand.Read(garbage)
	huge := "From: a@b.example\nTo: " + verp + "\nSubject: big\n\n" + strings.Repeat("0123456789abcdef\n", 20<<20/17)
	for _, c := range []struct{ name, msg string }{
		{"empty", ""},
		{"binary garbage", string(garbage)},
		{"20 MB message", huge},
		{"DSN about an address we never mailed", inboundDSN("someone@else.example", "x@y.example", "5.1.1")},
		{"DSN with a forged token", inboundDSN(forged, u.Email, "5.1.1")},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, got, errs := cli(c.msg)
			if code != 0 || got["kind"] != "unknown" {
				t.Fatalf("exit %d, %v, stderr %q; want 0 and kind unknown", code, got, errs)
			}
			if n := hardBounces(); n != 0 {
				t.Fatalf("hard bounces %d after bad input", n)
			}
		})
	}
	code, got, errs := cli(inboundDSN(verp, u.Email, "5.1.1"))
	if code != 0 || got["kind"] != "bounce" || got["severity"] != "hard" || got["recipient"] != u.Email ||
		!strings.Contains(fmt.Sprint(got["action"]), "hard bounce counted") {
		t.Fatalf("hard bounce: exit %d %v %s", code, got, errs)
	}
	if code, got, _ = cli(inboundDSN(verp, u.Email, "5.1.1")); code != 0 || got["action"] != "already handled" || hardBounces() != 1 {
		t.Fatalf("the same DSN twice: exit %d %v, hard bounces %d", code, got, hardBounces())
	}
	var status bytes.Buffer
	if code := run(ctx, []string{"account", "status", "--email", u.Email}, environOf(env), &status, io.Discard); code != 0 ||
		!strings.Contains(status.String(), `"hard_bounces_in_a_row": 1`) || !strings.Contains(status.String(), `"status": "5.1.1"`) ||
		!strings.Contains(status.String(), "bounced") {
		t.Fatalf("account status after a hard bounce: exit %d\n%s", code, status.String())
	}
	unsub := "From: reader@example.net\nTo: " + l.UnsubscribeMailto(row.ID)[len("mailto:"):] + "\nSubject: unsubscribe\n\nunsubscribe\n"
	unsub = strings.Replace(unsub, "?subject=unsubscribe", "", 1)
	// Postfix's local delivery names the recipient in the environment.
	if code, got, errs = cli("From: reader@example.net\nSubject: unsubscribe\n\n", "ORIGINAL_RECIPIENT="+strings.ToUpper(
		strings.TrimPrefix(strings.TrimSuffix(l.UnsubscribeMailto(row.ID), "?subject=unsubscribe"), "mailto:"))); code != 0 || got["kind"] != "unsubscribe" {
		t.Fatalf("unsubscribe by email: exit %d %v %s", code, got, errs)
	}
	if code, got, _ = cli(unsub); code != 0 || got["kind"] != "unsubscribe" || got["action"] != "already handled" {
		t.Fatalf("unsubscribe again: exit %d %v", code, got)
	}
	if s, _ := st.SubscriptionByID(ctx, sub.ID); s.State != store.SubEnded {
		t.Fatalf("subscription %s after unsubscribing by email", s.State)
	}
	// A block of our own sending IP is the sender's problem: recorded,
	// never counted against the reader.
	feed2, _, err := st.EnsureFeed(ctx, "https://other.example.org/feed")
	if err != nil {
		t.Fatal(err)
	}
	sub2, err := st.Subscribe(ctx, u.ID, feed2.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	row2 := store.OutboxRow{Kind: store.KindItem, DedupeKey: "item:2", UserID: u.ID, SubscriptionID: &sub2.ID,
		Address: u.Email, State: store.OutboxSent, MessageID: "<item-2-2.abc@example.com>", NextAttemptAt: time.Now(), CreatedAt: time.Now()}
	if err := st.DB.Create(&row2).Error; err != nil {
		t.Fatal(err)
	}
	blocked := strings.Replace(inboundDSN(l.ReturnAddress(row2.ID), u.Email, "5.7.1"),
		"Diagnostic-Code: smtp; 550 5.7.1 <"+u.Email+">: Recipient address rejected",
		"Diagnostic-Code: smtp; 554 5.7.1 Service unavailable; Client host [192.0.2.7] blocked using zen.spamhaus.org", 1)
	if code, got, errs = cli(blocked); code != 0 || got["kind"] != "bounce" || got["severity"] != "" ||
		got["reason"] != "blocked" || got["party"] != "sender" || hardBounces() != 1 {
		t.Fatalf("a blocklisting: exit %d %v %s, hard bounces %d (want 1, unchanged)", code, got, errs, hardBounces())
	}
	// Apple Mail's unsubscribe marks itself auto-replied; it unsubscribes.
	apple := "From: reader@example.net\nTo: " + strings.TrimSuffix(strings.TrimPrefix(l.UnsubscribeMailto(row2.ID), "mailto:"), "?subject=unsubscribe") +
		"\nSubject: unsubscribe\nAuto-Submitted: auto-replied\nX-Apple-Unsubscribe: true\n\n" +
		"Apple Mail sent this email to unsubscribe from the message \"A post\".\n"
	if code, got, errs = cli(apple); code != 0 || got["kind"] != "unsubscribe" {
		t.Fatalf("Apple Mail's unsubscribe: exit %d %v %s", code, got, errs)
	}
	if s, _ := st.SubscriptionByID(ctx, sub2.ID); s.State != store.SubEnded {
		t.Fatalf("subscription %s after Apple Mail's unsubscribe", s.State)
	}
	// Without the bounce address no token can be read: the MTA must keep
	// the message (75) rather than have it lost as "names no email".
	delete(env, "FEEDMAIL_BOUNCE_ADDRESS")
	if code, _, errs := cli(inboundDSN(verp, u.Email, "5.1.1")); code != 75 || !strings.Contains(errs, "FEEDMAIL_BOUNCE_ADDRESS") {
		t.Fatalf("without FEEDMAIL_BOUNCE_ADDRESS: exit %d, stderr %q; want 75 naming the variable", code, errs)
	}
	env["FEEDMAIL_BOUNCE_ADDRESS"] = "bounces@mail.example.com"
	env["FEEDMAIL_DATABASE_URL"] = "postgres://feedmail@127.0.0.1:1/nothing?sslmode=disable&connect_timeout=2"
	if code, _, errs := cli(inboundDSN(verp, u.Email, "5.1.1")); code != 75 {
		t.Fatalf("database unreachable: exit %d %q, want 75", code, errs)
	}
}
