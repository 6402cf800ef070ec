package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// burstFixture is a daily feed with two paying instant readers and a
// digest reader.
type burstFixture struct {
	*pollFixture
	t   *testing.T
	ctx context.Context
	n   int // items made so far
}

func newBurstFixture(t *testing.T) *burstFixture {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	fx := &burstFixture{pollFixture: newPollFixture(t, s, clk, "https://example.com/daily", 2, 1, false), t: t, ctx: context.Background()}
	for _, u := range fx.users[:2] {
		if _, _, err := s.AddLedgerEntry(fx.ctx, u, store.LedgerGrant, 100, fmt.Sprintf("grant:test:%d", u), "test credits"); err != nil {
			t.Fatal(err)
		}
	}
	fx.claim(t, "w1")
	if _, err := s.RecordPoll(fx.ctx, "w1", fx.record([]store.NewItem{item("first", store.IgnoredFirstPoll)}, true)); err != nil {
		t.Fatal(err)
	}
	return fx
}

// poll records one poll at the fake clock's time with n new posts.
func (fx *burstFixture) poll(n int) store.PollOutcome {
	fx.t.Helper()
	var items []store.NewItem
	for range n {
		fx.n++
		items = append(items, item(fmt.Sprintf("p%d", fx.n), ""))
	}
	fx.claim(fx.t, "w1")
	out, err := fx.s.RecordPoll(fx.ctx, "w1", fx.record(items, true))
	if err != nil {
		fx.t.Fatal(err)
	}
	return out
}

// charge claims and charges every queued row, as the mailer does before
// sending, and counts the outcomes.
func (fx *burstFixture) charge(owner string) map[store.ChargeOutcome]int {
	fx.t.Helper()
	rows := claimAll(fx.t, fx.s, owner, fx.clk.Now())
	got, err := fx.s.ChargeOutbox(fx.ctx, owner, ptrs(rows), notice)
	if err != nil {
		fx.t.Fatal(err)
	}
	out := map[store.ChargeOutcome]int{}
	for _, o := range got {
		out[o]++
	}
	return out
}

// TestBurstProtectionEndToEnd: a daily feed's daily posts are charged;
// 15 posts in an hour cost an instant reader what the rule documents (the
// first, then none) and the ledger says why; the digest reader gets them
// all; a charge replayed writes nothing twice.
func TestBurstProtectionEndToEnd(t *testing.T) {
	fx := newBurstFixture(t)
	// Ten days of one post a day: all charged.
	for range 10 {
		fx.clk.Advance(24 * time.Hour)
		fx.poll(1)
	}
	if got := fx.charge("m1"); got[store.Charged] != 20 || len(got) != 1 {
		t.Fatalf("ten daily posts to two readers: %v; want 20 charged", got)
	}
	// The next day, 15 posts in an hour, one a poll.
	fx.clk.Advance(24 * time.Hour)
	for i := range 15 {
		if i > 0 {
			fx.clk.Advance(4 * time.Minute)
		}
		if out := fx.poll(1); out.Emails != 2 || out.DigestItems != 1 {
			t.Fatalf("burst post %d: %d emails, %d digest items", i, out.Emails, out.DigestItems)
		}
	}
	if n := count(t, fx.s, "items", "feed_id = ? AND burst", fx.feed.ID); n != 14 {
		t.Errorf("%d items marked burst, want 14", n)
	}
	if n := count(t, fx.s, "outbox", "kind = ? AND credits = 0 AND free_reason = ?", store.KindItem, billing.BurstReason); n != 28 {
		t.Errorf("%d free burst rows, want 28", n)
	}
	if got := fx.charge("m1"); got[store.Charged] != 2 || got[store.ChargeFree] != 28 {
		t.Fatalf("the burst: %v; want 2 charged, 28 free", got)
	}
	for _, u := range fx.users[:2] {
		if b := checkLedgerConsistent(t, fx.s, u); b != 100-11 {
			t.Errorf("user %d balance %d, want 89: the burst costs 1", u, b)
		}
		checkBurstLedger(t, fx.s, u, 14)
	}
	// Replayed (a second worker after the lease ran out): nothing new.
	fx.clk.Advance(2 * time.Minute)
	before := count(t, fx.s, "ledger_entries", "1 = 1")
	if got := fx.charge("m2"); got[store.ChargedBefore] != 22 || got[store.ChargeFree] != 28 {
		t.Errorf("replayed: %v; want 22 charged before, 28 free", got)
	}
	if after := count(t, fx.s, "ledger_entries", "1 = 1"); after != before {
		t.Errorf("replay wrote %d ledger lines", after-before)
	}
	// A post a day later is charged again.
	fx.clk.Advance(24 * time.Hour)
	fx.poll(1)
	if got := fx.charge("m3"); got[store.Charged] != 2 {
		t.Errorf("the next day's post: %v; want 2 charged", got)
	}
}

