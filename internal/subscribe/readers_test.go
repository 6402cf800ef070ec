package subscribe

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

func TestCheckReaderAddress(t *testing.T) {
	cases := []struct {
		in, want, kind string
	}{
		{"alice@mail.org", "alice@mail.org", ""},
		{" Alice@Mail.ORG ", "Alice@mail.org", ""},
		{"a.b+tag@sub.mail-host.co.uk", "a.b+tag@sub.mail-host.co.uk", ""},
		{"alice@mail.org.", "", ProblemBadAddress},
		{"", "", ProblemBadAddress},
		{"alice", "", ProblemBadAddress},
		{"alice@", "", ProblemBadAddress},
		{"@mail.org", "", ProblemBadAddress},
		{"Alice <alice@mail.org>", "", ProblemBadAddress},
		{"alice mail@mail.org", "", ProblemBadAddress},
		{"alice@localhostonly", "", ProblemBadAddress},
		{"alice@[127.0.0.1]", "", ProblemBadAddress},
		{"alice@10.0.0.1", "", ProblemBadAddress},
		{"alice@-bad.org", "", ProblemBadAddress},
		{"alice@bad_host.org", "", ProblemBadAddress},
		{"alice@mail..org", "", ProblemBadAddress},
		{"alice@mail.123", "", ProblemBadAddress},
		{fmt.Sprintf("%065d@mail.org", 1), "", ProblemBadAddress},
		{"alice@example.com", "", ProblemDeadAddress},
		{"alice@news.example.org", "", ProblemDeadAddress},
		{"alice@host.invalid", "", ProblemDeadAddress},
		{"alice@shop.test", "", ProblemDeadAddress},
		{"alice@printer.local", "", ProblemDeadAddress},
	}
	for _, c := range cases {
		got, kind, why := CheckReaderAddress(c.in)
		if got != c.want || kind != c.kind || (kind != "") != (why != "") {
			t.Errorf("CheckReaderAddress(%q) = %q, %q, %q; want %q, %q and a reason with a problem", c.in, got, kind, why, c.want, c.kind)
		}
	}
}

// listsOf yields ls, then err when it is not nil.
func listsOf(err error, ls ...ReaderList) iter.Seq2[ReaderList, error] {
	return func(yield func(ReaderList, error) bool) {
		for _, l := range ls {
			if !yield(l, nil) {
				return
			}
		}
		if err != nil {
			yield(ReaderList{}, err)
		}
	}
}

func outlines(urls ...string) []opml.Outline {
	out := make([]opml.Outline, len(urls))
	for i, u := range urls {
		out[i] = opml.Outline{XMLURL: u, Title: fmt.Sprint("Feed ", i), Folder: "Moved"}
	}
	return out
}

// mixedLists is an import with one of every problem beside good lists:
// an account with a subscription, one whose mail bounces, a feed
// feedmail stopped polling.
func mixedLists(t *testing.T, svc *Service) iter.Seq2[ReaderList, error] {
	t.Helper()
	ctx := context.Background()
	had, _, err := svc.Store.EnsureUser(ctx, "had@mail.org")
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := svc.Store.EnsureFeed(ctx, "https://feeds.org/known")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Store.Subscribe(ctx, had.ID, f.ID, nil, true); err != nil {
		t.Fatal(err)
	}
	bounce, _, err := svc.Store.EnsureUser(ctx, "bounce@mail.org")
	if err != nil {
		t.Fatal(err)
	}
	gone, _, err := svc.Store.EnsureFeed(ctx, "https://feeds.org/gone")
	if err != nil {
		t.Fatal(err)
	}
	db := svc.Store.DB
	if err := errors.Join(db.Exec("UPDATE users SET bouncing_since = ? WHERE id = ?", svc.Clock.Now(), bounce.ID).Error,
		db.Exec("UPDATE feeds SET state = ? WHERE id = ?", store.FeedGone, gone.ID).Error); err != nil {
		t.Fatal(err)
	}
	return listsOf(nil,
		ReaderList{Email: "ann@mail.org", Source: "ann", Outlines: outlines("https://feeds.org/known", "feeds.org/new1")},
		ReaderList{Email: "had@mail.org", Source: "had", Outlines: outlines("https://feeds.org/known", "https://feeds.org/new2")},
		ReaderList{Email: "Ann+old@MAIL.org", Source: "ann again", Outlines: outlines("https://feeds.org/x")},
		ReaderList{Email: "bounce@mail.org", Source: "bounce", Outlines: outlines("https://feeds.org/x")},
		ReaderList{Email: "nobody@example.com", Source: "dead", Outlines: outlines("https://feeds.org/x")},
		ReaderList{Email: "not an address", Source: "bad", Outlines: outlines("https://feeds.org/x")},
		ReaderList{Email: "broken@mail.org", Source: "broken", Err: opml.ErrMalformed},
		ReaderList{Source: "nameless", Err: opml.ErrMalformed},
		ReaderList{Email: "cy@mail.org", Source: "cy", Outlines: outlines("https://feeds.org/new1", "mailto:x",
			"https://feeds.org/new1#top", "https://feeds.org/gone")},
		ReaderList{Email: "dee@mail.org", Source: "dee", Outlines: outlines("javascript:alert(1)")},
	)
}

