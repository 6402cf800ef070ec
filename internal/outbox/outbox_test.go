package outbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/mailer"
)

func TestOutboxSendsInstantEmails(t *testing.T) {
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{})
	u, sub := fx.user("reader@example.net", 10)
	var rows []*store.OutboxRow
	for range 3 {
		rows = append(rows, fx.queueItem(u, sub))
	}
	ob := fx.outbox(smtpTo(t, srv, "pool=2"), "w1")
	if n := fx.pass(ob); n != 3 {
		t.Fatalf("claimed %d, want 3", n)
	}
	msgs := srv.Messages()
	if len(msgs) != 3 {
		t.Fatalf("%d messages on the wire, want 3", len(msgs))
	}
	ids := byMessageID(srv)
	for _, r := range rows {
		want := fmt.Sprintf("<item-%d-%d@example.com>", sub.ID, *r.ItemID)
		if ids[want] != 1 {
			t.Errorf("Message-ID %s seen %d times; all: %v", want, ids[want], ids)
		}
		got := fx.row(r.ID)
		if got.State != store.OutboxSent || got.MessageID != want || got.SentAt == nil || got.LeaseOwner != "" {
			t.Errorf("row %d: state %s message_id %q sent_at %v", r.ID, got.State, got.MessageID, got.SentAt)
		}
		if _, err := fx.s.LedgerEntryByKey(context.Background(), billing.KeyOutboxCharge(fmt.Sprintf("item:%d:%d", sub.ID, *r.ItemID))); err != nil {
			t.Errorf("charge of row %d: %v", r.ID, err)
		}
	}
	m := msgs[0]
	h := m.Header
	checks := map[string]string{
		"List-Id":               fmt.Sprintf("<feed-%d.example.com>", fx.feed.ID),
		"List-Unsubscribe":      "<https://feedmail.example.com/unsubscribe/",
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
		"From":                  `"Example Blog via feedmail" <feedmail@example.com>`,
		"To":                    "<reader@example.net>",
		"Content-Type":          "multipart/alternative",
		"Auto-Submitted":        "auto-generated",
		"Subject":               "Post number",
	}
	for k, want := range checks {
		if got := h.Get(k); !strings.Contains(got, want) {
			t.Errorf("%s = %q, want it to contain %q", k, got, want)
		}
	}
	if lu := h.Get("List-Unsubscribe"); !strings.HasPrefix(lu, "<http") || strings.Contains(lu, "mailto:") {
		t.Errorf("List-Unsubscribe = %q, want the one-click URL only (no mailto: without a bounce address)", lu)
	}
	if m.From != "feedmail@example.com" {
		t.Errorf("envelope sender %q, want FEEDMAIL_FROM without a bounce address", m.From)
	}
	raw := string(m.Raw)
	text, html := strings.Index(raw, "Content-Type: text/plain"), strings.Index(raw, "Content-Type: text/html")
	if text < 0 || html < 0 || text > html {
		t.Errorf("want a text part then an HTML part (text at %d, html at %d)", text, html)
	}
	if strings.Contains(raw, "<script") || strings.Contains(raw, "alert(1)") {
		t.Error("script from the feed reached the email")
	}
	if miss := hasAll(raw, "https://blog.example.org/about", "https://feedmail.example.com/account/"); miss != "" {
		t.Errorf("body lacks %q", miss)
	}
	if b := fx.balance(u); b != 7 {
		t.Errorf("balance %d, want 7", b)
	}
	if e := fx.entries(u); e[store.LedgerCharge] != 3 {
		t.Errorf("entries %v, want 3 charges", e)
	}
	if fx.counter(store.KindItem, "sent") != 3 {
		t.Errorf("sent counter %v", fx.counter(store.KindItem, "sent"))
	}
	// Nothing left: a second pass sends nothing.
	if n := fx.pass(ob); n != 0 || srv.Count() != 3 {
		t.Errorf("second pass claimed %d, wire has %d", n, srv.Count())
	}
}

