package lowbalance

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

const lowSubject = "Your feedmail credits are running low"

// reader is a person with an instant subscription to a feed that posted
// once a day for the last 30 days.
type reader struct {
	t     *testing.T
	s     *store.Store
	clk   *clock.Fake
	links links.Links
	feed  *store.Feed
	u     *store.User
	sub   *store.Subscription
	posts int
}

func newReader(t *testing.T, s *store.Store, clk *clock.Fake, email string, credits int64) *reader {
	t.Helper()
	ctx := context.Background()
	signer, err := token.NewSigner([]byte("lowbalance-test-secret-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{t: t, s: s, clk: clk, links: links.New("https://fm.example", signer, "feedmail@fm.example")}
	if r.feed, _, err = s.EnsureFeed(ctx, "https://daily.example/"+email+"/feed"); err != nil {
		t.Fatal(err)
	}
	for d := 30; d >= 1; d-- {
		r.post(clk.Now().Add(-time.Duration(d) * 24 * time.Hour))
	}
	if r.u, _, err = s.EnsureUser(ctx, email); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddLedgerEntry(ctx, r.u.ID, store.LedgerGrant, credits, "seed:"+email, "test credits"); err != nil {
		t.Fatal(err)
	}
	if r.sub, err = s.Subscribe(ctx, r.u.ID, r.feed.ID, nil, true); err != nil {
		t.Fatal(err)
	}
	return r
}

// post stores an item of the feed published at pub and returns it.
func (r *reader) post(pub time.Time) store.Item {
	r.t.Helper()
	r.posts++
	it := store.Item{FeedID: r.feed.ID, Identity: fmt.Sprintf("post-%d", r.posts), Link: fmt.Sprintf("https://daily.example/%d", r.posts),
		Title: fmt.Sprintf("Post %d", r.posts), PublishedAt: &pub, SeenAt: pub, Content: "<p>today's post</p>"}
	if err := r.s.DB.Create(&it).Error; err != nil {
		r.t.Fatal(err)
	}
	return it
}

// queueToday posts today's item and queues its 1-credit instant email,
// as the fan-out does.
func (r *reader) queueToday() {
	r.t.Helper()
	now := r.clk.Now()
	it := r.post(now)
	row := &store.OutboxRow{Kind: store.KindItem, DedupeKey: fmt.Sprintf("item:%d:%d", r.sub.ID, it.ID), UserID: r.u.ID,
		SubscriptionID: &r.sub.ID, ItemID: &it.ID, Address: r.u.Email, Credits: 1, State: store.OutboxQueued,
		NextAttemptAt: now, CreatedAt: now}
	if err := r.s.DB.Create(row).Error; err != nil {
		r.t.Fatal(err)
	}
}

// count returns how many of the reader's outbox rows match where.
func (r *reader) count(where string, args ...any) int64 {
	r.t.Helper()
	var n int64
	if err := r.s.DB.Model(&store.OutboxRow{}).Where("user_id = ?", r.u.ID).Where(where, args...).Count(&n).Error; err != nil {
		r.t.Fatal(err)
	}
	return n
}

func (r *reader) user() *store.User {
	r.t.Helper()
	u, err := r.s.UserByID(context.Background(), r.u.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return u
}

// lineAfterPasses runs p until it has no line left to compute and
// returns the reader's line then; step names the moment in failures.
func (r *reader) lineAfterPasses(p *Pass, step string) int64 {
	r.t.Helper()
	for {
		n, err := p.RunOnce(context.Background())
		if err != nil {
			r.t.Fatalf("%s: %v", step, err)
		}
		if n == 0 {
			return r.user().LowLine
		}
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (r *reader) pass() *Pass {
	r.t.Helper()
	p, err := New(Config{Store: r.s, History: storedHistory(r.s, r.clk), Links: r.links, PaymentsOn: true, Clock: r.clk, Log: quiet()})
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

func (r *reader) outbox(srv *smtptest.Server) *outbox.Outbox {
	r.t.Helper()
	cfg, err := mailer.ParseSMTPURL(srv.URL())
	if err != nil {
		r.t.Fatal(err)
	}
	tr := mailer.NewSMTP(cfg)
	r.t.Cleanup(func() { _ = tr.Close() })
	ob, err := outbox.NewOutbox(outbox.OutboxConfig{Store: r.s, Transport: tr, Sender: mailer.Sender{Address: "feedmail@fm.example"},
		Links: r.links, Clock: r.clk, Owner: "w1", Lease: 5 * time.Minute, PaymentsOn: true, Log: quiet()})
	if err != nil {
		r.t.Fatal(err)
	}
	return ob
}

// spendDown runs days of a reader getting one post a day, with the
// mailer and the running-low pass as `feedmail serve` runs them, and
// returns the day the running-low notice was queued and the first day
// email was held (-1: never).
func (r *reader) spendDown(ob *outbox.Outbox, p *Pass, days int) (lowDay, heldDay int) {
	r.t.Helper()
	ctx := context.Background()
	lowDay, heldDay = -1, -1
	lows := r.count("kind = ? AND dedupe_key LIKE ?", store.KindNotice, "lowcredits:%")
	for day := range days {
		r.clk.Advance(24 * time.Hour)
		if _, err := p.RunOnce(ctx); err != nil {
			r.t.Fatal(err)
		}
		r.queueToday()
		for range 2 { // the second pass sends what the first queued
			if _, err := ob.SendDue(ctx); err != nil {
				r.t.Fatal(err)
			}
		}
		if lowDay < 0 && r.count("kind = ? AND dedupe_key LIKE ?", store.KindNotice, "lowcredits:%") > lows {
			lowDay = day
		}
		if heldDay < 0 && r.count("state = ? AND last_error = ?", store.OutboxHeld, store.HoldCredits) > 0 {
			heldDay = day
		}
	}
	return lowDay, heldDay
}

// subjects counts the wire's messages by subject.
func subjects(srv *smtptest.Server) map[string]int {
	out := map[string]int{}
	for _, m := range srv.Messages() {
		out[m.Header.Get("Subject")]++
	}
	return out
}

// TestRunningLowOnceBeforeHeldThenRearmed: a reader of a daily feed with
// 20 credits spends one a day. The pass computes their line (two weeks
// of that feed: 14 credits), and the running-low email goes out once,
// days before anything is held; buying credits arms it again.
func TestRunningLowOnceBeforeHeldThenRearmed(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newReader(t, storetest.Open(t, storetest.Options{Clock: clk}), clk, "spender@example.net", 20)
	srv, err := smtptest.Start(smtptest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ob, p := r.outbox(srv), r.pass()
	ctx := context.Background()

	if n, err := p.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("first pass computed %d lines (%v), want 1", n, err)
	}
	if u := r.user(); u.LowLine != 14 || u.LowLineDue == nil || u.LowNoticeAt != nil {
		t.Fatalf("after the first pass: line %d due %v warned %v; want 14, set, nil", u.LowLine, u.LowLineDue, u.LowNoticeAt)
	}
	lowDay, heldDay := r.spendDown(ob, p, 24)
	t.Logf("running-low notice on day %d, first email held on day %d", lowDay, heldDay)
	if lowDay < 0 || heldDay < 0 || lowDay >= heldDay {
		t.Fatalf("running-low notice on day %d, first email held on day %d: want the notice first", lowDay, heldDay)
	}
	subj := subjects(srv)
	if subj[lowSubject] != 1 || subj["Your feedmail credits have run out"] != 1 {
		t.Fatalf("wire subjects %v: want one running-low and one run-out notice", subj)
	}
	for _, m := range srv.Messages() {
		if m.Header.Get("Subject") != lowSubject {
			continue
		}
		if !strings.Contains(string(m.Raw), "https://fm.example/credits?token=") || m.Header.Get("Message-Id") == "" {
			t.Errorf("running-low email lacks its buy link or headers:\n%s", m.Raw)
		}
	}
	// A purchase lifts the balance above the line: armed again, and the
	// next fall warns once more.
	if _, err := r.s.PostLedgerEntry(ctx, r.u.ID, store.LedgerPurchase, 30, "purchase:test", "pack"); err != nil {
		t.Fatal(err)
	}
	if u := r.user(); u.LowNoticeAt != nil {
		t.Fatalf("after a purchase to balance %d (line %d) the warning is not armed", u.Balance, u.LowLine)
	}
	before := srv.Count()
	lowDay, heldDay = r.spendDown(ob, p, 20)
	if lowDay < 0 || (heldDay >= 0 && lowDay >= heldDay) {
		t.Fatalf("after the purchase: running-low notice on day %d, held on day %d", lowDay, heldDay)
	}
	if n := subjects(srv)[lowSubject]; n != 2 || srv.Count() <= before {
		t.Errorf("running-low emails %d, want 2 (one per fall)", n)
	}
	if n := r.count("kind = ? AND dedupe_key LIKE ?", store.KindNotice, "lowcredits:%"); n != 2 {
		t.Errorf("%d running-low rows, want 2", n)
	}
}

// TestRunningLowExactlyOnceAcrossProcesses: two processes (two stores on
// one database) check the same readers at once, both through the pass
// and after charges; each reader below the line gets one notice.
func TestRunningLowExactlyOnceAcrossProcesses(t *testing.T) {
	clk := clock.NewFake(t0)
	dsn := storetest.FreshDSN(t, storetest.URL())
	a := storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk})
	b := storetest.OpenDSN(t, dsn, storetest.Options{Clock: clk, NoMigrate: true})
	var readers []*reader
	var ids []int64
	for i := range 6 {
		r := newReader(t, a, clk, fmt.Sprintf("r%d@example.net", i), 5) // line 14: below it
		readers, ids = append(readers, r), append(ids, r.u.ID)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for _, s := range []*store.Store{a, b} {
		p, err := New(Config{Store: s, History: storedHistory(s, clk), Links: readers[0].links, Clock: clk, Log: quiet(), Batch: 2})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for {
				n, err := p.RunOnce(ctx)
				if err != nil || n == 0 {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			_, err := s.WarnRunningLow(ctx, ids, func(userID, episode, balance, line int64) (string, store.Notice) {
				return fmt.Sprintf("lowcredits:%d:%d", userID, episode), store.Notice{Subject: lowSubject, Text: "low"}
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range readers {
		if u := r.user(); u.LowLine != 14 || u.LowNoticeAt == nil {
			t.Errorf("%s: line %d, warned at %v; want 14 and set", u.Email, u.LowLine, u.LowNoticeAt)
		}
		if n := r.count("kind = ? AND dedupe_key LIKE ?", store.KindNotice, "lowcredits:%"); n != 1 {
			t.Errorf("%s: %d running-low notices, want 1", r.u.Email, n)
		}
	}
}

// TestLineFollowsSubscriptions: the line is two weeks of what the reader
// is subscribed to, computed again at once when that changes: a second
// daily feed doubles it, moving both into a daily digest lowers it.
func TestLineFollowsSubscriptions(t *testing.T) {
	clk := clock.NewFake(t0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	r := newReader(t, s, clk, "many@example.net", 1000)
	other := newReader(t, s, clk, "other@example.net", 1000) // a second daily feed
	p := r.pass()
	ctx := context.Background()
	line := func(step string) int64 { t.Helper(); return r.lineAfterPasses(p, step) }
	if got := line("one daily feed"); got != 14 {
		t.Fatalf("one daily feed: line %d, want 14", got)
	}
	clk.Advance(time.Minute)
	sub2, err := s.Subscribe(ctx, r.u.ID, other.feed.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := line("two daily feeds"); got != 28 {
		t.Fatalf("two daily feeds: line %d, want 28 (computed again at once)", got)
	}
	daily, err := digest.ParseSchedule("@daily", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.SetDigest(ctx, r.u.ID, "Daily", daily)
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []int64{r.sub.ID, sub2.ID} {
		if err := s.SetSubscriptionDelivery(ctx, r.u.ID, sub, &d.ID); err != nil {
			t.Fatal(err)
		}
	}
	both := line("both in a daily digest")
	if both < 1 || both >= 28 {
		t.Fatalf("both feeds in a daily digest: line %d, want less than two weeks of instant (28)", both)
	}
	if err := s.SetSubscriptionDelivery(ctx, r.u.ID, r.sub.ID, nil); err != nil {
		t.Fatal(err)
	}
	if got := line("one back to instant"); got <= both {
		t.Fatalf("one feed back to instant: line %d, want more than with both in the digest (%d)", got, both)
	}
}

// TestLineLikeTheCharge: the line is forecast by the charge's rules: a
// feed its publisher pays for costs the reader nothing, and filters that
// leave posts out lower it.
func TestLineLikeTheCharge(t *testing.T) {
	clk := clock.NewFake(t0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	r := newReader(t, s, clk, "paid@example.net", 1000)
	other := newReader(t, s, clk, "pub@example.net", 1000)
	p := r.pass()
	ctx := context.Background()
	line := func(step string) int64 { t.Helper(); return r.lineAfterPasses(p, step) }
	if got := line("one daily feed"); got != 14 {
		t.Fatalf("one daily feed: line %d, want 14", got)
	}
	if _, err := s.SetFeedOwner(ctx, r.feed.ID, other.u.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if got := line("paid for by its publisher"); got != 0 {
		t.Fatalf("a feed its publisher pays for: line %d, want 0", got)
	}
	if _, err := s.ClearFeedOwner(ctx, r.feed.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetSubscriptionControls(ctx, r.u.ID, r.sub.ID, store.Controls{Include: ptr("nothing-matches-this")}); err != nil {
		t.Fatal(err)
	}
	if got := line("filtered to nothing"); got != 0 {
		t.Fatalf("a filter no post passes: line %d, want 0", got)
	}
}

func ptr[T any](v T) *T { return &v }

// Readers whose lines are computed in the same pass must not all come due
// again in the same minute: after an upgrade or a bulk import the whole
// population would otherwise be recomputed at once, every week.
func TestLinesComputedTogetherComeDueApart(t *testing.T) {
	clk := clock.NewFake(t0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	const n = 12
	var ids []int64
	for i := range n {
		ids = append(ids, newReader(t, s, clk, fmt.Sprintf("r%d@example.net", i), 1000).u.ID)
	}
	p, err := New(Config{Store: s, History: storedHistory(s, clk), Clock: clk, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if k, err := p.RunOnce(context.Background()); err != nil || k != n {
		t.Fatalf("first pass: %d lines, %v; want %d", k, err, n)
	}
	users, err := s.UsersByIDs(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[time.Time]bool{}
	for _, u := range users {
		if u.LowLineDue == nil {
			t.Fatalf("user %d has no due time after the pass", u.ID)
		}
		d := u.LowLineDue.Sub(t0)
		// 1,000 credits at a credit a day last long: a week, less the spread.
		if d > 7*24*time.Hour || d < 5*24*time.Hour {
			t.Errorf("user %d due after %v, want within [5d, 7d]", u.ID, d)
		}
		seen[u.LowLineDue.Truncate(time.Minute)] = true
	}
	if len(seen) < n*3/4 {
		t.Errorf("%d readers computed together come due in %d distinct minutes, want at least %d", n, len(seen), n*3/4)
	}
}
