package outbox

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/postfixtest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/mailer"
)

// TestReturnsFromPostfix closes the loop with a real MTA: the outbox sends
// instant emails through Debian's Postfix with VERP envelope senders;
// Postfix accepts them, the recipients' server refuses them (user unknown,
// mailbox full, try later, a blocklisting of our sending host) or
// Postfix's own local delivery finds no such user, and Postfix writes its
// DSNs back to the bounces+TOKEN addresses. Each DSN, handled as
// `feedmail inbound` would with the envelope recipient Postfix gave, has
// the effect its cause calls for: a dead address hard, a full mailbox
// soft, a delay and our own blocklisting against nobody.
func TestReturnsFromPostfix(t *testing.T) {
	pf := postfixtest.Start(t, postfixtest.Options{
		BounceDomain: "bounce.test",
		RejectWith: map[string]string{
			"full@dead.test":    "552 5.2.2 Mailbox full",
			"slow@dead.test":    "450 4.2.1 Try again later",
			"blocked@dead.test": "554 5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org",
		},
		DelayWarning: time.Second,
	})
	fx := newFixture(t)
	fx.links = fx.links.WithBounce("bounces@bounce.test")
	cases := []struct{ to, want, effect string }{
		{"nobody@dead.test", "bounce hard unknown-user", "hard"},
		{"someone@nouser.test", "bounce hard unknown-user", "hard"},
		{"full@dead.test", "bounce soft mailbox-full", "soft"},
		{"slow@dead.test", "bounce  temporary", "none"},
		{"blocked@dead.test", "bounce  blocked", "none"},
	}
	users := map[string]*store.User{}
	for _, c := range cases {
		u, sub := fx.user(c.to, 5)
		users[c.to] = u
		fx.queueItem(u, sub)
	}
	cfg, err := mailer.ParseSMTPURL(pf.URL())
	if err != nil {
		t.Fatal(err)
	}
	tr := mailer.NewSMTP(cfg)
	t.Cleanup(func() { _ = tr.Close() })
	ob := fx.outbox(tr, "w1")
	if n := fx.pass(ob); n != len(cases) {
		t.Fatalf("sent %d, want %d", n, len(cases))
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return pf.Bounces().Count() >= len(cases) },
		"a DSN for each email back at its VERP address")
	r := &Returns{Store: fx.s, Links: fx.links, Clock: fx.clk, Metrics: fx.m}
	ctx := context.Background()
	seen := map[string]string{}
	for _, m := range pf.Bounces().Messages() {
		if m.From != "" {
			t.Errorf("a DSN came from <%s>, want the null sender", m.From)
		}
		out, err := r.Handle(ctx, bytes.NewReader(m.Raw), m.To)
		if err != nil {
			t.Fatal(err)
		}
		if out.Email == 0 {
			t.Fatalf("DSN to %v names no email: %+v\n%s", m.To, out, m.Raw)
		}
		seen[out.Recipient] = out.Kind + " " + out.Severity + " " + out.Reason
		t.Logf("%s: %s %s %s (%s) %s", out.Recipient, out.Kind, out.Severity, out.Status, out.Format, out.Action)
	}
	for _, c := range cases {
		if seen[c.to] != c.want {
			t.Errorf("%s: %q, want %q", c.to, seen[c.to], c.want)
		}
		u, err := fx.s.UserByID(ctx, users[c.to].ID)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{"hard": u.HardBounces == 1 && u.SoftBounces == 0, "soft": u.SoftBounces == 1 && u.HardBounces == 0,
			"none": u.HardBounces == 0 && u.SoftBounces == 0}
		if !got[c.effect] {
			t.Errorf("%s: hard %d soft %d, want one %s bounce", c.to, u.HardBounces, u.SoftBounces, c.effect)
		}
	}
	t.Logf("Postfix %s: %d DSNs handled", pf.Version(), pf.Bounces().Count())
}