func TestOutboxSMTPFaults(t *testing.T) {
	const bad = "victim@example.net"
	cases := []struct {
		name   string
		opts   smtptest.Options
		params string
		// after the first pass
		wantState    string
		wantAttempts int
		wantRefund   bool
		wantBounces  int
		// sent on the first pass (of 4 queued: 3 to good addresses, 1 to bad)
		wantFirst int
	}{
		{name: "421 mid-session", opts: smtptest.Options{Reply421After: 2}, params: "pool=1",
			wantState: store.OutboxSent, wantFirst: 4},
		{name: "450 mailbox busy", opts: smtptest.Options{TempFail: []string{bad}}, params: "pool=1",
			wantState: store.OutboxQueued, wantAttempts: 1, wantFirst: 3},
		{name: "550 no such user", opts: smtptest.Options{PermFail: []string{bad}}, params: "pool=1",
			wantState: store.OutboxFailed, wantAttempts: 1, wantRefund: true, wantBounces: 1, wantFirst: 3},
		{name: "connection dropped in DATA", opts: smtptest.Options{DropDuringData: []string{bad}}, params: "pool=1",
			wantState: store.OutboxQueued, wantAttempts: 1, wantFirst: 3},
		{name: "reply never comes", opts: smtptest.Options{Stall: []string{bad}}, params: "pool=1&timeout=300ms",
			wantState: store.OutboxQueued, wantAttempts: 1, wantFirst: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fx := newFixture(t)
			faulty := smtptest.StartT(t, c.opts)
			healthy := smtptest.StartT(t, smtptest.Options{})
			tr := &smtptest.Switch{}
			tr.Set(smtpTo(t, faulty, c.params))
			ob := fx.outbox(tr, "w1")
			var users []*store.User
			var rows []*store.OutboxRow
			for i := range 4 {
				email := fmt.Sprintf("reader%d@example.net", i)
				if i == 2 {
					email = bad
				}
				u, sub := fx.user(email, 5)
				users = append(users, u)
				rows = append(rows, fx.queueItem(u, sub))
			}
			victim := rows[2]
			if n := fx.pass(ob); n != 4 {
				t.Fatalf("claimed %d", n)
			}
			sent := 0
			for _, r := range rows {
				if fx.row(r.ID).State == store.OutboxSent {
					sent++
				}
			}
			// 421 "too many messages": a rate limit, the sender's problem.
			// One message (whichever met the hang-up) waits, with no
			// attempt counted, for the pause of its destination.
			if c.opts.Reply421After > 0 {
				if faulty.Stats().Replied421 == 0 {
					t.Fatal("the server never said 421")
				}
				if sent != 3 {
					t.Fatalf("%d sent on the first pass, want 3 and one retry", sent)
				}
				for _, r := range rows {
					if got := fx.row(r.ID); got.State == store.OutboxQueued {
						victim = r
						if got.Attempts != 0 || !got.NextAttemptAt.Equal(fx.clk.Now().Add(DestinationPauseBase)) {
							t.Errorf("421 row: attempts %d next %v", got.Attempts, got.NextAttemptAt)
						}
					}
				}
			} else if sent != c.wantFirst {
				t.Errorf("%d sent on the first pass, want %d", sent, c.wantFirst)
			}
			vu := users[2]
			for i, r := range rows {
				if r.ID == victim.ID {
					vu = users[i]
				}
			}
			got := fx.row(victim.ID)
			if c.opts.Reply421After == 0 {
				if got.State != c.wantState || got.Attempts != c.wantAttempts {
					t.Errorf("victim: state %s attempts %d (%s), want %s %d", got.State, got.Attempts, got.LastError, c.wantState, c.wantAttempts)
				}
				if got.State == store.OutboxQueued && !got.NextAttemptAt.Equal(fx.clk.Now().Add(RetryBase)) {
					t.Errorf("retry due %v, want in %v", got.NextAttemptAt, RetryBase)
				}
			}
			e := fx.entries(vu)
			if (e[store.LedgerRefund] == 1) != c.wantRefund || e[store.LedgerCharge] != 1 {
				t.Errorf("victim's ledger %v: want 1 charge, refund %v", e, c.wantRefund)
			}
			if c.wantRefund && fx.balance(vu) != 5 {
				t.Errorf("balance %d after refund, want 5", fx.balance(vu))
			}
			if u, _ := fx.s.UserByID(context.Background(), vu.ID); u.HardBounces != c.wantBounces {
				t.Errorf("hard_bounces %d, want %d", u.HardBounces, c.wantBounces)
			}
			// Temporary faults: once the server behaves, the retry delivers
			// it, exactly once and without a second charge.
			if got.State == store.OutboxQueued && c.opts.Reply421After == 0 {
				tr.Set(smtpTo(t, healthy, ""))
			}
			if c.opts.Reply421After > 0 {
				fx.clk.Advance(DestinationPauseBase)
			} else {
				fx.clk.Advance(RetryBase)
			}
			fx.pass(ob)
			if c.wantState == store.OutboxFailed {
				if fx.row(victim.ID).State != store.OutboxFailed {
					t.Error("a failed row came back")
				}
				return
			}
			if st := fx.row(victim.ID); st.State != store.OutboxSent {
				t.Fatalf("after the retry: %s (%s)", st.State, st.LastError)
			}
			all := byMessageID(faulty)
			for id, n := range byMessageID(healthy) {
				all[id] += n
			}
			if len(all) != 4 || duplicates(all) != 0 {
				t.Errorf("on the wire: %v, want 4 distinct messages once each", all)
			}
			if e := fx.entries(vu); e[store.LedgerCharge] != 1 || e[store.LedgerRefund] != 0 {
				t.Errorf("victim's ledger after delivery %v", e)
			}
		})
	}
}

