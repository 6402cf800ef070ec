package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestEnsureUsers: missing accounts are created (more than one INSERT's
// worth, each address once however it is written), confirmed with their
// trial on the ledger when asked, and told apart from the ones found,
// which are left as they were.
func TestEnsureUsers(t *testing.T) {
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(pollT0)})
	ctx := context.Background()
	old, _, err := s.EnsureUser(ctx, "old@readers.org")
	if err != nil {
		t.Fatal(err)
	}
	emails := []string{"old@READERS.org", " old@readers.org"}
	for i := range 620 {
		emails = append(emails, fmt.Sprintf("r%d@readers.org", i))
	}
	emails = append(emails, "r7@Readers.ORG")
	users, created, err := s.EnsureUsers(ctx, emails, store.NewUsers{Confirmed: true, Trial: 40})
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 621 || len(created) != 620 || users["old@readers.org"].ID != old.ID || created[old.ID] {
		t.Fatalf("%d users, %d created; old one %+v created %v", len(users), len(created), users["old@readers.org"], created[old.ID])
	}
	var rows int64
	if err := s.DB.Raw("SELECT COUNT(*) FROM users").Scan(&rows).Error; err != nil || rows != 621 {
		t.Fatalf("%d user rows (%v), want 621", rows, err)
	}
	for _, e := range []string{"old@readers.org", "r7@readers.org"} {
		u, err := s.UserByEmail(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		want := e != "old@readers.org"
		if (u.ConfirmedAt != nil) != want || u.TrialGranted != want || (u.Balance == 40) != want || users[e].ID != u.ID {
			t.Errorf("%s: %+v; want confirmed with a trial of 40: %v", e, u, want)
		}
	}
	var trials int64
	if err := s.DB.Raw("SELECT COUNT(*) FROM ledger_entries WHERE reason = 'trial credits' AND amount = 40 AND balance_after = 40").
		Scan(&trials).Error; err != nil || trials != 620 {
		t.Fatalf("%d trial grants (%v), want 620", trials, err)
	}
	again, made, err := s.EnsureUsers(ctx, emails[:10], store.NewUsers{})
	if err != nil || len(again) != 9 || len(made) != 0 {
		t.Fatalf("again: %d users, %d created, %v; want 9 found, none created", len(again), len(made), err)
	}
}

// TestEnsureNewFeeds: missing feeds are created with their title and
// count (more than one INSERT's worth), due for their first poll; a feed
// that exists is found and left as it is.
func TestEnsureNewFeeds(t *testing.T) {
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(pollT0)})
	ctx := context.Background()
	old, _, err := s.EnsureFeed(ctx, "https://old.feeds.org/f")
	if err != nil {
		t.Fatal(err)
	}
	nf := []store.NewFeed{{URL: old.URL, Title: "Not kept", Subscribers: 9}}
	for i := range 700 {
		nf = append(nf, store.NewFeed{URL: fmt.Sprintf("https://h%d.feeds.org/f", i), Title: fmt.Sprint("F", i), Subscribers: i % 3})
	}
	feeds, created, err := s.EnsureNewFeeds(ctx, nf)
	if err != nil {
		t.Fatal(err)
	}
	if len(feeds) != 701 || len(created) != 700 || created[old.ID] || feeds[old.URL].ID != old.ID {
		t.Fatalf("%d feeds, %d created (old one: %v)", len(feeds), len(created), created[old.ID])
	}
	for _, c := range []struct {
		url, title string
		subs       int
	}{{old.URL, "", 0}, {nf[5].URL, "F4", 1}, {nf[700].URL, "F699", 699 % 3}} {
		f, err := s.FeedByURL(ctx, c.url)
		if err != nil {
			t.Fatal(err)
		}
		if f.Title != c.title || f.SubscriberCount != c.subs || f.State != store.FeedActive || f.NextPollAt.After(pollT0) ||
			f.Host != store.HostOf(c.url) || !sameFeed(feeds[c.url], f) {
			t.Errorf("%s: stored %+v\nreturned %+v; want title %q, %d subscribers, active, due, with its host", c.url, f, feeds[c.url], c.title, c.subs)
		}
	}
}

// sameFeed reports whether a and b agree on what EnsureNewFeeds returns.
func sameFeed(a, b *store.Feed) bool {
	return a.ID == b.ID && a.URL == b.URL && a.Host == b.Host && a.Title == b.Title && a.State == b.State &&
		a.SubscriberCount == b.SubscriberCount && a.NextPollAt.Equal(b.NextPollAt) && a.PollReason == b.PollReason
}

// readersFixture is two people, one created by the import (fresh) and one
// who had an account and subscriptions before, and four feeds.
type readersFixture struct {
	s          *store.Store
	fresh, old *store.User
	feeds      []int64
}

func newReadersFixture(t *testing.T) readersFixture {
	t.Helper()
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(pollT0)})
	ctx := context.Background()
	old, _, err := s.EnsureUser(ctx, "old@readers.org")
	if err != nil {
		t.Fatal(err)
	}
	users, _, err := s.EnsureUsers(ctx, []string{"new@readers.org"}, store.NewUsers{})
	if err != nil {
		t.Fatal(err)
	}
	urls := []string{"https://h0.feeds.org/f", "https://h1.feeds.org/f", "https://h2.feeds.org/f", "https://h3.feeds.org/f"}
	feeds, err := s.EnsureFeeds(ctx, urls)
	if err != nil {
		t.Fatal(err)
	}
	fx := readersFixture{s: s, fresh: users["new@readers.org"], old: old}
	for _, u := range urls {
		fx.feeds = append(fx.feeds, feeds[u].ID)
	}
	return fx
}

