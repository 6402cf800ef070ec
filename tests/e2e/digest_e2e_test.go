package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/poller"
)

// The digest end to end, without a browser: real feeds on the farm, the
// real poller writing digest items, the digest worker, the outbox worker
// charging credits and sending over SMTP to smtptest. A fake clock drives
// every step; nothing sleeps.

// dgStack is the set of workers on one database.
type dgStack struct {
	t      *testing.T
	ctx    context.Context
	clk    *clock.Fake
	st     *store.Store
	farm   *farm.Farm
	smtp   *smtptest.Server
	poller *poller.Poller
	digest *digest.Worker
	outbox *outbox.Outbox
}

func newDigestStack(t *testing.T) *dgStack {
	t.Helper()
	clk, st, fm, smtp, sign := newParts(t, "digest-e2e-secret-digest-e2e")
	const base, from = "http://127.0.0.1:8080", "feedmail@feedmail.test"
	lk := links.New(base, sign, from)
	w := newWorkers(t, clk, st, smtp, lk, from, "dg")
	return &dgStack{t: t, ctx: context.Background(), clk: clk, st: st, farm: fm, smtp: smtp, poller: w.poller, digest: w.digest, outbox: w.outbox}
}

// reader makes a person with credits and a digest of n farm feeds, each
// polled once (the first poll records what is there and mails nothing).
func (s *dgStack) reader(email, name, spec string, credits int64, n int) (*store.User, *store.Digest, []*farm.Feed) {
	s.t.Helper()
	u, _, err := s.st.EnsureUser(s.ctx, email)
	if err != nil {
		s.t.Fatal(err)
	}
	if credits > 0 {
		if _, _, err := s.st.GrantTrialOnce(s.ctx, u.ID, credits); err != nil {
			s.t.Fatal(err)
		}
	}
	d, _, err := digest.Set(s.ctx, s.st, u.ID, name, spec, "Europe/Berlin")
	if err != nil {
		s.t.Fatal(err)
	}
	var feeds []*farm.Feed
	for i := range n {
		f := s.farm.AddFeed(farm.Spec{Title: fmt.Sprintf("Garden journal %d", i+1), ItemCount: 3, ETag: farm.ETagStrong})
		feed, _, err := s.st.EnsureFeed(s.ctx, f.URL())
		if err != nil {
			s.t.Fatal(err)
		}
		if _, err := s.st.Subscribe(s.ctx, u.ID, feed.ID, &d.ID, true); err != nil {
			s.t.Fatal(err)
		}
		s.poll(f)
		feeds = append(feeds, f)
	}
	return u, d, feeds
}

func (s *dgStack) poll(f *farm.Feed) {
	s.t.Helper()
	feed, err := s.st.FeedByURL(s.ctx, f.URL())
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.poller.PollFeed(s.ctx, feed.ID, "e2e"); err != nil {
		s.t.Fatalf("poll %s: %v", f.URL(), err)
	}
}

// publish puts k new posts on each feed and polls it.
func (s *dgStack) publish(feeds []*farm.Feed, k int, tag string) {
	s.t.Helper()
	s.clk.Advance(time.Minute)
	for i, f := range feeds {
		var items []farm.Item
		for j := range k {
			items = append(items, farm.Item{Title: fmt.Sprintf("%s: journal %d, entry %d", tag, i+1, j+1),
				Content: "<p>The runner beans are up.</p>", Published: s.clk.Now()})
		}
		f.Publish(items...)
		s.poll(f)
	}
}

