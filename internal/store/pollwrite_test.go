package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// pollFixture is a feed with instant and digest subscribers.
type pollFixture struct {
	s       *store.Store
	clk     *clock.Fake
	feed    *store.Feed
	instant []int64 // subscription ids of active instant subscribers
	digest  []int64 // subscription ids of active digest subscribers
	users   []int64
}

var pollT0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// newPollFixture makes a feed with nInstant active instant subscriptions,
// nDigest active digest subscriptions, one pending and one ended
// subscription (which must never get anything), and optionally a bouncing
// instant subscriber.
func newPollFixture(t testing.TB, s *store.Store, clk *clock.Fake, url string, nInstant, nDigest int, bouncing bool) *pollFixture {
	t.Helper()
	ctx := context.Background()
	f, _, err := s.EnsureFeed(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	fx := &pollFixture{s: s, clk: clk, feed: f}
	addUser := func(tag string, i int) *store.User {
		u, _, err := s.EnsureUser(ctx, fmt.Sprintf("%s%d-%d@example.com", tag, i, f.ID))
		if err != nil {
			t.Fatal(err)
		}
		fx.users = append(fx.users, u.ID)
		return u
	}
	for i := range nInstant {
		u := addUser("inst", i)
		sub, err := s.Subscribe(ctx, u.ID, f.ID, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		fx.instant = append(fx.instant, sub.ID)
	}
	for i := range nDigest {
		u := addUser("dig", i)
		d := store.Digest{UserID: u.ID, Name: "daily", Schedule: "@daily", Timezone: "UTC", NextSlotAt: pollT0.Add(24 * time.Hour), CreatedAt: pollT0}
		if err := s.DB.Create(&d).Error; err != nil {
			t.Fatal(err)
		}
		sub, err := s.Subscribe(ctx, u.ID, f.ID, &d.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		fx.digest = append(fx.digest, sub.ID)
	}
	if bouncing {
		u := addUser("bounce", 0)
		if err := s.DB.Model(&store.User{}).Where("id = ?", u.ID).Update("bouncing_since", pollT0.Add(-time.Hour)).Error; err != nil {
			t.Fatal(err)
		}
		sub, err := s.Subscribe(ctx, u.ID, f.ID, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		fx.instant = append(fx.instant, sub.ID)
	}
	pend := addUser("pending", 0)
	if _, err := s.Subscribe(ctx, pend.ID, f.ID, nil, false); err != nil {
		t.Fatal(err)
	}
	gone := addUser("ended", 0)
	sub, err := s.Subscribe(ctx, gone.ID, f.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EndSubscription(ctx, sub.ID, "test"); err != nil {
		t.Fatal(err)
	}
	fx.feed, err = s.FeedByID(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

func (fx *pollFixture) claim(t testing.TB, owner string) {
	t.Helper()
	if _, err := fx.s.ClaimFeedForPoll(context.Background(), fx.feed.ID, owner, 2*time.Minute, fx.clk.Now()); err != nil {
		t.Fatal(err)
	}
}

func (fx *pollFixture) record(items []store.NewItem, primed bool) store.PollRecord {
	now := fx.clk.Now()
	st := store.FeedState{State: store.FeedActive, NextPollAt: now.Add(15 * time.Minute), PollReason: "default 15 min",
		ValidatorURL: fx.feed.URL, ETag: `"v2"`, LastModified: "Sun, 22 Nov 2026 11:00:00 GMT", BodyHash: "h2",
		LastPolledAt: &now, LastStatus: 200, LastSuccessAt: &now, Title: "The Feed"}
	if primed {
		st.PrimedAt = &now
	}
	return store.PollRecord{FeedID: fx.feed.ID, At: now, URL: fx.feed.URL, Status: 200, Outcome: "ok",
		Bytes: 1234, ElapsedMS: 12, Items: items, State: st}
}

func count(t testing.TB, s *store.Store, table, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.DB.Table(table).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func item(id string, rule string) store.NewItem {
	d := pollT0.Add(-time.Hour)
	return store.NewItem{Identity: "id-" + id, GUID: id, Link: "https://example.com/" + id, Title: "Post " + id,
		Content: "<p>" + id + "</p>", PublishedAt: &d, IgnoredRule: rule}
}

func TestRecordPollFirstPollMailsNothing(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 3, 2, false)
	fx.claim(t, "w1")
	items := []store.NewItem{item("a", store.IgnoredFirstPoll), item("b", store.IgnoredFirstPoll)}
	out, err := s.RecordPoll(context.Background(), "w1", fx.record(items, true))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 2 || out.NewDelivered() != 0 || out.Emails != 0 || out.DigestItems != 0 {
		t.Fatalf("outcome %+v", out)
	}
	if n := count(t, s, "outbox", "1 = 1"); n != 0 {
		t.Fatalf("first poll queued %d emails", n)
	}
	if n := count(t, s, "digest_items", "1 = 1"); n != 0 {
		t.Fatalf("first poll queued %d digest items", n)
	}
	if n := count(t, s, "items", "feed_id = ? AND ignored_rule = ?", fx.feed.ID, store.IgnoredFirstPoll); n != 2 {
		t.Fatalf("%d items recorded as first poll, want 2", n)
	}
	f, _ := s.FeedByID(context.Background(), fx.feed.ID)
	if f.PrimedAt == nil || f.LeaseOwner != "" || f.ETag != `"v2"` || f.Title != "The Feed" || !f.NextPollAt.Equal(pollT0.Add(15*time.Minute)) {
		t.Fatalf("feed state not written: %+v", f)
	}
	if n := count(t, s, "poll_log", "feed_id = ? AND status = 200 AND new_items = 0", fx.feed.ID); n != 1 {
		t.Fatalf("poll_log rows %d", n)
	}
}

func TestRecordPollFanOutAndReplay(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 3, 2, true)
	fx.claim(t, "w1")
	items := []store.NewItem{item("new", ""), item("old", "older than one year")}
	rec := fx.record(items, true)
	out, err := s.RecordPoll(ctx, "w1", rec)
	if err != nil {
		t.Fatal(err)
	}
	// 3 instant + 1 bouncing instant subscriber; the pending and the ended
	// subscriptions get nothing.
	if out.Emails != 4 || out.DigestItems != 2 || out.NewDelivered() != 1 {
		t.Fatalf("outcome %+v", out)
	}
	var rows []store.OutboxRow
	if err := s.DB.Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d outbox rows, want 4", len(rows))
	}
	held := 0
	for _, r := range rows {
		want := fmt.Sprintf("item:%d:%d", *r.SubscriptionID, *r.ItemID)
		if r.Kind != store.KindItem || r.Credits != 1 || r.DedupeKey != want || r.Address == "" {
			t.Errorf("outbox row %+v (want key %s)", r, want)
		}
		if r.State == store.OutboxHeld {
			held++
			if r.LastError != store.HoldBouncing {
				t.Errorf("held row reason %q", r.LastError)
			}
		} else if r.State != store.OutboxQueued {
			t.Errorf("row state %q", r.State)
		}
	}
	if held != 1 {
		t.Fatalf("%d held rows, want 1 (the bouncing address)", held)
	}
	if n := count(t, s, "digest_items", "feed_id = ? AND issue_id IS NULL", fx.feed.ID); n != 2 {
		t.Fatalf("digest items %d, want 2", n)
	}
	if n := count(t, s, "poll_log", "feed_id = ? AND new_items = 1", fx.feed.ID); n != 1 {
		t.Fatalf("poll_log new_items not 1")
	}

	// Replaying the same poll without the lease changes nothing.
	if _, err := s.RecordPoll(ctx, "w1", rec); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("replay without lease: %v", err)
	}
	// With the lease again (a crash after commit, the feed polled again):
	// harmless.
	fx.claim(t, "w2")
	out2, err := s.RecordPoll(ctx, "w2", rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(out2.Items) != 0 || out2.Emails != 0 || out2.DigestItems != 0 {
		t.Fatalf("replay wrote %+v", out2)
	}
	if n := count(t, s, "outbox", "1 = 1"); n != 4 {
		t.Fatalf("after replay %d outbox rows", n)
	}
	if n := count(t, s, "digest_items", "1 = 1"); n != 2 {
		t.Fatalf("after replay %d digest items", n)
	}
	if n := count(t, s, "items", "feed_id = ?", fx.feed.ID); n != 2 {
		t.Fatalf("after replay %d items", n)
	}
}

func TestRecordPollLostLeaseRollsBack(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 2, 1, false)
	fx.claim(t, "slow")
	rec := fx.record([]store.NewItem{item("x", "")}, true)
	// The slow worker's lease runs out and another worker claims the feed.
	clk.Advance(3 * time.Minute)
	fx.claim(t, "fast")
	out, err := s.RecordPoll(ctx, "slow", rec)
	if !errors.Is(err, store.ErrLeaseLost) || !out.Lost {
		t.Fatalf("lost lease: err %v, out %+v", err, out)
	}
	for _, tbl := range []string{"items", "outbox", "digest_items", "poll_log"} {
		if n := count(t, s, tbl, "1 = 1"); n != 0 {
			t.Errorf("%s has %d rows after a lost lease", tbl, n)
		}
	}
	f, _ := s.FeedByID(ctx, fx.feed.ID)
	if f.LeaseOwner != "fast" || f.ETag != "" || f.PrimedAt != nil {
		t.Fatalf("feed changed by the loser: owner %q etag %q primed %v", f.LeaseOwner, f.ETag, f.PrimedAt)
	}
}

func TestRecordPollsBatchKeepsOtherFeeds(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	var fxs []*pollFixture
	for i := range 3 {
		fx := newPollFixture(t, s, clk, fmt.Sprintf("https://example.com/feed%d", i), 1, 1, false)
		fx.claim(t, "w")
		fxs = append(fxs, fx)
	}
	// Feed 1's lease is stolen.
	if err := s.DB.Model(&store.Feed{}).Where("id = ?", fxs[1].feed.ID).Update("lease_owner", "thief").Error; err != nil {
		t.Fatal(err)
	}
	var recs []store.PollRecord
	for i, fx := range fxs {
		recs = append(recs, fx.record([]store.NewItem{item(fmt.Sprint("p", i), "")}, true))
	}
	outs, err := s.RecordPolls(ctx, "w", recs)
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Lost || !outs[1].Lost || outs[2].Lost {
		t.Fatalf("lost flags %v %v %v", outs[0].Lost, outs[1].Lost, outs[2].Lost)
	}
	if outs[0].Emails != 1 || outs[2].Emails != 1 || outs[0].DigestItems != 1 || outs[2].DigestItems != 1 {
		t.Fatalf("fan-out per feed: %+v %+v", outs[0], outs[2])
	}
	if n := count(t, s, "items", "feed_id = ?", fxs[1].feed.ID); n != 0 {
		t.Fatalf("lost feed got %d items", n)
	}
	if n := count(t, s, "poll_log", "1 = 1"); n != 2 {
		t.Fatalf("poll_log %d rows, want 2", n)
	}
	for _, i := range []int{0, 2} {
		f, _ := s.FeedByID(ctx, fxs[i].feed.ID)
		if f.LeaseOwner != "" || f.BodyHash != "h2" {
			t.Fatalf("feed %d not written: %+v", i, f)
		}
	}
}

func TestRecordPollGoneEndsSubscriptionsAndNotifiesOnce(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 2, 1, false)
	end := &store.FeedEnd{EndSubscriptions: true, EndedReason: "410",
		NoticeKey: func(u int64) string { return fmt.Sprintf("gone:%d:%d", fx.feed.ID, u) },
		Notice:    func(u int64) store.Notice { return store.Notice{Subject: "gone", Text: "bye"} }}
	for range 2 { // the second time is a replay: no second notice
		fx.claim(t, "w")
		rec := fx.record(nil, true)
		rec.Status, rec.Outcome, rec.State.State, rec.End = 410, "http_error", store.FeedGone, end
		if _, err := s.RecordPoll(ctx, "w", rec); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, s, "outbox", "kind = ? AND credits = 0", store.KindNotice); n != 3 {
		t.Fatalf("%d notices, want 3 (one per active subscriber)", n)
	}
	if n := count(t, s, "subscriptions", "feed_id = ? AND state <> ?", fx.feed.ID, store.SubEnded); n != 0 {
		t.Fatalf("%d subscriptions not ended", n)
	}
	f, _ := s.FeedByID(ctx, fx.feed.ID)
	if f.State != store.FeedGone || f.SubscriberCount != 0 {
		t.Fatalf("feed state %q subscribers %d", f.State, f.SubscriberCount)
	}
}

func TestRecordPollMerge(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	old := newPollFixture(t, s, clk, "https://old.example.com/feed", 2, 0, false)
	target := newPollFixture(t, s, clk, "https://new.example.com/feed", 1, 0, false)
	// One person follows both: they keep the target subscription only.
	both := old.users[0]
	if _, err := s.Subscribe(ctx, both, target.feed.ID, nil, true); err != nil {
		t.Fatal(err)
	}
	old.claim(t, "w")
	if _, err := s.RecordPoll(ctx, "w", old.record([]store.NewItem{item("seen", "")}, true)); err != nil {
		t.Fatal(err)
	}
	old.claim(t, "w")
	rec := old.record(nil, true)
	rec.State.State, rec.MergeInto = store.FeedMerged, target.feed.ID
	out, err := s.RecordPoll(ctx, "w", rec)
	if err != nil {
		t.Fatal(err)
	}
	// The second active one, the pending one and the ended one move; the
	// person who follows both keeps the target's subscription.
	if out.Moved != 3 {
		t.Fatalf("moved %d subscriptions, want 3", out.Moved)
	}
	tf, _ := s.FeedByID(ctx, target.feed.ID)
	of, _ := s.FeedByID(ctx, old.feed.ID)
	if tf.SubscriberCount != 3 || of.SubscriberCount != 0 || of.State != store.FeedMerged {
		t.Fatalf("after merge: target %d subscribers, old %d (%s)", tf.SubscriberCount, of.SubscriberCount, of.State)
	}
	if n := count(t, s, "items", "feed_id = ? AND identity = ?", target.feed.ID, "id-seen"); n != 1 {
		t.Fatal("the old feed's item identity was not kept")
	}
	if !tf.NextPollAt.Equal(pollT0) {
		t.Fatalf("target not made due now: %v", tf.NextPollAt)
	}
}

func TestRecordPollPushNeedsNoLease(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/feed", 1, 0, false)
	// A poll holds the lease; a push arrives meanwhile.
	fx.claim(t, "poller")
	later := pollT0.Add(time.Hour)
	rec := store.PollRecord{FeedID: fx.feed.ID, At: pollT0, Outcome: "pushed", Status: 200, Push: true,
		Items: []store.NewItem{item("pushed", "")}, State: store.FeedState{NewestItemDate: &later, PrimedAt: &later}}
	out, err := s.RecordPoll(ctx, "", rec)
	if err != nil || out.Emails != 1 {
		t.Fatalf("push: %+v %v", out, err)
	}
	f, _ := s.FeedByID(ctx, fx.feed.ID)
	if f.LeaseOwner != "poller" || f.NewestItemDate == nil || !f.NewestItemDate.Equal(later) {
		t.Fatalf("push state: lease %q newest %v", f.LeaseOwner, f.NewestItemDate)
	}
	// An older newest date does not move it back.
	earlier := pollT0
	rec.Items, rec.State.NewestItemDate = nil, &earlier
	if _, err := s.RecordPoll(ctx, "", rec); err != nil {
		t.Fatal(err)
	}
	f, _ = s.FeedByID(ctx, fx.feed.ID)
	if !f.NewestItemDate.Equal(later) {
		t.Fatalf("newest date moved back to %v", f.NewestItemDate)
	}
}

func TestHostsBackOffOnlyLengthens(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	if got := store.HostOf("https://Example.COM.:8443/feed?x=1"); got != "example.com" {
		t.Fatalf("HostOf = %q", got)
	}
	if err := s.BackOffHost(ctx, "example.com", pollT0.Add(2*time.Hour), "429"); err != nil {
		t.Fatal(err)
	}
	if err := s.BackOffHost(ctx, "example.com", pollT0.Add(time.Hour), "shorter"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetHostMinInterval(ctx, "example.com", 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	hs, err := s.Hosts(ctx, []string{"example.com", "other.example"})
	if err != nil {
		t.Fatal(err)
	}
	h, ok := hs["example.com"]
	if !ok || len(hs) != 1 {
		t.Fatalf("hosts %v", hs)
	}
	if !h.BackoffUntil.Equal(pollT0.Add(2*time.Hour)) || h.BackoffReason != "429" || h.MinIntervalSeconds != 1800 {
		t.Fatalf("host row %+v", h)
	}
}

// A folded poll (a 304 repeating the feed's newest line) is counted in the
// feed's log_seq and writes no poll_log line; Repeats gives each line the
// polls folded into it. A Fold on a record that is not quiet is ignored, and
// a push is counted, logged and ends the run (logged_at cleared).
func TestFoldedPollsAreCountedNotLogged(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	fx := newPollFixture(t, s, clk, "https://example.com/folds", 1, 0, false)
	notModified := func(fold bool) store.PollRecord {
		r := fx.record(nil, true)
		r.Status, r.Outcome, r.Conditional, r.Bytes, r.Fold = 304, "not_modified", true, 0, fold
		r.State.LastStatus = 304
		return r
	}
	poll := func(r store.PollRecord) {
		t.Helper()
		fx.claim(t, "w")
		if _, err := s.RecordPoll(ctx, "w", r); err != nil {
			t.Fatal(err)
		}
		clk.Advance(5 * time.Minute)
	}
	check := func(step string, wantSeq int64, wantRepeats []int64, wantLogged bool) {
		t.Helper()
		f, lines, err := s.FeedForStatus(ctx, fx.feed.URL, 10)
		if err != nil {
			t.Fatal(err)
		}
		if f.LogSeq != wantSeq {
			t.Fatalf("%s: log_seq %d, want %d", step, f.LogSeq, wantSeq)
		}
		if got := store.Repeats(f, lines); fmt.Sprint(got) != fmt.Sprint(wantRepeats) {
			t.Fatalf("%s: %d lines with repeats %v, want %v", step, len(lines), got, wantRepeats)
		}
		if (f.LoggedAt != nil) != wantLogged {
			t.Fatalf("%s: logged_at %v, want set=%v", step, f.LoggedAt, wantLogged)
		}
	}

	poll(notModified(false))
	check("first 304", 1, []int64{0}, true)
	first, _ := s.FeedByID(ctx, fx.feed.ID)
	poll(notModified(true))
	poll(notModified(true))
	check("two folded 304s", 3, []int64{2}, true)
	if f, _ := s.FeedByID(ctx, fx.feed.ID); !f.LoggedAt.Equal(*first.LoggedAt) {
		t.Fatalf("logged_at moved from %v to %v by folded polls", first.LoggedAt, f.LoggedAt)
	}
	// A folded poll writes the columns a repeated 304 may change (on
	// Postgres only those) and clears the lease.
	moved := notModified(true)
	polledAt := clk.Now()
	moved.State.ETag, moved.State.LastModified, moved.State.PollReason = `"v3"`, "Mon, 23 Nov 2026 11:00:00 GMT", "max-age 300"
	moved.State.NextPollAt, moved.State.LastElapsedMS = polledAt.Add(5*time.Minute), 77
	poll(moved)
	f, err := s.FeedByID(ctx, fx.feed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f.ETag != `"v3"` || f.LastModified != "Mon, 23 Nov 2026 11:00:00 GMT" || f.PollReason != "max-age 300" ||
		!f.NextPollAt.Equal(polledAt.Add(5*time.Minute)) || f.LastElapsedMS != 77 ||
		f.LastPolledAt == nil || !f.LastPolledAt.Equal(polledAt) || f.LastSuccessAt == nil || !f.LastSuccessAt.Equal(polledAt) ||
		f.LeaseOwner != "" || f.LeaseUntil != nil || f.LastStatus != 304 || f.Title != "The Feed" || f.BodyHash != "h2" {
		t.Fatalf("after a folded poll: %+v", f)
	}
	check("three folded 304s", 4, []int64{3}, true)
	// Batched, next to another feed's poll.
	other := newPollFixture(t, s, clk, "https://example.com/other", 1, 0, false)
	fx.claim(t, "w")
	other.claim(t, "w")
	if _, err := s.RecordPolls(ctx, "w", []store.PollRecord{notModified(true), other.record(nil, true)}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Minute)
	check("a folded 304 in a batch", 5, []int64{4}, true)
	// A record with items is never folded.
	withItem := fx.record([]store.NewItem{item("f1", "")}, true)
	withItem.Fold = true
	poll(withItem)
	check("a poll with a new item", 6, []int64{0, 4}, true)
	if n := count(t, s, "poll_log", "feed_id = ? AND new_items = 1 AND seq = 6", fx.feed.ID); n != 1 {
		t.Fatalf("the new item's line: %d rows with seq 6", n)
	}
	// A push is logged and ends the run: the next 304 gets its own line.
	if _, err := s.RecordPoll(ctx, "", store.PollRecord{FeedID: fx.feed.ID, At: clk.Now(), URL: fx.feed.URL, Status: 200,
		Outcome: "pushed", Push: true, Items: []store.NewItem{item("f2", "")}}); err != nil {
		t.Fatal(err)
	}
	check("a push", 7, []int64{0, 0, 4}, false)
	poll(notModified(false))
	poll(notModified(true))
	check("a 304 after the push, then a folded one", 9, []int64{1, 0, 0, 4}, true)
	if n := count(t, s, "poll_log", "feed_id = ?", fx.feed.ID); n != 4 {
		t.Fatalf("%d poll_log lines for 9 recorded polls and pushes, want 4", n)
	}
}

// A ping that arrives while a poll holds the feed is queued; that poll's
// write makes the feed due again at once when its request went out at or
// before the ping, whatever path writes it (with items, quiet, folded), and
// empties the queue either way. A feed the poll ends stays ended, and a
// feed given back without a fetch drops the ping.
func TestQueuedPingRepollsOnce(t *testing.T) {
	clk := clock.NewFake(pollT0)
	s := storetest.Open(t, storetest.Options{Clock: clk})
	ctx := context.Background()
	tests := []struct {
		name       string
		ping       bool
		fetchedAgo time.Duration // before the ping; negative: after it
		record     func(fx *pollFixture) store.PollRecord
		wantRepoll bool
	}{
		{"with items, ping after the request", true, time.Second, func(fx *pollFixture) store.PollRecord {
			return fx.record([]store.NewItem{item("q1", "")}, true)
		}, true},
		{"quiet 304, ping after the request", true, time.Second, func(fx *pollFixture) store.PollRecord {
			r := fx.record(nil, true)
			r.Status, r.Outcome, r.Conditional = 304, "not_modified", true
			return r
		}, true},
		{"folded 304, ping after the request", true, time.Second, func(fx *pollFixture) store.PollRecord {
			r := fx.record(nil, true)
			r.Status, r.Outcome, r.Conditional, r.Fold = 304, "not_modified", true, true
			return r
		}, true},
		{"ping at the instant the request went out", true, 0, func(fx *pollFixture) store.PollRecord {
			return fx.record(nil, true)
		}, true},
		{"ping before the request: answered by this poll", true, -time.Second, func(fx *pollFixture) store.PollRecord {
			return fx.record(nil, true)
		}, false},
		{"no ping", false, time.Second, func(fx *pollFixture) store.PollRecord {
			return fx.record(nil, true)
		}, false},
		{"the poll ends the feed", true, time.Second, func(fx *pollFixture) store.PollRecord {
			r := fx.record(nil, true)
			r.Status, r.Outcome, r.State.State, r.State.LastStatus = 410, "gone", store.FeedGone, 410
			return r
		}, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newPollFixture(t, s, clk, fmt.Sprintf("https://example.com/queued-%d", i), 1, 0, false)
			fx.claim(t, "w")
			now := clk.Now()
			if tt.ping {
				if r, err := s.PingFeed(ctx, storetest.Feed(t, s, fx.feed.ID), now, time.Minute); err != nil || r != store.PingQueued {
					t.Fatalf("ping during the poll: %v %v, want queued", r, err)
				}
				// A second ping within the minute queues nothing more.
				if r, err := s.PingFeed(ctx, storetest.Feed(t, s, fx.feed.ID), now.Add(30*time.Second), time.Minute); err != nil || r != store.PingTooSoon {
					t.Fatalf("second ping: %v %v, want too soon", r, err)
				}
				if g := storetest.Feed(t, s, fx.feed.ID); g.PingQueuedAt == nil || !g.PingQueuedAt.Equal(now) {
					t.Fatalf("ping_queued_at %v, want %v", g.PingQueuedAt, now)
				}
			}
			rec := tt.record(fx)
			rec.FetchedAt = now.Add(-tt.fetchedAgo)
			if _, err := s.RecordPoll(ctx, "w", rec); err != nil {
				t.Fatal(err)
			}
			g := storetest.Feed(t, s, fx.feed.ID)
			if g.PingQueuedAt != nil {
				t.Errorf("ping_queued_at %v left after the poll's write", g.PingQueuedAt)
			}
			if g.LeaseOwner != "" {
				t.Errorf("lease %q left", g.LeaseOwner)
			}
			if tt.wantRepoll {
				if !g.NextPollAt.Equal(now) || g.PollReason != store.PingRepollReason {
					t.Errorf("next poll %s (%q), want due now (%q)", g.NextPollAt, g.PollReason, store.PingRepollReason)
				}
				return
			}
			if !g.NextPollAt.Equal(rec.State.NextPollAt) || g.PollReason != rec.State.PollReason {
				t.Errorf("next poll %s (%q), want the poll's %s (%q)", g.NextPollAt, g.PollReason, rec.State.NextPollAt, rec.State.PollReason)
			}
		})
	}
	t.Run("given back without a fetch", func(t *testing.T) {
		fx := newPollFixture(t, s, clk, "https://example.com/queued-deferred", 1, 0, false)
		fx.claim(t, "w")
		now := clk.Now()
		if r, err := s.PingFeed(ctx, storetest.Feed(t, s, fx.feed.ID), now, time.Minute); err != nil || r != store.PingQueued {
			t.Fatalf("ping during the poll: %v %v, want queued", r, err)
		}
		backoff := now.Add(10 * time.Minute)
		if ok, err := s.DeferFeed(ctx, fx.feed.ID, "w", backoff, "host backed off"); err != nil || !ok {
			t.Fatalf("defer: %v %v", ok, err)
		}
		g := storetest.Feed(t, s, fx.feed.ID)
		if g.PingQueuedAt != nil || !g.NextPollAt.Equal(backoff) {
			t.Errorf("after giving back: ping_queued_at %v, next poll %s; want none and %s", g.PingQueuedAt, g.NextPollAt, backoff)
		}
	})
}