// TestSubscribeReaders: for a fresh person every row is new and the
// feeds' counts are raised (but for a feed counted when it was created);
// for a person with an account, an active
// subscription is already there, a pending one is taken up when the
// import confirms it (and already there when it does not), an ended one
// is taken up; every count equals the active subscribers afterwards.
func TestSubscribeReaders(t *testing.T) {
	for _, c := range []struct {
		name, by    string
		wantAlready int
		wantState   string
		counted     int // what EnsureNewFeeds would have counted on f[3]
	}{
		{name: "confirmed", by: store.ConfirmedByOperator, wantAlready: 1, wantState: store.SubActive, counted: 2},
		{name: "pending", by: "", wantAlready: 2, wantState: store.SubPending},
	} {
		t.Run(c.name, func(t *testing.T) {
			fx := newReadersFixture(t)
			s, ctx, f := fx.s, context.Background(), fx.feeds
			if _, err := s.Subscribe(ctx, fx.old.ID, f[0], nil, true); err != nil { // active
				t.Fatal(err)
			}
			if _, err := s.Subscribe(ctx, fx.old.ID, f[1], nil, false); err != nil { // pending
				t.Fatal(err)
			}
			ended, err := s.Subscribe(ctx, fx.old.ID, f[2], nil, true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.EndSubscription(ctx, ended.ID, "test"); err != nil {
				t.Fatal(err)
			}
			if err := s.DB.Exec("UPDATE feeds SET subscriber_count = ? WHERE id = ?", c.counted, f[3]).Error; err != nil {
				t.Fatal(err)
			}
			var subs []store.ReaderSubscription
			for _, id := range f {
				subs = append(subs, store.ReaderSubscription{UserID: fx.fresh.ID, FeedID: id, Folder: "Imported"},
					store.ReaderSubscription{UserID: fx.old.ID, FeedID: id})
			}
			var already map[store.ReaderFeed]bool
			err = s.Tx(ctx, func(tx *store.Store) error {
				already, err = tx.SubscribeReaders(ctx, subs, c.by, map[int64]bool{fx.fresh.ID: true}, map[int64]bool{f[3]: true})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(already) != c.wantAlready || !already[store.ReaderFeed{UserID: fx.old.ID, FeedID: f[0]}] {
				t.Errorf("already %v, want %d of the old person's, the active one among them", already, c.wantAlready)
			}
			checkReaderSubs(t, s, fx, c.wantState)
		})
	}
}

// checkReaderSubs checks the fixture's subscriptions after
// SubscribeReaders: the fresh person's in state want and their folder,
// and each feed's count equal to its active subscribers.
func checkReaderSubs(t *testing.T, s *store.Store, fx readersFixture, want string) {
	t.Helper()
	ctx := context.Background()
	view, err := s.SubscriptionsOfUser(ctx, fx.fresh.ID)
	if err != nil || len(view) != len(fx.feeds) {
		t.Fatalf("%d subscriptions of the fresh person (%v), want %d", len(view), err, len(fx.feeds))
	}
	for _, v := range view {
		if v.State != want || v.Folder != "Imported" {
			t.Errorf("fresh person's subscription to %d: %s in %q, want %s in Imported", v.FeedID, v.State, v.Folder, want)
		}
	}
	for _, id := range fx.feeds {
		var active int64
		if err := s.DB.Raw("SELECT COUNT(*) FROM subscriptions WHERE feed_id = ? AND state = 'active'", id).Scan(&active).Error; err != nil {
			t.Fatal(err)
		}
		if n := storetest.Feed(t, s, id).SubscriberCount; int64(n) != active {
			t.Errorf("feed %d counts %d subscribers, %d are active", id, n, active)
		}
	}
}

// TestConfirmReaders: every person is confirmed and gets the trial credits
// once, on top of their balance; confirming again grants nothing more.
func TestConfirmReaders(t *testing.T) {
	fx := newReadersFixture(t)
	s, ctx := fx.s, context.Background()
	if _, _, err := s.AddLedgerEntry(ctx, fx.old.ID, store.LedgerGrant, 7, "gift-old", "gift"); err != nil {
		t.Fatal(err)
	}
	ids := []int64{fx.fresh.ID, fx.old.ID}
	for range 2 {
		if err := s.Tx(ctx, func(tx *store.Store) error { return tx.ConfirmReaders(ctx, ids, 50) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		id      int64
		balance int64
	}{{fx.fresh.ID, 50}, {fx.old.ID, 57}} {
		u, err := s.UserByID(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if u.ConfirmedAt == nil || !u.TrialGranted || u.Balance != c.balance {
			t.Errorf("user %d: confirmed %v, trial %v, balance %d; want confirmed, trial, %d", c.id, u.ConfirmedAt, u.TrialGranted, u.Balance, c.balance)
		}
		var trials int64
		if err := s.DB.Raw("SELECT COUNT(*) FROM ledger_entries WHERE user_id = ? AND idempotency_key = ? AND balance_after <= ?",
			c.id, store.TrialKey(c.id), c.balance).Scan(&trials).Error; err != nil {
			t.Fatal(err)
		}
		if trials != 1 {
			t.Errorf("user %d has %d trial grants, want 1", c.id, trials)
		}
	}
}