// TestImportReadersMixed: every problem is reported with its kind and
// the rest is imported: accounts, subscriptions in their folders, feeds
// due for their first poll; with Confirmed nobody is emailed and each
// new person has the trial, without it each person with a subscription
// added gets one email. Batches of 2 make the writes span transactions.
func TestImportReadersMixed(t *testing.T) {
	for _, confirmed := range []bool{true, false} {
		t.Run(fmt.Sprint("confirmed=", confirmed), func(t *testing.T) {
			svc := newService(t)
			var problems []string
			sum, err := svc.ImportReaders(context.Background(), mixedLists(t, svc), ReadersOptions{Confirmed: confirmed, Batch: 2,
				Problem: func(p ReaderProblem) { problems = append(problems, p.Source+": "+p.Kind+" "+p.URL) }})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(problems)
			want := []string{"ann again: duplicate reader ", "bad: invalid address ", "bounce: dead address ",
				"broken: malformed list ", "cy: duplicate subscription https://feeds.org/new1", "cy: feed stopped https://feeds.org/gone",
				"cy: malformed feed URL mailto:x", "dead: dead address ", "dee: malformed feed URL javascript:alert(1)",
				"dee: malformed list ", "had: duplicate subscription https://feeds.org/known", "nameless: malformed list "}
			if !slices.Equal(problems, want) {
				t.Errorf("problems\n%q\nwant\n%q", problems, want)
			}
			wantSum := ReadersSummary{Lists: 10, Readers: 3, Created: 2, SkippedLists: 7, Added: 4, Already: 2, Failed: 3,
				Problems: len(want)}
			if !confirmed {
				wantSum.Notices = 3
			}
			if sum != wantSum {
				t.Errorf("summary %+v\nwant    %+v", sum, wantSum)
			}
			checkMixedStored(t, svc, confirmed)
		})
	}
}

// checkMixedStored checks what TestImportReadersMixed stored.
func checkMixedStored(t *testing.T, svc *Service, confirmed bool) {
	t.Helper()
	ctx := context.Background()
	state, balance, notices := store.SubPending, int64(0), 3
	if confirmed {
		state, balance, notices = store.SubActive, 500, 0
	}
	for _, c := range []struct {
		email string
		feeds []string
	}{
		{"ann@mail.org", []string{"https://feeds.org/known", "https://feeds.org/new1"}},
		{"cy@mail.org", []string{"https://feeds.org/new1"}},
	} {
		u, err := svc.Store.UserByEmail(ctx, c.email)
		if err != nil {
			t.Fatalf("%s: %v", c.email, err)
		}
		subs, err := svc.Store.SubscriptionsOfUser(ctx, u.ID)
		if err != nil || len(subs) != len(c.feeds) {
			t.Fatalf("%s: %d subscriptions (%v), want %d", c.email, len(subs), err, len(c.feeds))
		}
		for i, s := range subs {
			if s.FeedURL != c.feeds[i] || s.State != state || s.Folder != "Moved" {
				t.Errorf("%s: %s %s in %q, want %s %s in Moved", c.email, s.FeedURL, s.State, s.Folder, c.feeds[i], state)
			}
		}
		if u.Balance != balance || (u.ConfirmedAt != nil) != confirmed {
			t.Errorf("%s: balance %d confirmed %v, want %d %v", c.email, u.Balance, u.ConfirmedAt, balance, confirmed)
		}
	}
	for _, email := range []string{"dee@mail.org", "nobody@example.com", "broken@mail.org", "Ann+old@mail.org"} {
		if _, err := svc.Store.UserByEmail(ctx, email); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want no account", email, err)
		}
	}
	f, err := svc.Store.FeedByURL(ctx, "https://feeds.org/new1")
	if err != nil || f.NextPollAt.After(svc.Clock.Now()) || f.Title != "Feed 1" {
		t.Errorf("new feed %+v (%v), want due now, titled Feed 1", f, err)
	}
	if got := len(noticeSubjects(t, svc.Store)); got != notices {
		t.Errorf("%d notices queued, want %d", got, notices)
	}
}

// TestImportReadersInputError: an error of the input stops the import
// after what was read and is returned; what was read is written.
func TestImportReadersInputError(t *testing.T) {
	svc := newService(t)
	boom := errors.New("folder unreadable")
	sum, err := svc.ImportReaders(context.Background(), listsOf(boom,
		ReaderList{Email: "ann@mail.org", Outlines: outlines("https://feeds.org/a")}), ReadersOptions{Confirmed: true})
	if !errors.Is(err, boom) || sum.Added != 1 {
		t.Fatalf("summary %+v, %v; want 1 added and the input's error", sum, err)
	}
}

// TestImportReadersRoundTrips: a confirmed batch of 250 new people with 2
// new feeds each costs a fixed handful of round trips, each new row
// written once (no second pass confirming the people, crediting their
// trial, titling or counting the feeds), whatever the database.
func TestImportReadersRoundTrips(t *testing.T) {
	ctx := context.Background()
	var n atomic.Int64
	st, err := store.Open(ctx, storetest.FreshDSN(t, storetest.URL()), store.Options{OnStatement: func() { n.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	svc := newService(t)
	svc.Store = st
	var lists []ReaderList
	for i := range DefaultReadersBatch {
		lists = append(lists, ReaderList{Email: fmt.Sprintf("r%d@mail.org", i),
			Outlines: outlines(fmt.Sprintf("https://feeds.org/a%d", i), fmt.Sprintf("https://feeds.org/b%d", i))})
	}
	before := n.Load()
	sum, err := svc.ImportReaders(ctx, listsOf(nil, lists...), ReadersOptions{Confirmed: true})
	if err != nil || sum.Added != 2*DefaultReadersBatch {
		t.Fatalf("%+v, %v", sum, err)
	}
	// BEGIN, COMMIT; people: look up, insert, trial grants; feeds: look up,
	// insert; subscriptions: insert. SQLite's inserts are the same, split
	// into statements of about 1,000 parameters.
	most := int64(8)
	if !st.Postgres() {
		most = 26
	}
	if got := n.Load() - before; got > most {
		t.Errorf("%d round trips for one batch, want at most %d", got, most)
	}
}