func TestOutboxTemporaryFailuresGiveUpAfterThreeDays(t *testing.T) {
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{TempFail: []string{"busy@example.net"}})
	u, sub := fx.user("busy@example.net", 3)
	row := fx.queueItem(u, sub)
	ob := fx.outbox(smtpTo(t, srv, "pool=1"), "w1")
	start := fx.clk.Now()
	attempts := 0
	for fx.row(row.ID).State == store.OutboxQueued {
		if attempts > 40 {
			t.Fatal("never gave up")
		}
		fx.clk.Set(fx.row(row.ID).NextAttemptAt)
		fx.pass(ob)
		attempts++
	}
	got := fx.row(row.ID)
	if got.State != store.OutboxFailed || !strings.Contains(got.LastError, "gave up") {
		t.Errorf("final: %s %q", got.State, got.LastError)
	}
	if elapsed := fx.clk.Now().Sub(start); elapsed != DefaultRetryFor {
		t.Errorf("gave up %v after the first attempt, want %v", elapsed, DefaultRetryFor)
	}
	if attempts != 21 || got.Attempts != 21 {
		t.Errorf("%d attempts (row says %d), want 21", attempts, got.Attempts)
	}
	if srv.Stats().TempFails != 21 {
		t.Errorf("server saw %d tries", srv.Stats().TempFails)
	}
	if e := fx.entries(u); e[store.LedgerCharge] != 1 || e[store.LedgerRefund] != 1 || fx.balance(u) != 3 {
		t.Errorf("ledger %v balance %d: want one charge, one refund, 3 credits", e, fx.balance(u))
	}
	if uu, _ := fx.s.UserByID(context.Background(), u.ID); uu.HardBounces != 0 {
		t.Error("4xx counted as a hard bounce")
	}
}

func TestRetryDelay(t *testing.T) {
	cases := []struct {
		attempt int
		want    time.Duration
		ok      bool
	}{
		{1, time.Minute, true},
		{2, 2 * time.Minute, true},
		{9, 256 * time.Minute, true},
		{10, 6 * time.Hour, true}, // 512 min capped
		{19, 6 * time.Hour, true},
		{20, 72*time.Hour - 511*time.Minute - 10*6*time.Hour, true}, // cut to end at 72 h
		{21, 0, false},
		{50, 0, false},
	}
	for _, c := range cases {
		d, ok := RetryDelay(c.attempt, DefaultRetryFor)
		if d != c.want || ok != c.ok {
			t.Errorf("RetryDelay(%d) = %v %v, want %v %v", c.attempt, d, ok, c.want, c.ok)
		}
	}
	var total time.Duration
	n := 0
	for a := 1; ; a++ {
		d, ok := RetryDelay(a, DefaultRetryFor)
		if !ok {
			break
		}
		total += d
		n++
	}
	if total != DefaultRetryFor || n != 20 {
		t.Errorf("%d retries over %v, want 20 over 72h", n, total)
	}
}

