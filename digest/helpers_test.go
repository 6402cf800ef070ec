package digest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// env is one test database with a fake clock and a digest worker on it.
type env struct {
	t      testing.TB
	ctx    context.Context
	clk    *clock.Fake
	st     *store.Store
	w      *digest.Worker
	serial atomic.Int64 // makes feed URLs and item identities unique
}

func newEnv(t testing.TB, start time.Time) *env {
	t.Helper()
	clk := clock.NewFake(start)
	st := storetest.Open(t, storetest.Options{Clock: clk})
	return newEnvOn(t, st, clk, "worker-1")
}

func newEnvOn(t testing.TB, st *store.Store, clk *clock.Fake, owner string) *env {
	t.Helper()
	w, err := digest.NewWorker(digest.Config{Store: st, Owner: owner, Clock: clk, Batch: 50})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: context.Background(), clk: clk, st: st, w: w}
}

// person is a user with one digest and its feeds.
type person struct {
	user   *store.User
	digest *store.Digest
	feeds  []*store.Feed
	subs   []*store.Subscription
}

// newPerson makes a confirmed user with a digest and nFeeds feeds delivered
// into it (active subscriptions).
func (e *env) newPerson(email, name, spec, zone string, nFeeds int) *person {
	e.t.Helper()
	u, _, err := e.st.EnsureUser(e.ctx, email)
	if err != nil {
		e.t.Fatal(err)
	}
	d, _, err := digest.Set(e.ctx, e.st, u.ID, name, spec, zone)
	if err != nil {
		e.t.Fatal(err)
	}
	p := &person{user: u, digest: d}
	for range nFeeds {
		p.addFeed(e)
	}
	return p
}

func (p *person) addFeed(e *env) *store.Feed {
	e.t.Helper()
	n := e.serial.Add(1)
	f, _, err := e.st.EnsureFeed(e.ctx, fmt.Sprintf("https://site%d.example/feed.xml", n))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.DB.Model(f).Updates(map[string]any{"title": fmt.Sprintf("Feed %d", n),
		"site_url": fmt.Sprintf("https://site%d.example/", n)}).Error; err != nil {
		e.t.Fatal(err)
	}
	sub, err := e.st.Subscribe(e.ctx, p.user.ID, f.ID, &p.digest.ID, true)
	if err != nil {
		e.t.Fatal(err)
	}
	p.feeds = append(p.feeds, f)
	p.subs = append(p.subs, sub)
	return f
}

// queue records a new item of feed i and queues it for the digest, as the
// pipeline does (a digest_items row with no issue).
func (p *person) queue(e *env, i int, title, content string, published time.Time) *store.Item {
	e.t.Helper()
	n := e.serial.Add(1)
	now := e.clk.Now()
	it := store.Item{FeedID: p.feeds[i].ID, Identity: fmt.Sprintf("item-%d", n), Title: title,
		Link: fmt.Sprintf("/posts/%d", n), Content: content, SeenAt: now}
	if !published.IsZero() {
		it.PublishedAt = &published
	}
	if err := e.st.DB.Create(&it).Error; err != nil {
		e.t.Fatal(err)
	}
	di := store.DigestItem{DigestID: p.digest.ID, SubscriptionID: p.subs[i].ID, ItemID: it.ID, FeedID: it.FeedID, QueuedAt: now}
	if err := e.st.DB.Create(&di).Error; err != nil {
		e.t.Fatal(err)
	}
	return &it
}

// queueFeeds queues one item in each of the first n feeds.
func (p *person) queueFeeds(e *env, n int) {
	e.t.Helper()
	for i := range n {
		p.queue(e, i, fmt.Sprintf("Post %d", i), "<p>Hello</p>", time.Time{})
	}
}

func (e *env) assemble() int {
	e.t.Helper()
	n, err := e.w.AssembleDue(e.ctx)
	if err != nil {
		e.t.Fatalf("AssembleDue: %v", err)
	}
	return n
}

func (e *env) issues(digestID int64) []store.DigestIssue {
	e.t.Helper()
	var out []store.DigestIssue
	if err := e.st.DB.Where("digest_id = ?", digestID).Order("slot_at, id").Find(&out).Error; err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) outbox(userID int64) []store.OutboxRow {
	e.t.Helper()
	var out []store.OutboxRow
	if err := e.st.DB.Where("user_id = ? AND kind = ?", userID, store.KindDigest).Order("id").Find(&out).Error; err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) digest(id int64) *store.Digest {
	e.t.Helper()
	d, err := e.st.DigestByID(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) pending(digestID int64) int64 {
	e.t.Helper()
	n, err := e.st.PendingDigestItems(e.ctx, digestID)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}
