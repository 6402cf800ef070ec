package outbox

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/store"
	dto "github.com/prometheus/client_model/go"
)

// returnSamples are the classifier's sample reports, in the formats of
// the MTAs and mailbox providers that send them, with what each is.
var returnSamples = map[string]string{
	"postfix-dsn-hard.eml": "bounce hard", "postfix-delayed.eml": "bounce ", "mailbox-full.eml": "bounce soft",
	"sendmail-dsn.eml": "bounce hard", "outlook-dsn.eml": "bounce hard", "gmail-dsn.eml": "bounce hard",
	"ses-dsn.eml": "bounce hard", "global-dsn.eml": "bounce hard", "exim-nondsn.eml": "bounce hard",
	"exim-delay.eml": "bounce ", "qmail-failure.eml": "bounce hard", "yahoo-failure.eml": "bounce hard",
	"exchange-legacy.eml": "bounce hard", "sendmail-legacy.eml": "bounce hard", "gmail-legacy.eml": "bounce ",
	"lotus-generic.eml": "bounce hard", "postfix-text.eml": "bounce soft", "arf-abuse.eml": "complaint ", "yahoo-cfl.eml": "complaint ",
	"jmrp-arf.eml": "complaint ", "jmrp-legacy.eml": "complaint ", "aol-arf.eml": "complaint ",
	"autoreply-exchange.eml": "auto-reply ", "autoreply-gmail-vacation.eml": "auto-reply ",
	"autoreply-xautoreply.eml": "auto-reply ", "autoreply-subject.eml": "auto-reply ",
	"dsn-delivered.eml": "unknown ", "plain.eml": "unsubscribe ",
}

// TestReturnsSamples feeds every sample report, addressed with real
// tokens for an email of its own, through Returns with a real store, and
// checks the kind and the effect: a hard bounce counts and refunds, a
// final soft one (a full mailbox) counts and refunds, a delay warning of a
// temporary cause counts against nobody and refunds nothing (the email is
// still on its way), a complaint or unsubscribe ends the subscription,
// anything else changes nothing; and the same report twice changes things
// once.
func TestReturnsSamples(t *testing.T) {
	files, err := filepath.Glob("../inbound/testdata/*.eml")
	if err != nil || len(files) != len(returnSamples) {
		t.Fatalf("%d sample files (%v), want %d", len(files), err, len(returnSamples))
	}
	fx := newFixture(t)
	fx.links = fx.links.WithBounce("bounces@mail.example.org")
	r := &Returns{Store: fx.s, Links: fx.links, Clock: fx.clk, Metrics: fx.m}
	ctx := context.Background()
	formats := map[string]bool{}
	for i, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			u, sub := fx.user(strings.TrimSuffix(name, ".eml")+"@example.net", 5)
			row := fx.queueItem(u, sub)
			if err := fx.s.DB.Model(row).Updates(map[string]any{"state": store.OutboxSent}).Error; err != nil {
				t.Fatal(err)
			}
			if _, _, err := fx.s.AddLedgerEntry(ctx, u.ID, store.LedgerCharge, -1, billing.KeyOutboxCharge(row.DedupeKey), "charge"); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ret := strings.TrimSuffix(strings.TrimPrefix(fx.links.ReturnAddress(row.ID), "bounces+"), "@mail.example.org")
			unsub := strings.TrimSuffix(strings.TrimPrefix(fx.links.UnsubscribeMailto(row.ID), "mailto:bounces+"), "@mail.example.org?subject=unsubscribe")
			raw = bytes.ReplaceAll(bytes.ReplaceAll(raw, []byte("u-UNSUBTOKEN"), []byte(unsub)), []byte("TESTTOKEN"), []byte(ret))
			out, err := r.Handle(ctx, bytes.NewReader(raw), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Kind + " " + out.Severity; got != returnSamples[name] {
				t.Fatalf("%s: %q (%+v), want %q", name, got, out, returnSamples[name])
			}
			formats[out.Format] = true
			again, err := r.Handle(ctx, bytes.NewReader(raw), nil)
			if err != nil || (out.Email != 0 && again.Action != "already handled") {
				t.Fatalf("the same report again: %+v %v", again, err)
			}
			got, err := fx.s.UserByID(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := fx.s.SubscriptionByID(ctx, sub.ID)
			effect := "none"
			switch {
			case got.HardBounces == 1 && got.Balance == 5 && s.State == store.SubActive:
				effect = "hard bounce counted, refunded"
			case got.SoftBounces == 1 && got.HardBounces == 0 && got.Balance == 5:
				effect = "soft bounce counted, refunded"
			case s.State == store.SubEnded:
				effect = "ended: " + s.EndedReason
			case got.HardBounces != 0 || got.SoftBounces != 0 || got.Balance != 4:
				effect = "something else changed"
			}
			want := map[string]string{"bounce hard": "hard bounce counted, refunded", "bounce soft": "soft bounce counted, refunded",
				"complaint ": "ended: spam complaint", "unsubscribe ": "ended: unsubscribed by email"}[returnSamples[name]]
			if want == "" {
				want = "none"
			}
			if effect != want {
				t.Fatalf("%s (sample %d): effect %q, want %q", name, i, effect, want)
			}
		})
	}
	t.Logf("%d samples in %d formats", len(files), len(formats))
}