func TestOutboxHeldForCreditsNoticeThenGrantReleases(t *testing.T) {
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{})
	ob := fx.outbox(smtpTo(t, srv, ""), "w1", func(c *OutboxConfig) { c.PaymentsOn = true })
	ctx := context.Background()
	u, sub := fx.user("short@example.net", 2)
	var rows []*store.OutboxRow
	for range 4 {
		rows = append(rows, fx.queueItem(u, sub))
	}
	fx.pass(ob)
	states := func() (sent, held int) {
		for _, r := range rows {
			switch fx.row(r.ID).State {
			case store.OutboxSent:
				sent++
			case store.OutboxHeld:
				held++
			}
		}
		return
	}
	if s, h := states(); s != 2 || h != 2 || srv.Count() != 2 {
		t.Fatalf("sent %d held %d wire %d; want 2, 2, 2", s, h, srv.Count())
	}
	// The notice was queued in the same transaction; the next pass sends it.
	fx.pass(ob)
	if srv.Count() != 3 {
		t.Fatalf("wire %d, want the notice too", srv.Count())
	}
	notice := srv.Messages()[2]
	if !strings.Contains(notice.Header.Get("Subject"), "credits") {
		t.Errorf("notice subject %q", notice.Header.Get("Subject"))
	}
	if miss := hasAll(string(notice.Raw), "https://feedmail.example.com/credits?token=", "https://feedmail.example.com/account/"); miss != "" {
		t.Errorf("notice lacks %q", miss)
	}
	if fx.balance(u) != 0 {
		t.Errorf("the notice cost something: balance %d", fx.balance(u))
	}
	// More mail in the same shortage: held, no second notice.
	rows = append(rows, fx.queueItem(u, sub))
	fx.clk.Advance(time.Minute)
	fx.pass(ob)
	fx.pass(ob)
	if s, h := states(); s != 2 || h != 3 || srv.Count() != 3 {
		t.Fatalf("same shortage: sent %d held %d wire %d; want 2, 3, 3", s, h, srv.Count())
	}
	// Credits arrive: everything held goes out, paid.
	r, err := fx.s.PostLedgerEntry(ctx, u.ID, store.LedgerPurchase, 4, "purchase:one", "pack")
	if err != nil || r.Released != 3 {
		t.Fatalf("purchase released %d (%v), want 3", r.Released, err)
	}
	fx.pass(ob)
	if s, h := states(); s != 5 || h != 0 || srv.Count() != 6 {
		t.Fatalf("after purchase: sent %d held %d wire %d; want 5, 0, 6", s, h, srv.Count())
	}
	if b := fx.balance(u); b != 1 {
		t.Errorf("balance %d, want 1", b)
	}
	// Running out again is a new shortage: one more notice.
	for range 2 {
		rows = append(rows, fx.queueItem(u, sub))
	}
	fx.clk.Advance(time.Minute)
	fx.pass(ob)
	fx.pass(ob)
	if srv.Count() != 8 { // one item, one notice
		t.Errorf("wire %d, want 8", srv.Count())
	}
	if e := fx.entries(u); e[store.LedgerCharge] != 6 {
		t.Errorf("ledger %v, want 6 charges", e)
	}
	if dup := duplicates(byMessageID(srv)); dup != 0 {
		t.Errorf("%d duplicates", dup)
	}
	if fx.counter(store.KindItem, "held") < 3 || fx.counter(store.KindNotice, "sent") != 2 {
		t.Errorf("held counter %v, notice sent counter %v", fx.counter(store.KindItem, "held"), fx.counter(store.KindNotice, "sent"))
	}
}

