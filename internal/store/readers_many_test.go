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
// worth, each address once however it is written) and told apart from
// the ones found.
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
	users, created, err := s.EnsureUsers(ctx, emails)
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
	again, made, err := s.EnsureUsers(ctx, emails[:10])
	if err != nil || len(again) != 9 || len(made) != 0 {
		t.Fatalf("again: %d users, %d created, %v; want 9 found, none created", len(again), len(made), err)
	}
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
	users, _, err := s.EnsureUsers(ctx, []string{"new@readers.org"})
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
// feeds' counts are raised; for a person with an account, an active
// subscription is already there, a pending one is taken up when the
// import confirms it (and already there when it does not), an ended one
// is taken up; every count equals the active subscribers afterwards.
func TestSubscribeReaders(t *testing.T) {
	for _, c := range []struct {
		name, by    string
		wantAlready int
		wantState   string
	}{
		{name: "confirmed", by: store.ConfirmedByOperator, wantAlready: 1, wantState: store.SubActive},
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
			var subs []store.ReaderSubscription
			for _, id := range f {
				subs = append(subs, store.ReaderSubscription{UserID: fx.fresh.ID, FeedID: id, Folder: "Imported"},
					store.ReaderSubscription{UserID: fx.old.ID, FeedID: id})
			}
			var already map[store.ReaderFeed]bool
			err = s.Tx(ctx, func(tx *store.Store) error {
				already, err = tx.SubscribeReaders(ctx, subs, c.by, map[int64]bool{fx.fresh.ID: true})
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
// once, the fresh one through the bulk path, the one with an account (and
// a balance) through GrantTrialOnce; confirming again grants nothing more.
func TestConfirmReaders(t *testing.T) {
	fx := newReadersFixture(t)
	s, ctx := fx.s, context.Background()
	if _, _, err := s.AddLedgerEntry(ctx, fx.old.ID, store.LedgerGrant, 7, "gift-old", "gift"); err != nil {
		t.Fatal(err)
	}
	ids := []int64{fx.fresh.ID, fx.old.ID}
	for range 2 {
		if err := s.Tx(ctx, func(tx *store.Store) error {
			return tx.ConfirmReaders(ctx, ids, map[int64]bool{fx.fresh.ID: true}, 50)
		}); err != nil {
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
