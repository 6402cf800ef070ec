package outbox

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	netmail "net/mail"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

// t0 is where the fake clocks of these tests start.
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// fixture is a store with one feed, a fake clock, links and metrics.
type fixture struct {
	t     *testing.T
	s     *store.Store
	clk   *clock.Fake
	links links.Links
	m     *metrics.Metrics
	feed  *store.Feed
	items int // items created so far
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := clock.NewFake(t0)
	return newFixtureOn(t, storetest.Open(t, storetest.Options{Clock: clk}), clk)
}

func newFixtureOn(t *testing.T, s *store.Store, clk *clock.Fake) *fixture {
	t.Helper()
	signer, err := token.NewSigner([]byte("outbox-test-secret-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := s.EnsureFeed(context.Background(), "https://blog.example.org/feed.xml")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Model(f).Updates(map[string]any{"title": "Example Blog", "site_url": "https://blog.example.org/"}).Error; err != nil {
		t.Fatal(err)
	}
	f.Title, f.SiteURL = "Example Blog", "https://blog.example.org/"
	return &fixture{t: t, s: s, clk: clk, m: metrics.New(), feed: f,
		links: links.New("https://feedmail.example.com", signer, "feedmail@example.com")}
}

// user creates a person with a confirmed instant subscription to the feed
// and credits.
func (fx *fixture) user(email string, credits int64) (*store.User, *store.Subscription) {
	fx.t.Helper()
	ctx := context.Background()
	u, _, err := fx.s.EnsureUser(ctx, email)
	if err != nil {
		fx.t.Fatal(err)
	}
	if credits > 0 {
		if _, _, err := fx.s.AddLedgerEntry(ctx, u.ID, store.LedgerGrant, credits, "seed:"+email, "test credits"); err != nil {
			fx.t.Fatal(err)
		}
	}
	sub, err := fx.s.Subscribe(ctx, u.ID, fx.feed.ID, nil, true)
	if err != nil {
		fx.t.Fatal(err)
	}
	return u, sub
}

// queueItem adds a new item to the feed and queues its instant email for
// sub, as the new-item pipeline does: kind "item", 1 credit, dedupe key
// "item:<sub>:<item>".
func (fx *fixture) queueItem(u *store.User, sub *store.Subscription) *store.OutboxRow {
	fx.t.Helper()
	fx.items++
	now := fx.clk.Now()
	pub := now.Add(-time.Hour)
	it := store.Item{FeedID: fx.feed.ID, Identity: fmt.Sprintf("post-%d", fx.items), Link: fmt.Sprintf("/posts/%d", fx.items),
		Title: fmt.Sprintf("Post number %d", fx.items), Author: "Ann Author", PublishedAt: &pub, SeenAt: now,
		Content: fmt.Sprintf(`<p>Body of post %d with <a href="/about">a relative link</a>.</p><script>alert(1)</script>`, fx.items)}
	if err := fx.s.DB.Create(&it).Error; err != nil {
		fx.t.Fatal(err)
	}
	row := &store.OutboxRow{Kind: store.KindItem, DedupeKey: fmt.Sprintf("item:%d:%d", sub.ID, it.ID), UserID: u.ID,
		SubscriptionID: &sub.ID, ItemID: &it.ID, Address: u.Email, Credits: 1, State: store.OutboxQueued,
		NextAttemptAt: now, CreatedAt: now}
	if err := fx.s.DB.Create(row).Error; err != nil {
		fx.t.Fatal(err)
	}
	return row
}

// outbox builds a worker on tr.
func (fx *fixture) outbox(tr mailer.Transport, owner string, mod ...func(*OutboxConfig)) *Outbox {
	fx.t.Helper()
	cfg := OutboxConfig{Store: fx.s, Transport: tr, Sender: mailer.Sender{Address: "feedmail@example.com"}, Links: fx.links,
		Clock: fx.clk, Metrics: fx.m, Owner: owner, Lease: 5 * time.Minute}
	for _, f := range mod {
		f(&cfg)
	}
	o, err := NewOutbox(cfg)
	if err != nil {
		fx.t.Fatal(err)
	}
	return o
}

// pass runs one SendDue and fails the test on an error.
func (fx *fixture) pass(o *Outbox) int {
	fx.t.Helper()
	n, err := o.SendDue(context.Background())
	if err != nil {
		fx.t.Fatalf("SendDue: %v", err)
	}
	return n
}

// row reloads an outbox row.
func (fx *fixture) row(id int64) *store.OutboxRow {
	fx.t.Helper()
	r, err := fx.s.OutboxByID(context.Background(), id)
	if err != nil {
		fx.t.Fatal(err)
	}
	return r
}

func (fx *fixture) balance(u *store.User) int64 {
	fx.t.Helper()
	b, err := fx.s.Balance(context.Background(), u.ID)
	if err != nil {
		fx.t.Fatal(err)
	}
	return b
}

// entries counts u's ledger entries by kind, and checks the cached balance
// equals their sum and never went below zero.
func (fx *fixture) entries(u *store.User) map[string]int {
	fx.t.Helper()
	es, err := fx.s.LedgerOf(context.Background(), u.ID, 0)
	if err != nil {
		fx.t.Fatal(err)
	}
	out := map[string]int{}
	var sum int64
	for _, e := range es {
		out[e.Kind]++
		sum += e.Amount
		if e.BalanceAfter < 0 {
			fx.t.Errorf("entry %d balance_after %d", e.ID, e.BalanceAfter)
		}
	}
	if b := fx.balance(u); b != sum {
		fx.t.Errorf("balance %d != sum of entries %d", b, sum)
	}
	return out
}

// counter reads feedmail_emails_total{kind,result}.
func (fx *fixture) counter(kind, result string) float64 {
	var m dto.Metric
	if err := fx.m.Emails.WithLabelValues(kind, result).Write(&m); err != nil {
		fx.t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// smtpTo returns an SMTP transport to srv with extra URL parameters.
func smtpTo(t *testing.T, srv *smtptest.Server, params string) *mailer.SMTPTransport {
	t.Helper()
	u := srv.URL()
	if params != "" {
		u += "&" + params
	}
	cfg, err := mailer.ParseSMTPURL(u)
	if err != nil {
		t.Fatal(err)
	}
	tr := mailer.NewSMTP(cfg)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// byMessageID counts accepted messages per Message-ID.
func byMessageID(srv *smtptest.Server) map[string]int {
	out := map[string]int{}
	for _, m := range srv.Messages() {
		out[m.Header.Get("Message-Id")]++
	}
	return out
}

// duplicates is the number of extra copies on the wire.
func duplicates(counts map[string]int) int {
	d := 0
	for _, n := range counts {
		d += n - 1
	}
	return d
}

// hasAll reports whether s contains every one of subs.
func hasAll(s string, subs ...string) string {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return x
		}
	}
	return ""
}

// parsed is a rendered message taken apart again: its header and its
// decoded text and HTML parts.
type parsed struct {
	header     netmail.Header
	text, html string
}

// get returns a header value with RFC 2047 words decoded.
func (p parsed) get(name string) string {
	v, err := new(mime.WordDecoder).DecodeHeader(p.header.Get(name))
	if err != nil {
		return p.header.Get(name)
	}
	return v
}

// renderParse renders m and takes it apart.
func renderParse(t testing.TB, m *mail.Msg) parsed {
	t.Helper()
	raw, err := mailer.Render(m)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parse message: %v\n%s", err, raw)
	}
	p := parsed{header: msg.Header}
	p.text, p.html = testutil.MailParts(t, raw)
	return p
}