// checkBurstLedger checks that userID's ledger has want lines of 0 credits
// that say "burst: free", and that every charge line has its key's form.
func checkBurstLedger(t *testing.T, s *store.Store, userID int64, want int) {
	t.Helper()
	entries, err := s.LedgerOf(context.Background(), userID, 0)
	if err != nil {
		t.Fatal(err)
	}
	free := 0
	for _, e := range entries {
		if e.Kind != store.LedgerCharge {
			continue
		}
		if !strings.HasPrefix(e.IdempotencyKey, "charge:item:") {
			t.Errorf("charge key %q", e.IdempotencyKey)
		}
		if e.Amount == 0 {
			free++
			if !strings.HasSuffix(e.Reason, "("+billing.BurstReason+")") {
				t.Errorf("free line's reason %q does not say why", e.Reason)
			}
		}
	}
	if free != want {
		t.Errorf("user %d: %d free burst lines, want %d", userID, free, want)
	}
}

// TestBurstRateKeptPerFeed: the feed's rate is written with its new posts,
// not by a poll that finds none or re-finds the same ones.
func TestBurstRateKeptPerFeed(t *testing.T) {
	fx := newBurstFixture(t)
	f0, err := fx.s.FeedByID(fx.ctx, fx.feed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f0.RateAt != nil {
		t.Fatalf("first poll set rate_at %v: its posts are not an update", f0.RateAt)
	}
	fx.clk.Advance(time.Hour)
	fx.poll(3)
	f1, _ := fx.s.FeedByID(fx.ctx, fx.feed.ID)
	if f1.RateAt == nil || !f1.RateAt.Equal(fx.clk.Now()) || f1.RateScore != 3 || f1.RateSince == nil {
		t.Fatalf("after 3 posts: at %v score %v since %v", f1.RateAt, f1.RateScore, f1.RateSince)
	}
	// A feed's first day: its average is unknown, no post is a burst.
	if n := count(t, fx.s, "items", "feed_id = ? AND burst", fx.feed.ID); n != 0 {
		t.Errorf("%d burst items, want 0", n)
	}
	fx.clk.Advance(time.Hour)
	fx.poll(0)
	fx.claim(t, "w1")
	again := fx.record([]store.NewItem{item("p1", "")}, true) // known: inserts nothing
	if _, err := fx.s.RecordPoll(fx.ctx, "w1", again); err != nil {
		t.Fatal(err)
	}
	f2, _ := fx.s.FeedByID(fx.ctx, fx.feed.ID)
	if !f2.RateAt.Equal(*f1.RateAt) || f2.RateScore != f1.RateScore || f2.RateAllowance != f1.RateAllowance {
		t.Errorf("polls without new posts changed the rate: %+v → %+v", f1, f2)
	}
}

// TestBurstFirstDaySeededFromPublishedDates: a daily feed whose first poll
// shows ten days of one post a day bursts 15 posts in an hour within its
// first day on feedmail. Its own dates seeded its average, so the burst
// costs an instant reader 1 credit, as on any later day. A first poll
// whose dates are all identical seeds nothing.
func TestBurstFirstDaySeededFromPublishedDates(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	fx := &burstFixture{pollFixture: newPollFixture(t, s, clk, "https://example.com/daily", 2, 1, false), t: t, ctx: context.Background()}
	for _, u := range fx.users[:2] {
		if _, _, err := s.AddLedgerEntry(fx.ctx, u, store.LedgerGrant, 100, fmt.Sprintf("grant:test:%d", u), "test credits"); err != nil {
			t.Fatal(err)
		}
	}
	var first []store.NewItem
	for i := range 10 {
		it := item(fmt.Sprintf("old%d", i), store.IgnoredFirstPoll)
		d := pollT0.Add(-14*time.Hour - time.Duration(i)*24*time.Hour)
		it.PublishedAt = &d
		first = append(first, it)
	}
	future := item("future", store.IgnoredFirstPoll)
	later := pollT0.Add(48 * time.Hour)
	future.PublishedAt = &later
	fx.claim(t, "w1")
	if _, err := s.RecordPoll(fx.ctx, "w1", fx.record(append(first, future), true)); err != nil {
		t.Fatal(err)
	}
	f0, err := s.FeedByID(fx.ctx, fx.feed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f0.RateAt == nil || !f0.RateAt.Equal(pollT0.Add(-14*time.Hour)) || f0.RateScore <= 0 {
		t.Fatalf("first poll: rate_at %v score %v; want the newest past post's date and a score", f0.RateAt, f0.RateScore)
	}
	clk.Advance(6 * time.Hour)
	for i := range 15 {
		if i > 0 {
			clk.Advance(4 * time.Minute)
		}
		fx.poll(1)
	}
	if n := count(t, s, "items", "feed_id = ? AND burst", fx.feed.ID); n != 14 {
		t.Errorf("%d items marked burst on the feed's first day, want 14", n)
	}
	if got := fx.charge("m1"); got[store.Charged] != 2 || got[store.ChargeFree] != 28 {
		t.Errorf("the first-day burst: %v; want 2 charged, 28 free", got)
	}

	// Identical dates (a feed that stamps every item with its build time)
	// say nothing: no seed.
	other := newPollFixture(t, s, clk, "https://example.com/stamped", 1, 0, false)
	other.claim(t, "w1")
	if _, err := s.RecordPoll(fx.ctx, "w1", other.record([]store.NewItem{item("s1", store.IgnoredFirstPoll),
		item("s2", store.IgnoredFirstPoll), item("s3", store.IgnoredFirstPoll)}, true)); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.FeedByID(fx.ctx, other.feed.ID); f.RateAt != nil {
		t.Errorf("identical dates seeded a rate: at %v score %v", f.RateAt, f.RateScore)
	}
}
