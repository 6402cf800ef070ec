package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"gorm.io/gorm"
)

// Seeding writes rows straight into the tables, in batches, as a bulk
// import would: the scenarios measure polling, sending and assembling, not
// signing people up. Every person gets credits enough for the run (a
// ledger grant and the matching cached balance), so nothing is held.

// seedCredits is every bench person's balance.
const seedCredits = 1_000_000

// batchOf is the rows per INSERT of a model with cols columns: under
// SQLite's 32,766 parameters, however wide the table grows.
func batchOf(cols int) int { return max(1, min(1000, 30000/max(cols, 1))) }

// create inserts rows in batches (ids are filled in), counting them into
// done for progress. The batch size follows the model's column count.
func create[T any](ctx context.Context, st *store.Store, rows []T, done *atomic.Int64) error {
	if len(rows) == 0 {
		return nil
	}
	stmt := &gorm.Statement{DB: st.DB}
	if err := stmt.Parse(&rows[0]); err != nil {
		return fmt.Errorf("seed %T: %w", rows[0], err)
	}
	n := batchOf(len(stmt.Schema.DBNames))
	for from := 0; from < len(rows); from += n {
		part := rows[from:min(from+n, len(rows))]
		if err := st.DB.WithContext(ctx).Create(&part).Error; err != nil {
			return fmt.Errorf("seed %T: %w", rows[0], err)
		}
		if done != nil {
			done.Add(int64(len(part)))
		}
	}
	return nil
}

// seedUsers creates n people named prefix<i>@bench.example with credits.
func (e *env) seedUsers(ctx context.Context, prefix string, n int, done *atomic.Int64) ([]store.User, error) {
	now := e.clk.Now()
	users := make([]store.User, n)
	for i := range users {
		users[i] = store.User{Email: prefix + strconv.Itoa(i) + "@bench.example", Timezone: "UTC", Balance: seedCredits,
			ConfirmedAt: &now, TrialGranted: true, CreatedAt: now}
	}
	if err := create(ctx, e.st, users, done); err != nil {
		return nil, err
	}
	grants := make([]store.LedgerEntry, n)
	for i, u := range users {
		grants[i] = store.LedgerEntry{UserID: u.ID, Kind: store.LedgerGrant, Amount: seedCredits, BalanceAfter: seedCredits,
			IdempotencyKey: "bench-grant:" + strconv.FormatInt(u.ID, 10), Reason: "bench", CreatedAt: now}
	}
	if err := create(ctx, e.st, grants, done); err != nil {
		return nil, err
	}
	return users, nil
}

// ensureFleet makes the fleet: cfg.Feeds feeds on the farms (RSS, Atom and
// JSON Feed in turn, strong ETag and Last-Modified, gzip), due now, each
// followed by one instant subscriber.
func (e *env) ensureFleet(ctx context.Context) error {
	if e.fleet != nil {
		return nil
	}
	n := e.cfg.Feeds
	var done atomic.Int64
	stop := e.progress("seeding the fleet", func() string { return fmt.Sprintf("%d rows", done.Load()) })
	defer stop()
	now := e.clk.Now()
	fleet := make([]fleetFeed, n)
	feeds := make([]store.Feed, n)
	for i := range fleet {
		ff := e.farmFor(i).AddFeed(farm.Spec{Format: farm.Format(i % 3), ItemCount: e.cfg.Items,
			ETag: farm.ETagStrong, LastModified: true, Gzip: true})
		fleet[i].farm = ff
		feeds[i] = store.Feed{URL: ff.URL(), State: store.FeedActive, SubscriberCount: 1, NextPollAt: now,
			PollReason: "new feed: first poll", CreatedAt: now, UpdatedAt: now}
	}
	if err := create(ctx, e.st, feeds, &done); err != nil {
		return err
	}
	users, err := e.seedUsers(ctx, "fleet", n, &done)
	if err != nil {
		return err
	}
	subs := make([]store.Subscription, n)
	for i := range subs {
		fleet[i].id = feeds[i].ID
		subs[i] = store.Subscription{UserID: users[i].ID, FeedID: feeds[i].ID, State: store.SubActive, CreatedAt: now, ConfirmedAt: &now}
	}
	if err := create(ctx, e.st, subs, &done); err != nil {
		return err
	}
	e.fleet = fleet
	return e.analyze(ctx)
}

// ensurePrimed makes sure the fleet has been polled once (untimed when the
// cold scenario did not run).
func (e *env) ensurePrimed(ctx context.Context) error {
	if err := e.ensureFleet(ctx); err != nil {
		return err
	}
	if e.primed {
		return nil
	}
	p, err := e.poller()
	if err != nil {
		return err
	}
	stop := e.progress("priming the fleet", e.pollStatus)
	defer stop()
	e.clk.Advance(time.Second)
	n, err := p.PollDue(ctx)
	if err != nil {
		return fmt.Errorf("priming pass: %w", err)
	}
	if n != len(e.fleet) {
		return checkf("priming pass polled %d feeds, want %d", n, len(e.fleet))
	}
	e.primed = true
	return nil
}

// fanFeed is the fan-out scenario's feed.
type fanFeed struct {
	id   int64
	farm *farm.Feed
}