// slot moves the clock past the digest's next slot and assembles; it
// returns how many issues were queued.
func (s *dgStack) slot(digestID int64) int {
	s.t.Helper()
	d, err := s.st.DigestByID(s.ctx, digestID)
	if err != nil {
		s.t.Fatal(err)
	}
	if now := s.clk.Now(); d.NextSlotAt.After(now) {
		s.clk.Set(d.NextSlotAt)
	}
	n, err := s.digest.AssembleDue(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

// send runs outbox passes until nothing is due (a pass that holds a digest
// for credits queues the notice the next pass sends) and waits until the
// SMTP server holds want messages in all.
func (s *dgStack) send(want int) []smtptest.Message {
	s.t.Helper()
	s.drain()
	ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
	defer cancel()
	if err := s.smtp.WaitFor(ctx, want); err != nil {
		s.t.Fatal(err)
	}
	return s.smtp.Messages()
}

// drain runs outbox passes until one claims nothing.
func (s *dgStack) drain() {
	s.t.Helper()
	for range 10 {
		n, err := s.outbox.SendDue(s.ctx)
		if err != nil {
			s.t.Fatalf("outbox: %v", err)
		}
		if n == 0 {
			return
		}
	}
	s.t.Fatal("outbox still busy after 10 passes")
}

func (s *dgStack) balance(u *store.User) int64 {
	s.t.Helper()
	b, err := s.st.Balance(s.ctx, u.ID)
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

// TestDigestEndToEnd: a person with an "@every 10s" digest of 7 feeds
// gets one email holding the new posts of all 7, charged 2 credits; the
// next slot, with nothing new, sends nothing and charges nothing.
func TestDigestEndToEnd(t *testing.T) {
	s := newDigestStack(t)
	u, d, feeds := s.reader("reader@example.com", "Morning", "@every 10s", 500, 7)
	s.publish(feeds, 2, "Spring")

	if n := s.slot(d.ID); n != 1 {
		t.Fatalf("issues queued: %d, want 1", n)
	}
	msgs := s.send(1)
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if got := m.Header.Get("Subject"); !strings.HasPrefix(got, "Your Morning digest, ") || !strings.HasSuffix(got, ": 14 new posts from 7 feeds") {
		t.Errorf("Subject %q, want the issue's date between the digest's name and its summary", got)
	}
	if len(m.To) != 1 || m.To[0] != "reader@example.com" {
		t.Errorf("To %v", m.To)
	}
	text, html := testutil.MailParts(t, m.Raw)
	for i := range feeds {
		title := fmt.Sprintf("Garden journal %d", i+1)
		if !strings.Contains(text, title) || !strings.Contains(html, title) {
			t.Errorf("digest lacks feed %q", title)
		}
		for j := range 2 {
			if post := fmt.Sprintf("Spring: journal %d, entry %d", i+1, j+1); !strings.Contains(text, post) {
				t.Errorf("digest lacks post %q", post)
			}
		}
	}
	if !strings.Contains(m.Header.Get("List-Unsubscribe"), "/unsubscribe/") || m.Header.Get("List-Unsubscribe-Post") == "" {
		t.Errorf("List-Unsubscribe %q", m.Header.Get("List-Unsubscribe"))
	}
	if b := s.balance(u); b != 498 {
		t.Fatalf("balance %d after the digest, want 498 (2 credits for 7 feeds)", b)
	}

	// The next slot has nothing new: no issue, no email, no charge.
	s.clk.Advance(10 * time.Second)
	if n := s.slot(d.ID); n != 0 {
		t.Fatalf("empty slot queued %d issues", n)
	}
	s.drain()
	if c := s.smtp.Count(); c != 1 {
		t.Fatalf("%d messages after an empty slot, want still 1", c)
	}
	if b := s.balance(u); b != 498 {
		t.Fatalf("an empty slot charged: balance %d", b)
	}
}

// TestDigestOutOfCredits: out of credits, the digest waits (one free
// notice is sent); the next slot's posts join the waiting issue rather
// than making a second email; credits arriving release it, and the person
// gets one digest with everything, charged for the feeds it holds.
func TestDigestOutOfCredits(t *testing.T) {
	s := newDigestStack(t)
	u, d, feeds := s.reader("broke@example.com", "Evening", "@every 10s", 1, 11)

	s.publish(feeds[:6], 1, "First") // 6 feeds: 2 credits, balance 1
	if n := s.slot(d.ID); n != 1 {
		t.Fatalf("issues queued: %d", n)
	}
	msgs := s.send(1) // only the free notice
	if !strings.Contains(msgs[0].Header.Get("Subject"), "credits") {
		t.Fatalf("first message is %q, want the out-of-credits notice", msgs[0].Header.Get("Subject"))
	}
	if b := s.balance(u); b != 1 {
		t.Fatalf("balance %d, want 1 (nothing charged while held)", b)
	}

	s.publish(feeds[6:], 1, "Second") // 5 more feeds: 11 in all, 3 credits
	if n := s.slot(d.ID); n != 0 {
		t.Fatalf("a second issue was queued while the first waits (%d)", n)
	}
	s.drain()
	if c := s.smtp.Count(); c != 1 {
		t.Fatalf("%d messages while out of credits, want the one notice", c)
	}

	if _, _, err := s.st.AddLedgerEntry(s.ctx, u.ID, store.LedgerPurchase, 100, "purchase:e2e", "e2e"); err != nil {
		t.Fatal(err)
	}
	msgs = s.send(2)
	m := msgs[1]
	if got := m.Header.Get("Subject"); !strings.HasPrefix(got, "Your Evening digest, ") || !strings.HasSuffix(got, ": 11 new posts from 11 feeds") {
		t.Fatalf("released digest subject %q", got)
	}
	text, _ := testutil.MailParts(t, m.Raw)
	if !strings.Contains(text, "First: journal 1, entry 1") || !strings.Contains(text, "Second: journal 5, entry 1") {
		t.Errorf("released digest lacks posts of one of the slots")
	}
	if b := s.balance(u); b != 101-3 {
		t.Fatalf("balance %d, want %d (3 credits for 11 feeds)", b, 101-3)
	}
}