func TestOutboxHeldMailExpiresAfter30Days(t *testing.T) {
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{})
	ob := fx.outbox(smtpTo(t, srv, ""), "w1")
	ctx := context.Background()
	u, sub := fx.user("broke@example.net", 0)
	row := fx.queueItem(u, sub)
	fx.pass(ob) // held, notice queued
	fx.pass(ob) // notice sent
	if fx.row(row.ID).State != store.OutboxHeld || srv.Count() != 1 {
		t.Fatalf("state %s wire %d", fx.row(row.ID).State, srv.Count())
	}
	fx.clk.Set(row.CreatedAt.Add(30*24*time.Hour - time.Minute))
	fx.pass(ob)
	if got := fx.row(row.ID).State; got != store.OutboxHeld {
		t.Fatalf("a minute before 30 days: %s", got)
	}
	fx.clk.Advance(time.Minute)
	fx.pass(ob)
	if got := fx.row(row.ID).State; got != store.OutboxExpired {
		t.Fatalf("at 30 days: %s", got)
	}
	if fx.counter(store.KindItem, "expired") != 1 {
		t.Errorf("expired counter %v", fx.counter(store.KindItem, "expired"))
	}
	r, err := fx.s.PostLedgerEntry(ctx, u.ID, store.LedgerGrant, 5, "late-grant", "")
	if err != nil || r.Released != 0 {
		t.Fatalf("grant after expiry released %d (%v)", r.Released, err)
	}
	fx.pass(ob)
	if srv.Count() != 1 || fx.balance(u) != 5 {
		t.Errorf("expired mail went out after all: wire %d balance %d", srv.Count(), fx.balance(u))
	}
}

func TestOutboxBouncingAddress(t *testing.T) {
	const gone = "gone@example.net"
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{PermFail: []string{gone}})
	ob := fx.outbox(smtpTo(t, srv, "pool=1"), "w1")
	ctx := context.Background()
	u, sub := fx.user(gone, 10)
	for i := range 3 {
		r := fx.queueItem(u, sub)
		fx.pass(ob)
		if got := fx.row(r.ID); got.State != store.OutboxFailed || !strings.Contains(got.LastError, "550") {
			t.Fatalf("bounce %d: %s %q", i, got.State, got.LastError)
		}
	}
	uu, _ := fx.s.UserByID(ctx, u.ID)
	if uu.HardBounces != 3 || uu.BouncingSince == nil {
		t.Fatalf("after 3 bounces: hard_bounces %d bouncing_since %v", uu.HardBounces, uu.BouncingSince)
	}
	if fx.balance(u) != 10 {
		t.Errorf("balance %d, want 10 (every bounce refunded)", fx.balance(u))
	}
	// New paid mail to the bouncing address is held, never attempted, and
	// a grant does not release it.
	tries := srv.Stats().PermFails
	held := fx.queueItem(u, sub)
	fx.pass(ob)
	if got := fx.row(held.ID); got.State != store.OutboxHeld || got.LastError != store.HoldBouncing {
		t.Fatalf("mail to a bouncing address: %s %q", got.State, got.LastError)
	}
	if srv.Stats().PermFails != tries {
		t.Error("mail to a bouncing address was attempted")
	}
	if r, _ := fx.s.PostLedgerEntry(ctx, u.ID, store.LedgerGrant, 1, "g1", ""); r.Released != 0 {
		t.Error("a grant released mail held for a bouncing address")
	}
	if e := fx.entries(u); e[store.LedgerCharge] != 3 || e[store.LedgerRefund] != 3 {
		t.Errorf("ledger %v: the held row must not be charged", e)
	}
	// A fresh confirmation clears the mark and releases the mail.
	if n, err := fx.s.ClearBouncing(ctx, u.ID); err != nil || n != 1 {
		t.Fatalf("ClearBouncing released %d, %v", n, err)
	}
	if got := fx.row(held.ID); got.State != store.OutboxQueued {
		t.Errorf("after clearing: %s", got.State)
	}
}