// ensureFan makes the fan-out feed: one feed with cfg.Subscribers instant
// subscribers, polled once (its first poll mails nothing).
func (e *env) ensureFan(ctx context.Context) error {
	if e.fan != nil {
		return nil
	}
	var done atomic.Int64
	stop := e.progress("seeding the fan-out feed", func() string { return fmt.Sprintf("%d rows", done.Load()) })
	defer stop()
	now := e.clk.Now()
	ff := e.farms[0].AddFeed(farm.Spec{Title: "Fan-out", ItemCount: 10, ETag: farm.ETagStrong, LastModified: true, Gzip: true})
	// Due in a year: only PollFeed polls it, never a pass over the fleet.
	f := []store.Feed{{URL: ff.URL(), State: store.FeedActive, SubscriberCount: e.cfg.Subscribers,
		NextPollAt: now.AddDate(1, 0, 0), PollReason: "bench fan-out feed", CreatedAt: now, UpdatedAt: now}}
	if err := create(ctx, e.st, f, &done); err != nil {
		return err
	}
	users, err := e.seedUsers(ctx, "fan", e.cfg.Subscribers, &done)
	if err != nil {
		return err
	}
	subs := make([]store.Subscription, len(users))
	for i, u := range users {
		subs[i] = store.Subscription{UserID: u.ID, FeedID: f[0].ID, State: store.SubActive, CreatedAt: now, ConfirmedAt: &now}
	}
	if err := create(ctx, e.st, subs, &done); err != nil {
		return err
	}
	if err := e.analyze(ctx); err != nil {
		return err
	}
	p, err := e.poller()
	if err != nil {
		return err
	}
	rep, err := p.PollFeed(ctx, f[0].ID, "bench")
	if err != nil {
		return fmt.Errorf("first poll of the fan-out feed: %w", err)
	}
	if rep.Emails != 0 || rep.Status != 200 {
		return checkf("first poll of the fan-out feed: status %d, %d emails", rep.Status, rep.Emails)
	}
	e.fan = &fanFeed{id: f[0].ID, farm: ff}
	return nil
}

// seedDigests fills the database with n people, each with one digest due
// now and 20 items from 8 feeds waiting (3 from four feeds, 2 from the
// other four), as the poller's pipeline would have queued them. The feeds
// (800, fewer for small runs) are never polled.
func (e *env) seedDigests(ctx context.Context, n int, slot time.Time) error {
	var done atomic.Int64
	stop := e.progress("seeding digests", func() string { return fmt.Sprintf("%d rows", done.Load()) })
	defer stop()
	now := e.clk.Now()
	nFeeds := max(digestFeeds, min(800, n*digestFeeds))
	feeds := make([]store.Feed, nFeeds)
	for i := range feeds {
		feeds[i] = store.Feed{URL: "https://digest-bench.example/" + strconv.Itoa(i) + "/feed.xml", Title: "Digest feed " + strconv.Itoa(i),
			SiteURL: "https://digest-bench.example/" + strconv.Itoa(i) + "/", State: store.FeedActive, SubscriberCount: 1,
			NextPollAt: now.AddDate(10, 0, 0), PollReason: "bench digest feed", CreatedAt: now, UpdatedAt: now}
	}
	if err := create(ctx, e.st, feeds, &done); err != nil {
		return err
	}
	const perFeed = 3
	items := make([]store.Item, 0, nFeeds*perFeed)
	for _, f := range feeds {
		for k := range perFeed {
			pub := now.Add(-time.Duration(k+1) * time.Hour)
			items = append(items, store.Item{FeedID: f.ID, Identity: "i" + strconv.Itoa(k), GUID: "i" + strconv.Itoa(k),
				Link: f.SiteURL + "post/" + strconv.Itoa(k), Title: "Post " + strconv.Itoa(k) + " of " + f.Title,
				Content: "<p>Something new on " + f.Title + ", with a <a href=\"/more\">link</a>.</p>", PublishedAt: &pub, SeenAt: now})
		}
	}
	if err := create(ctx, e.st, items, &done); err != nil {
		return err
	}
	users, err := e.seedUsers(ctx, "digest", n, &done)
	if err != nil {
		return err
	}
	digests := make([]store.Digest, n)
	for i, u := range users {
		digests[i] = store.Digest{UserID: u.ID, Name: "Morning", Schedule: "0 7 * * *", Timezone: "UTC",
			NextSlotAt: slot, CreatedAt: now.Add(-48 * time.Hour)}
	}
	if err := create(ctx, e.st, digests, &done); err != nil {
		return err
	}
	subs := make([]store.Subscription, 0, n*digestFeeds)
	for i, d := range digests {
		for k := range digestFeeds {
			subs = append(subs, store.Subscription{UserID: d.UserID, FeedID: feeds[(i*digestFeeds+k)%nFeeds].ID, DigestID: &digests[i].ID,
				State: store.SubActive, CreatedAt: now, ConfirmedAt: &now})
		}
	}
	if err := create(ctx, e.st, subs, &done); err != nil {
		return err
	}
	feedIndex := make(map[int64]int, nFeeds)
	for i, f := range feeds {
		feedIndex[f.ID] = i
	}
	di := make([]store.DigestItem, 0, n*digestItems)
	for j, s := range subs {
		take := perFeed // the first four feeds of a digest give 3 items, the others 2
		if j%digestFeeds >= 4 {
			take = 2
		}
		fi := feedIndex[s.FeedID]
		for k := range take {
			di = append(di, store.DigestItem{DigestID: *s.DigestID, SubscriptionID: s.ID, ItemID: items[fi*perFeed+k].ID,
				FeedID: s.FeedID, QueuedAt: now})
		}
	}
	if err := create(ctx, e.st, di, &done); err != nil {
		return err
	}
	return e.analyze(ctx)
}

// analyze gives Postgres statistics on the freshly filled tables, as a
// production database has them (SQLite plans without).
func (e *env) analyze(ctx context.Context) error {
	if !e.st.Postgres() {
		return nil
	}
	if err := e.st.DB.WithContext(ctx).Exec("ANALYZE feeds, users, ledger_entries, subscriptions, items, digests, digest_items, outbox").Error; err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}