// TestReturnsComplaintByMessageID: a feedback loop that stripped every
// address still names the email by its Message-ID, and that is enough.
func TestReturnsComplaintByMessageID(t *testing.T) {
	fx := newFixture(t)
	fx.links = fx.links.WithBounce("bounces@mail.example.org")
	u, sub := fx.user("reader@example.net", 5)
	row := fx.queueItem(u, sub)
	if err := fx.s.DB.Model(row).Updates(map[string]any{"state": store.OutboxSent,
		"message_id": "<post-1234.5680@feedmail.example.org>"}).Error; err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../inbound/testdata/arf-abuse.eml")
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.ReplaceAll(bytes.ReplaceAll(raw, []byte("u-UNSUBTOKEN"), []byte("redacted")), []byte("TESTTOKEN"), []byte("redacted"))
	r := &Returns{Store: fx.s, Links: fx.links, Clock: fx.clk}
	out, err := r.Handle(context.Background(), bytes.NewReader(raw), nil)
	if err != nil || out.Kind != "complaint" || out.Email != row.ID {
		t.Fatalf("%+v %v", out, err)
	}
	if s, _ := fx.s.SubscriptionByID(context.Background(), sub.ID); s.State != store.SubEnded {
		t.Fatalf("subscription %s", s.State)
	}
}

// TestReturnsSenderSideAlerts: a bounce by mail whose cause is our own
// sending (a blocklisting) counts against nobody, refunds the email, and
// alerts the operator (a warning and the sender-failures metric).
func TestReturnsSenderSideAlerts(t *testing.T) {
	fx := newFixture(t)
	fx.links = fx.links.WithBounce("bounces@mail.example.org")
	var logs bytes.Buffer
	r := &Returns{Store: fx.s, Links: fx.links, Clock: fx.clk, Metrics: fx.m,
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	ctx := context.Background()
	u, sub := fx.user("reader@example.net", 5)
	row := fx.queueItem(u, sub)
	if err := fx.s.DB.Model(row).Updates(map[string]any{"state": store.OutboxSent}).Error; err != nil {
		t.Fatal(err)
	}
	if _, _, err := fx.s.AddLedgerEntry(ctx, u.ID, store.LedgerCharge, -1, billing.KeyOutboxCharge(row.DedupeKey), "charge"); err != nil {
		t.Fatal(err)
	}
	dsn := "From: MAILER-DAEMON@mx.example.net\nTo: " + fx.links.ReturnAddress(row.ID) +
		"\nSubject: Undelivered Mail Returned to Sender\nContent-Type: multipart/report; report-type=delivery-status; boundary=B\n\n" +
		"--B\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.net\n\n" +
		"Final-Recipient: rfc822; reader@example.net\nAction: failed\nStatus: 5.7.1\n" +
		"Diagnostic-Code: smtp; 554 5.7.1 Service unavailable; Client host [192.0.2.7] blocked using zen.spamhaus.org\n--B--\n"
	out, err := r.Handle(ctx, strings.NewReader(dsn), nil)
	if err != nil || out.Reason != "blocked" || out.Party != "sender" || out.Severity != "" || out.Email != row.ID {
		t.Fatalf("%+v %v", out, err)
	}
	got, err := fx.s.UserByID(ctx, u.ID)
	if err != nil || got.HardBounces != 0 || got.SoftBounces != 0 || got.Balance != 5 {
		t.Fatalf("reader after a blocklisting: hard %d soft %d balance %d (%v), want 0 0 5", got.HardBounces, got.SoftBounces, got.Balance, err)
	}
	var m dto.Metric
	if err := fx.m.SenderFailures.WithLabelValues("blocked").Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("sender failures metric %v (%v), want 1", m.GetCounter().GetValue(), err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "blocklists") {
		t.Errorf("no warning naming what to check:\n%s", logs.String())
	}
}