func TestOutboxMaildir(t *testing.T) {
	fx := newFixture(t)
	dir := filepath.Join(t.TempDir(), "mail")
	md, err := mailer.NewMaildir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ob := fx.outbox(md, "w1")
	u, sub := fx.user("local@example.net", 5)
	a, b := fx.queueItem(u, sub), fx.queueItem(u, sub)
	if n := fx.pass(ob); n != 2 {
		t.Fatalf("claimed %d", n)
	}
	files, err := os.ReadDir(filepath.Join(dir, "new"))
	if err != nil || len(files) != 2 {
		t.Fatalf("%d files in new/ (%v), want 2", len(files), err)
	}
	var all string
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, "new", f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		all += string(data)
	}
	for _, r := range []*store.OutboxRow{a, b} {
		want := fmt.Sprintf("<item-%d-%d@example.com>", sub.ID, *r.ItemID)
		if !strings.Contains(all, want) {
			t.Errorf("maildir lacks %s", want)
		}
		if fx.row(r.ID).State != store.OutboxSent {
			t.Errorf("row %d not sent", r.ID)
		}
	}
	if fx.balance(u) != 3 {
		t.Errorf("balance %d, want 3", fx.balance(u))
	}
}

func TestOutboxCancelledAndUnknownKinds(t *testing.T) {
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{})
	ctx := context.Background()
	u, sub := fx.user("bye@example.net", 5)
	row := fx.queueItem(u, sub)
	if _, err := fx.s.EndSubscription(ctx, sub.ID, "unsubscribed"); err != nil {
		t.Fatal(err)
	}
	// A kind this process has no renderer for (digests are built in): a
	// newer release's, say.
	const later = "later"
	issue := int64(7)
	digestRow := &store.OutboxRow{Kind: later, DedupeKey: "later:7", UserID: u.ID, IssueID: &issue,
		Address: u.Email, Credits: 2, State: store.OutboxQueued, NextAttemptAt: fx.clk.Now(), CreatedAt: fx.clk.Now()}
	if err := fx.s.DB.Create(digestRow).Error; err != nil {
		t.Fatal(err)
	}
	plain := fx.outbox(smtpTo(t, srv, ""), "w1")
	fx.pass(plain)
	if got := fx.row(row.ID); got.State != store.OutboxFailed || !strings.HasPrefix(got.LastError, "cancelled") {
		t.Errorf("mail for an ended subscription: %s %q", got.State, got.LastError)
	}
	if got := fx.row(digestRow.ID); got.State != store.OutboxQueued || got.Attempts != 1 {
		t.Errorf("unknown kind: %s attempts %d, want a retry", got.State, got.Attempts)
	}
	if srv.Count() != 0 || fx.balance(u) != 5 {
		t.Errorf("wire %d balance %d: nothing should be sent or charged", srv.Count(), fx.balance(u))
	}
	// A process that knows the kind sends it, charging its credits.
	withDigest := fx.outbox(smtpTo(t, srv, ""), "w2", func(c *OutboxConfig) {
		c.Renderers = map[string]Renderer{later: func(_ context.Context, r *store.OutboxRow) (*mail.Msg, error) {
			return c.Sender.Notice(mailer.NoticeEmail{To: r.Address, Subject: "Your digest", Text: "items", Date: fx.clk.Now(),
				MessageID: c.Sender.MessageID(fmt.Sprintf("digest.%d", *r.IssueID))})
		}}
	})
	fx.clk.Advance(RetryBase)
	fx.pass(withDigest)
	if got := fx.row(digestRow.ID); got.State != store.OutboxSent {
		t.Errorf("digest row: %s %q", got.State, got.LastError)
	}
	if fx.balance(u) != 3 || srv.Count() != 1 {
		t.Errorf("balance %d wire %d, want 3 and 1", fx.balance(u), srv.Count())
	}
	// Renderer errors: nothing to send ends the row, a permanent error
	// fails it, anything else is retried; nothing is charged.
	for i, c := range []struct {
		err       error
		wantState string
	}{
		{fmt.Errorf("assemble: %w", mailer.ErrEmptyDigest), store.OutboxFailed},
		{fmt.Errorf("%w: broken template", mailer.ErrPermanent), store.OutboxFailed},
		{fmt.Errorf("issue 9: %w", store.ErrNotFound), store.OutboxFailed},
		{errors.New("database hiccup"), store.OutboxQueued},
	} {
		failing := fx.outbox(smtpTo(t, srv, ""), fmt.Sprint("f", i), func(cfg *OutboxConfig) {
			cfg.Renderers = map[string]Renderer{store.KindDigest: func(context.Context, *store.OutboxRow) (*mail.Msg, error) { return nil, c.err }}
		})
		issue := int64(100 + i)
		r := &store.OutboxRow{Kind: store.KindDigest, DedupeKey: fmt.Sprint("digest:", issue), UserID: u.ID, IssueID: &issue,
			Address: u.Email, Credits: 2, State: store.OutboxQueued, NextAttemptAt: fx.clk.Now(), CreatedAt: fx.clk.Now()}
		if err := fx.s.DB.Create(r).Error; err != nil {
			t.Fatal(err)
		}
		fx.pass(failing)
		got := fx.row(r.ID)
		if got.State != c.wantState || got.Attempts != 1 || !strings.Contains(got.LastError, c.err.Error()) {
			t.Errorf("renderer error %q: %s attempts %d %q", c.err, got.State, got.Attempts, got.LastError)
		}
		if errors.Is(c.err, mailer.ErrEmptyDigest) && !strings.HasPrefix(got.LastError, "cancelled") {
			t.Errorf("empty digest: %q, want cancelled", got.LastError)
		}
	}
	if fx.balance(u) != 3 || srv.Count() != 1 {
		t.Errorf("balance %d wire %d, want 3 and 1", fx.balance(u), srv.Count())
	}
}

