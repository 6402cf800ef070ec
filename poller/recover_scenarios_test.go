package poller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/recovery"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/sites"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/poller"
)

// recWorld is a store, a web of test sites and a poller that reaches them,
// on one fake clock.
type recWorld struct {
	t   *testing.T
	ctx context.Context
	clk *clock.Fake
	st  *store.Store
	web *sites.Sites
	p   *poller.Poller
}

func newRecWorld(t *testing.T) *recWorld {
	t.Helper()
	clk := clock.NewFake(wkT0)
	st := storetest.Open(t, storetest.Options{Clock: clk})
	web, err := sites.New(clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(web.Close)
	signer, err := token.NewSigner([]byte("recovery-test-secret-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	lk := links.New(wkBase, signer, "feedmail@feedmail.example")
	p := wkPoller(t, st, clk, "recovery", func(c *poller.Config) { c.Fetch = web.FetcherConfig(); c.Links = &lk })
	return &recWorld{t: t, ctx: context.Background(), clk: clk, st: st, web: web, p: p}
}

// feed returns feed id as stored now.
func (w *recWorld) feed(id int64) *store.Feed { return storetest.Feed(w.t, w.st, id) }

// poll polls feed id at its next poll time and returns it as stored after.
func (w *recWorld) poll(id int64) *store.Feed {
	w.t.Helper()
	if f := w.feed(id); f.NextPollAt.After(w.clk.Now()) {
		w.clk.Set(f.NextPollAt)
	}
	if _, err := w.p.PollFeed(w.ctx, id, "manual"); err != nil {
		w.t.Fatalf("poll feed %d: %v", id, err)
	}
	return w.feed(id)
}

// breakFeed serves the scenario's after-web and polls the old feed until
// it is ailing, or for a frozen one, lets time pass until it is stale.
func (w *recWorld) breakFeed(sc sites.Scenario, f *store.Feed) {
	w.t.Helper()
	w.web.Reset()
	w.p.Close() // no connection kept from before the move
	sc.After(w.web)
	if sc.Frozen {
		w.clk.Set(w.clk.Now().Add(poller.StaleMin + 24*time.Hour))
		w.poll(f.ID)
		return
	}
	for i := 0; i < 20; i++ {
		g := w.poll(f.ID)
		if poller.Ailing(g, w.clk.Now()) {
			return
		}
	}
	w.t.Fatalf("feed %s not ailing after 20 failed polls: %+v", f.URL, *w.feed(f.ID))
}

// notices counts the notices queued whose dedupe key starts with prefix,
// by user.
func (w *recWorld) notices(prefix string) map[int64]int {
	w.t.Helper()
	var rows []store.OutboxRow
	if err := w.st.DB.Where("kind = ? AND dedupe_key LIKE ?", store.KindNotice, prefix+"%").Find(&rows).Error; err != nil {
		w.t.Fatal(err)
	}
	out := map[int64]int{}
	for _, r := range rows {
		out[r.UserID]++
	}
	return out
}

// readersOn returns the feed ids of subs' subscriptions now.
func (w *recWorld) feedsOf(subs []store.Subscription) map[int64]int {
	w.t.Helper()
	out := map[int64]int{}
	for _, s := range subs {
		got, err := w.st.SubscriptionByID(w.ctx, s.ID)
		if err != nil {
			w.t.Fatal(err)
		}
		if got.State == store.SubActive {
			out[got.FeedID]++
		}
	}
	return out
}

// TestRecoveryScenarios runs every row of the scenario table through the
// real poller, store and worker: the feed is followed by three readers,
// polled while good, then breaks as the row says and is polled until it
// ails (or, frozen, until it is stale). One pass of the rediscovery
// worker must then reach the row's outcome on its first attempt, within
// the request budget: recoverable rows moved (readers on the new feed,
// each told once) or offered (each told once, and each moved by the one
// click); the others move nobody and offer nothing. A second pass tells
// nobody again.
func TestRecoveryScenarios(t *testing.T) {
	rows, err := sites.Scenarios(testutil.CorpusDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range rows {
		t.Run(sc.Name, func(t *testing.T) {
			w := newRecWorld(t)
			sc.Before(w.web)
			f := wkFollow(t, w.st, sc.OldURL, 2, 1)
			if g := w.poll(f.ID); g.PrimedAt == nil {
				t.Fatalf("the good poll of %s did not parse: %+v", sc.OldURL, *g)
			}
			subs, err := w.st.ActiveSubscriptionsOf(w.ctx, f.ID)
			if err != nil || len(subs) != 3 {
				t.Fatalf("subscriptions: %d, %v", len(subs), err)
			}
			w.breakFeed(sc, f)
			w.web.ResetLog()
			if n, err := w.p.RecoverDue(w.ctx, 10); err != nil || n != 1 {
				t.Fatalf("RecoverDue ran %d attempts (%v), want 1: feed %+v", n, err, *w.feed(f.ID))
			}
			t.Logf("%s: %d requests", sc.Name, w.web.Count(""))
			if n := w.web.Count(""); n > poller.RecoveryBudget {
				t.Errorf("the attempt sent %d requests, budget %d:\n%v", n, poller.RecoveryBudget, w.web.Requests())
			}
			checkOutcome(t, w, sc, f, subs)
			// A second pass, later, tells nobody again.
			w.clk.Set(w.clk.Now().Add(poller.RetryAfter(1) + time.Minute))
			if _, err := w.p.RecoverDue(w.ctx, 10); err != nil {
				t.Fatal(err)
			}
			for _, kind := range []string{"moved:", "offered:", "ailing:"} {
				for u, n := range w.notices(kind) {
					if n > 1 {
						t.Errorf("user %d got %d %q notices", u, n, kind)
					}
				}
			}
		})
	}
}

// checkOutcome checks what one rediscovery pass did for scenario sc.
func checkOutcome(t *testing.T, w *recWorld, sc sites.Scenario, f *store.Feed, subs []store.Subscription) {
	t.Helper()
	var rep struct {
		Verdict, To string
	}
	g := w.feed(f.ID)
	note := g.RecoveryNote
	if i := strings.Index(note, `"verdict":"`); i >= 0 {
		rep.Verdict = strings.SplitN(note[i+len(`"verdict":"`):], `"`, 2)[0]
	}
	if rep.Verdict != sc.WantVerdict {
		t.Fatalf("verdict %q, want %q; attempt: %s", rep.Verdict, sc.WantVerdict, note)
	}
	moved, offered := w.notices("moved:"), w.notices("offered:")
	switch sc.WantVerdict {
	case recovery.Moved:
		to, err := w.st.FeedByURL(w.ctx, sc.WantTo)
		if err != nil {
			t.Fatalf("no feed at %s: %v", sc.WantTo, err)
		}
		if on := w.feedsOf(subs); on[to.ID] != 3 {
			t.Errorf("readers by feed %v, want all 3 on %d (%s)", on, to.ID, sc.WantTo)
		}
		if len(moved) != 3 || len(offered) != 0 {
			t.Errorf("notices: moved %v, offered %v; want each of 3 readers told once of the move", moved, offered)
		}
	case recovery.Offered:
		if on := w.feedsOf(subs); on[f.ID] != 3 {
			t.Errorf("an offer moved readers: %v", on)
		}
		if len(offered) != 3 || len(moved) != 0 {
			t.Errorf("notices: offered %v, moved %v; want each of 3 readers offered once", offered, moved)
		}
		acceptAll(t, w, f, sc.WantTo, subs)
	default:
		if on := w.feedsOf(subs); on[f.ID] != 3 {
			t.Errorf("readers moved in a must-not-move case: %v", on)
		}
		if len(moved)+len(offered) != 0 {
			t.Errorf("notices in a must-not-move case: moved %v, offered %v", moved, offered)
		}
	}
}

// acceptAll clicks every reader's offer and checks they all follow to.
func acceptAll(t *testing.T, w *recWorld, f *store.Feed, to string, subs []store.Subscription) {
	t.Helper()
	nf, err := w.st.FeedByURL(w.ctx, to)
	if err != nil {
		t.Fatalf("offered feed %s: %v", to, err)
	}
	for _, s := range subs {
		offers, err := w.st.OffersFor(w.ctx, s.UserID)
		if err != nil || len(offers) != 1 {
			t.Fatalf("offers to user %d: %d, %v", s.UserID, len(offers), err)
		}
		if _, _, err := w.st.AcceptOffer(w.ctx, offers[0].ID); err != nil {
			t.Fatal(err)
		}
	}
	if on := w.feedsOf(subs); on[nf.ID] != 3 {
		t.Errorf("after each reader's click: %v, want all 3 on %d", on, nf.ID)
	}
	if g := w.feed(nf.ID); g.SubscriberCount != 3 || g.PrimedAt == nil {
		t.Errorf("new feed: %d subscribers, primed %v; want 3, primed from the attempt's fetch", g.SubscriberCount, g.PrimedAt)
	}
}

// TestShortOutageTellsNobody: a feed that fails for six hours (polled
// often) and then answers again is never ailing: no attempt, no request
// beyond its polls, no notice.
func TestShortOutageTellsNobody(t *testing.T) {
	w := newRecWorld(t)
	w.web.Host("blog.test").File("/feed.xml", "application/rss+xml", []byte(recRSS("Blog", "https://blog.test/", 3)))
	f := wkFollow(t, w.st, "https://blog.test/feed.xml", 2, 0)
	w.poll(f.ID)
	w.web.Host("blog.test").Status("/feed.xml", 503, "down for maintenance")
	start := w.clk.Now()
	for w.clk.Now().Sub(start) < 6*time.Hour {
		w.poll(f.ID)
		if n, err := w.p.RecoverDue(w.ctx, 10); err != nil || n != 0 {
			t.Fatalf("at %v into the outage RecoverDue ran %d attempts (%v), want none", w.clk.Now().Sub(start), n, err)
		}
	}
	w.web.Host("blog.test").File("/feed.xml", "application/rss+xml", []byte(recRSS("Blog", "https://blog.test/", 3)))
	if g := w.poll(f.ID); g.ConsecutiveErrors != 0 {
		t.Fatalf("feed still failing: %+v", *g)
	}
	if n := len(w.notices("")); n != 0 {
		t.Errorf("%d readers were told something about a 6-hour outage", n)
	}
}

// TestDeadFeedReadersToldOnce: a feed whose host is gone for good is
// looked for with back-off; after about a week its readers are told once
// what failed and what was tried, and later attempts tell nobody again.
func TestDeadFeedReadersToldOnce(t *testing.T) {
	w := newRecWorld(t)
	w.web.Host("gone.test").File("/feed.xml", "application/rss+xml", []byte(recRSS("Gone", "https://gone.test/", 3)))
	f := wkFollow(t, w.st, "https://gone.test/feed.xml", 3, 0)
	w.poll(f.ID)
	w.web.Reset()
	w.p.Close()
	w.web.Remove("gone.test")
	attempts := 0
	for day := 0; day < 21; day++ {
		w.poll(f.ID)
		n, err := w.p.RecoverDue(w.ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		attempts += n
		if told := w.notices("ailing:"); len(told) > 0 && w.clk.Now().Sub(*w.feed(f.ID).ErrorsSince) < poller.TellAfter {
			t.Fatalf("readers told after %v of errors, before a week", w.clk.Now().Sub(*w.feed(f.ID).ErrorsSince))
		}
	}
	told := w.notices("ailing:")
	if len(told) != 3 {
		t.Fatalf("readers told: %v, want each of 3 once", told)
	}
	for u, n := range told {
		if n != 1 {
			t.Errorf("user %d told %d times", u, n)
		}
	}
	if attempts < 2 || attempts > 10 {
		t.Errorf("%d attempts in three weeks, want a few, backing off", attempts)
	}
	if g := w.feed(f.ID); g.RecoveryState != store.RecoveryTold || poller.Health(g, w.clk.Now()) != "ailing" {
		t.Errorf("feed after three weeks: recovery %q, health %q", g.RecoveryState, poller.Health(g, w.clk.Now()))
	}
	dead := func() int64 {
		c, err := w.st.RecoveryCounts(w.ctx, w.clk.Now().Add(-poller.AilingAfter), poller.AilingPolls)
		if err != nil {
			t.Fatal(err)
		}
		return c["dead"]
	}
	if n := dead(); n != 1 {
		t.Errorf("dead feeds gauge %d, want 1", n)
	}
	// The host comes back: the feed is no longer dead.
	w.web.Host("gone.test").File("/feed.xml", "application/rss+xml", []byte(recRSS("Gone", "https://gone.test/", 3)))
	if g := w.poll(f.ID); g.ConsecutiveErrors != 0 || poller.Health(g, w.clk.Now()) != "healthy" {
		t.Fatalf("feed after its host came back: %d errors, health %q", g.ConsecutiveErrors, poller.Health(g, w.clk.Now()))
	}
	if n := dead(); n != 0 {
		t.Errorf("dead feeds gauge %d after the feed came back, want 0", n)
	}
}

// recRSS is an RSS document with posts 1..n (see recRSSFrom).
func recRSS(title, site string, n int) string { return recRSSFrom(title, site, 1, n) }

// TestMovedFeedThreeReaders: two instant readers and one digest reader of
// a feed that moved (its old address answers 404, its homepage points to
// the new one) follow it: the post published at the new address while the
// old one failed, and the first post after the move, reach each reader
// exactly once (an email each, the digest reader's pending digest item),
// and nothing they had already is queued again.
func TestMovedFeedThreeReaders(t *testing.T) {
	w := newRecWorld(t)
	const oldURL, newURL = "https://blog.test/feed", "https://blog.test/rss.xml"
	w.web.Host("blog.test").File("/feed", "application/rss+xml", []byte(recRSS("Blog", "https://blog.test/", 3)))
	f := wkFollow(t, w.st, oldURL, 2, 1)
	w.poll(f.ID)
	subs, err := w.st.ActiveSubscriptionsOf(w.ctx, f.ID)
	if err != nil || len(subs) != 3 {
		t.Fatalf("subscriptions: %d, %v", len(subs), err)
	}
	w.web.Reset()
	w.p.Close()
	w.web.Host("blog.test").Status("/feed", 404, "not found").
		HTML("/", `<html><head><title>Blog</title><link rel="alternate" type="application/rss+xml" href="/rss.xml"></head><body>Blog</body></html>`).
		File("/rss.xml", "application/rss+xml", []byte(recRSSFrom("Blog", "https://blog.test/", 1, 4)))
	for i := 0; i < 20 && !poller.Ailing(w.feed(f.ID), w.clk.Now()); i++ {
		w.poll(f.ID)
	}
	if n, err := w.p.RecoverDue(w.ctx, 10); err != nil || n != 1 {
		t.Fatalf("RecoverDue: %d, %v", n, err)
	}
	nf, err := w.st.FeedByURL(w.ctx, newURL)
	if err != nil {
		t.Fatalf("no feed at the new address: %v (attempt: %s)", err, w.feed(f.ID).RecoveryNote)
	}
	w.poll(nf.ID) // delivers post 4, published while the old address failed
	w.web.Host("blog.test").File("/rss.xml", "application/rss+xml", []byte(recRSSFrom("Blog", "https://blog.test/", 1, 5)))
	w.poll(nf.ID)           // post 5, the first after the move
	w.poll(nf.ID)           // nothing new
	got := map[string]int{} // "sub/title" → deliveries
	var rows []struct {
		SubscriptionID int64
		Title          string
	}
	q := `SELECT o.subscription_id, i.title FROM outbox o JOIN items i ON i.id = o.item_id WHERE o.subscription_id IN ?
UNION ALL SELECT d.subscription_id, i.title FROM digest_items d JOIN items i ON i.id = d.item_id WHERE d.subscription_id IN ?`
	ids := []int64{subs[0].ID, subs[1].ID, subs[2].ID}
	if err := w.st.DB.Raw(q, ids, ids).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		got[fmt.Sprintf("%d/%s", r.SubscriptionID, r.Title)]++
	}
	for _, s := range subs {
		for _, title := range []string{"Post 4", "Post 5"} {
			if n := got[fmt.Sprintf("%d/%s", s.ID, title)]; n != 1 {
				t.Errorf("subscription %d got %q %d times, want once (all: %v)", s.ID, title, n, got)
			}
		}
	}
	if len(got) != 6 {
		t.Errorf("deliveries %v, want posts 4 and 5 to each of 3 readers and nothing else", got)
	}
}

// recRSSFrom is an RSS document with posts first..last, newest first, a
// day apart, the last one published at wkT0 plus (last-3) days.
func recRSSFrom(title, site string, first, last int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0"?><rss version="2.0"><channel><title>%s</title><link>%s</link>`, title, site)
	for i := last; i >= first; i-- {
		fmt.Fprintf(&b, `<item><title>Post %d</title><link>%sp/%d</link><guid>%sp/%d</guid><pubDate>%s</pubDate></item>`,
			i, site, i, site, i, wkT0.Add(time.Duration(i-3)*24*time.Hour).Format(time.RFC1123Z))
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

// TestQuietFeedIsNotStale: a feed that posts every 20 days and has been
// silent for 40 is not stale (three of its gaps are 60 days): the worker
// looks at it without a request and plans its next look for when it would
// be stale, instead of every pass.
func TestQuietFeedIsNotStale(t *testing.T) {
	w := newRecWorld(t)
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Quiet</title><link>https://quiet.test/</link>`)
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&b, `<item><title>Q%d</title><guid>q%d</guid><pubDate>%s</pubDate></item>`,
			i, i, wkT0.Add(-time.Duration(i)*20*24*time.Hour).Format(time.RFC1123Z))
	}
	b.WriteString(`</channel></rss>`)
	w.web.Host("quiet.test").File("/feed.xml", "application/rss+xml", []byte(b.String()))
	f := wkFollow(t, w.st, "https://quiet.test/feed.xml", 1, 0)
	w.poll(f.ID)
	w.clk.Set(wkT0.Add(40 * 24 * time.Hour))
	w.poll(f.ID)
	w.web.ResetLog()
	if n, err := w.p.RecoverDue(w.ctx, 10); err != nil || n != 1 {
		t.Fatalf("RecoverDue: %d, %v; want the quiet feed looked at once", n, err)
	}
	if n := w.web.Count(""); n != 0 {
		t.Errorf("looking at a quiet feed sent %d requests", n)
	}
	g := w.feed(f.ID)
	want := wkT0.Add(60 * 24 * time.Hour)
	if g.RecoveryNextAt == nil || !g.RecoveryNextAt.Equal(want) || g.RecoveryAt != nil {
		t.Errorf("next look %v (last attempt %v), want %v and no attempt", g.RecoveryNextAt, g.RecoveryAt, want)
	}
	if n, err := w.p.RecoverDue(w.ctx, 10); err != nil || n != 0 {
		t.Errorf("a second pass looked again: %d, %v", n, err)
	}
}

// TestSelfLinkFound: a feed whose stored self link (kept as its WebSub
// topic) names its new address is found there when its old address and
// its site answer 404: the self link is a candidate of the attempt.
func TestSelfLinkFound(t *testing.T) {
	w := newRecWorld(t)
	const oldURL, selfURL = "https://blog.test/old.xml", "https://blog.test/feeds/current.xml"
	w.web.Host("blog.test").File("/old.xml", "application/rss+xml", []byte(recRSS("Blog", "https://blog.test/", 3)))
	f := wkFollow(t, w.st, oldURL, 1, 0)
	w.poll(f.ID)
	if err := w.st.DB.Model(&store.Feed{}).Where("id = ?", f.ID).
		Updates(map[string]any{"websub_topic": selfURL, "websub_hub": "https://hub.test/"}).Error; err != nil {
		t.Fatal(err)
	}
	w.web.Reset()
	w.p.Close()
	w.web.Host("blog.test").Status("/old.xml", 404, "not found").Status("/", 404, "not found").
		File("/feeds/current.xml", "application/rss+xml", []byte(recRSS("Blog", "https://blog.test/", 4)))
	for i := 0; i < 20 && !poller.Ailing(w.feed(f.ID), w.clk.Now()); i++ {
		w.poll(f.ID)
	}
	if n, err := w.p.RecoverDue(w.ctx, 10); err != nil || n != 1 {
		t.Fatalf("RecoverDue: %d, %v", n, err)
	}
	if _, err := w.st.FeedByURL(w.ctx, selfURL); err != nil || w.feed(f.ID).RecoveryState != store.RecoveryMoved {
		t.Fatalf("not moved to the self link %s (%v); attempt: %s", selfURL, err, w.feed(f.ID).RecoveryNote)
	}
}