func TestOutboxRunUntilCancelled(t *testing.T) {
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{})
	ob := fx.outbox(smtpTo(t, srv, ""), "w1", func(c *OutboxConfig) { c.PollInterval, c.Workers = time.Hour, 1 })
	u, sub := fx.user("run@example.net", 5)
	fx.queueItem(u, sub) // counted by the gauge, which is read before the first pass
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ob.Run(ctx) }()
	waitCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := srv.WaitFor(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	// With an hour between looks, only Wake makes the worker look again.
	fx.queueItem(u, sub)
	ob.Wake()
	if err := srv.WaitFor(waitCtx, 2); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run returned %v after cancel, want nil", err)
	}
	var m dto.Metric
	if err := fx.m.QueueDepth.WithLabelValues("outbox").Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetGauge().GetValue(); got != 1 {
		t.Errorf("outbox queue depth %v, want 1", got)
	}
	if fx.balance(u) != 3 {
		t.Errorf("balance %d, want 3", fx.balance(u))
	}
}

// TestOutboxConcurrentWorkersShareOneBalance runs four workers (as four
// processes would) over one person's queue that their credits only partly
// cover: each email goes out at most once, exactly as many as the credits
// pay for, the rest are held, and one notice is queued.
func TestOutboxConcurrentWorkersShareOneBalance(t *testing.T) {
	const queued, credits = 40, 25
	fx := newFixture(t)
	srv := smtptest.StartT(t, smtptest.Options{})
	u, sub := fx.user("shared@example.net", credits)
	for range queued {
		fx.queueItem(u, sub)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		ob := fx.outbox(smtpTo(t, srv, "pool=2"), fmt.Sprint("w", w), func(c *OutboxConfig) { c.Batch = 7 })
		wg.Go(func() {
			for {
				n, err := ob.SendDue(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	items, notices := 0, 0
	for _, m := range srv.Messages() {
		if strings.HasPrefix(m.Header.Get("Message-Id"), "<item-") {
			items++
		} else {
			notices++
		}
	}
	if items != credits || notices != 1 || duplicates(byMessageID(srv)) != 0 {
		t.Errorf("%d item emails and %d notices on the wire (%d duplicates); want %d and 1", items, notices,
			duplicates(byMessageID(srv)), credits)
	}
	var held int64
	fx.s.DB.Model(&store.OutboxRow{}).Where("state = ? AND kind = ?", store.OutboxHeld, store.KindItem).Count(&held)
	if held != queued-credits {
		t.Errorf("%d held, want %d", held, queued-credits)
	}
	if e := fx.entries(u); e[store.LedgerCharge] != credits || fx.balance(u) != 0 {
		t.Errorf("ledger %v balance %d", e, fx.balance(u))
	}
}
