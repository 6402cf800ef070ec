package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// seedDueFeeds inserts n active, subscribed feeds all due before now.
func seedDueFeeds(tb testing.TB, s *store.Store, n int, now time.Time) {
	tb.Helper()
	feeds := make([]store.Feed, 0, 1000)
	for i := 0; i < n; i++ {
		feeds = append(feeds, store.Feed{URL: fmt.Sprintf("https://h%d.example/feed/%d", i%97, i), State: store.FeedActive,
			SubscriberCount: 1, NextPollAt: now.Add(-time.Duration(i%600) * time.Second), CreatedAt: now, UpdatedAt: now})
		if len(feeds) == cap(feeds) || i == n-1 {
			if err := s.DB.CreateInBatches(feeds, 500).Error; err != nil {
				tb.Fatal(err)
			}
			feeds = feeds[:0]
		}
	}
}

// drain runs `claimers` goroutines claiming batches until nothing is due and
// returns how often each feed id was handed out. Each claimer passes the
// feeds it holds, as a poller does. Like a poller's pass, a round ends with
// every claimed feed written (due an hour later, lease cleared) and the
// hosts given back (Postgres holds a host for one owner at a time); rounds
// repeat until one claims nothing at all.
func drain(tb testing.TB, s *store.Store, claimers, batch int, now time.Time) map[int64]int {
	tb.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[int64]int{}
	for {
		var claimed []int64
		var wg sync.WaitGroup
		errs := make(chan error, claimers)
		owners := make([]map[string]bool, claimers)
		for c := range claimers {
			owners[c] = map[string]bool{}
			wg.Go(func() {
				owner := fmt.Sprintf("worker-%d", c)
				var held []int64
				busy := 0
				for {
					got, hosts, err := s.ClaimDueFeeds(ctx, owner, time.Minute, now, batch, held, time.Time{})
					if err != nil && store.Transient(err) && busy < 20 {
						// A SQLite file busy past its timeout on a loaded
						// machine: a poller's next pass tries again, so does
						// this claimer (nothing was claimed).
						busy++
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("%s after %d busy retries: %w", owner, busy, err)
						return
					}
					mu.Lock()
					for _, h := range hosts {
						owners[c][h.Host] = true
					}
					mu.Unlock()
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, f := range got {
						seen[f.ID]++
						claimed = append(claimed, f.ID)
						held = append(held, f.ID)
						owners[c][f.Host] = true
						if f.LeaseOwner != owner {
							errs <- fmt.Errorf("feed %d returned to %s but leased to %s", f.ID, owner, f.LeaseOwner)
						}
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			tb.Fatal(err)
		}
		if len(claimed) == 0 {
			return seen
		}
		if err := s.DB.Exec("UPDATE feeds SET next_poll_at = ?, lease_owner = '', lease_until = NULL WHERE id IN ?",
			now.Add(time.Hour), claimed).Error; err != nil {
			tb.Fatal(err)
		}
		for c, hosts := range owners {
			var names []string
			for h := range hosts {
				names = append(names, h)
			}
			if err := s.ReleaseHosts(ctx, fmt.Sprintf("worker-%d", c), names); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

func TestEightClaimersClaimEachFeedOnce(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(now), MaxOpenConns: 12})
	const n = 10000
	seedDueFeeds(t, s, n, now)
	// A feed with no subscribers and a gone feed must never be claimed.
	if err := s.DB.Create(&[]store.Feed{
		{URL: "https://x.example/unsubscribed", State: store.FeedActive, NextPollAt: now.Add(-time.Hour), CreatedAt: now, UpdatedAt: now},
		{URL: "https://x.example/gone", State: store.FeedGone, SubscriberCount: 3, NextPollAt: now.Add(-time.Hour), CreatedAt: now, UpdatedAt: now},
	}).Error; err != nil {
		t.Fatal(err)
	}

	seen := drain(t, s, 8, 37, now)
	if len(seen) != n {
		t.Fatalf("claimed %d distinct feeds, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("feed %d claimed %d times", id, c)
		}
	}
}

// A holder that dies (claims, never writes, never gives its hosts back)
// keeps its feeds from everyone until its leases run out; then every feed
// is claimable again, once.
func TestClaimsOfADeadHolderExpire(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(now), MaxOpenConns: 12})
	const n = 300
	seedDueFeeds(t, s, n, now)
	ctx := context.Background()
	var held []int64
	for {
		got, _, err := s.ClaimDueFeeds(ctx, "dead", time.Minute, now, 100, held, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, f := range got {
			held = append(held, f.ID)
		}
	}
	if len(held) != n {
		t.Fatalf("the holder claimed %d feeds, want %d", len(held), n)
	}
	// While the leases hold, nothing is due.
	if got, _, err := s.ClaimDueFeeds(ctx, "late", time.Minute, now.Add(30*time.Second), 10, nil, time.Time{}); err != nil || len(got) != 0 {
		t.Fatalf("claimed %d held feeds (err %v)", len(got), err)
	}
	again := drain(t, s, 8, 40, now.Add(61*time.Second))
	if len(again) != n {
		t.Fatalf("after lease expiry %d feeds claimable, want %d", len(again), n)
	}
	for id, c := range again {
		if c != 1 {
			t.Fatalf("feed %d claimed %d times", id, c)
		}
	}
}

func TestClaimFeedRespectsOtherLease(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(now)})
	ctx := context.Background()
	f, _, err := s.EnsureFeed(ctx, "https://example.com/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Subscribe(ctx, mustUser(t, s), f.ID, nil, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimFeedForPoll(ctx, f.ID, "a", time.Minute, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimFeedForPoll(ctx, f.ID, "b", time.Minute, now.Add(10*time.Second)); err == nil {
		t.Fatal("b claimed a feed a holds")
	}
	// The due feed claimed by id has left the due set: no other worker's
	// due-feed claim can fetch it a second time meanwhile.
	if got, _, err := s.ClaimDueFeeds(ctx, "c", time.Minute, now.Add(10*time.Second), 10, nil, time.Time{}); err != nil || len(got) != 0 {
		t.Fatalf("ClaimDueFeeds handed out a feed claimed by id: %d feeds, %v", len(got), err)
	}
	if _, err := s.ClaimFeedForPoll(ctx, f.ID, "b", time.Minute, now.Add(61*time.Second)); err != nil {
		t.Fatalf("expired lease not claimable: %v", err)
	}
}

func TestSpreadOverdueFeeds(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(now)})
	seedDueFeeds(t, s, 500, now.Add(-2*time.Hour))
	// The 500 were polled before the downtime; 100 more were added during
	// it (an import) and never polled: their first poll is not spread.
	if err := s.DB.Exec("UPDATE feeds SET last_polled_at = ?", now.Add(-3*time.Hour)).Error; err != nil {
		t.Fatal(err)
	}
	fresh := make([]store.Feed, 100)
	for i := range fresh {
		fresh[i] = store.Feed{URL: fmt.Sprintf("https://new%d.example/feed", i%7) + fmt.Sprint(i), State: store.FeedActive,
			SubscriberCount: 1, NextPollAt: now.Add(-time.Hour), CreatedAt: now, UpdatedAt: now}
	}
	if err := s.DB.Create(&fresh).Error; err != nil {
		t.Fatal(err)
	}
	moved, err := s.SpreadOverdueFeeds(context.Background(), now, time.Minute, 10*time.Minute)
	if err != nil || moved != 500 {
		t.Fatalf("moved %d, %v; want the 500 polled before", moved, err)
	}
	var feeds []store.Feed
	if err := s.DB.Find(&feeds).Error; err != nil {
		t.Fatal(err)
	}
	perMinute := map[int]int{}
	for _, f := range feeds {
		d := f.NextPollAt.Sub(now)
		if f.LastPolledAt == nil {
			if !f.NextPollAt.Equal(now.Add(-time.Hour)) {
				t.Errorf("never-polled feed %d moved to %v: its first poll must not wait for the spread", f.ID, f.NextPollAt)
			}
			continue
		}
		if d < 0 || d >= 10*time.Minute {
			t.Fatalf("feed %d moved to %v (offset %v)", f.ID, f.NextPollAt, d)
		}
		perMinute[int(d/time.Minute)]++
	}
	for m, c := range perMinute {
		if c > 2*500/10 {
			t.Errorf("minute %d holds %d of 500 feeds", m, c)
		}
	}
	if again, _ := s.SpreadOverdueFeeds(context.Background(), now, time.Minute, 10*time.Minute); again != 0 {
		t.Errorf("a second spread moved %d feeds again", again)
	}
}

// TestSpreadOverdueFeedsNotWhilePolling: a process starting while others
// poll (a restart, a crash loop) leaves the overdue feeds where they are,
// to be claimed oldest first; only after downtime (no poll within grace)
// does it spread them.
func TestSpreadOverdueFeedsNotWhilePolling(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		lastPolled time.Time // of one feed
		wantMoved  int64
	}{
		{"another process polled 10 s ago", now.Add(-10 * time.Second), 0},
		{"the last poll was before the downtime", now.Add(-2 * time.Hour), 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(now)})
			seedDueFeeds(t, s, 100, now.Add(-30*time.Minute))
			var first store.Feed
			if err := s.DB.Order("id").First(&first).Error; err != nil {
				t.Fatal(err)
			}
			// Every feed was polled before the downtime (feeds never
			// polled are not spread); the recently polled one is overdue
			// again: it counts among the feeds to move after downtime.
			if err := s.DB.Model(&store.Feed{}).Where("1 = 1").Update("last_polled_at", now.Add(-3*time.Hour)).Error; err != nil {
				t.Fatal(err)
			}
			if err := s.DB.Model(&store.Feed{}).Where("id = ?", first.ID).Update("last_polled_at", tt.lastPolled).Error; err != nil {
				t.Fatal(err)
			}
			moved, err := s.SpreadOverdueFeeds(context.Background(), now, time.Minute, 10*time.Minute)
			if err != nil || moved != tt.wantMoved {
				t.Fatalf("moved %d feeds (%v), want %d", moved, err, tt.wantMoved)
			}
			var late int64
			if err := s.DB.Model(&store.Feed{}).Where("next_poll_at < ?", now).Count(&late).Error; err != nil {
				t.Fatal(err)
			}
			if want := 100 - tt.wantMoved; late != want {
				t.Errorf("%d feeds still overdue, want %d", late, want)
			}
		})
	}
}

// BenchmarkClaim measures claims per second: 8 claimers draining 100,000 due
// feeds in batches of 100 (Postgres).
func BenchmarkClaim(b *testing.B) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	s := storetest.OpenPostgres(b, storetest.Options{Clock: clock.NewFake(now), MaxOpenConns: 12})
	const n = 100000
	seedDueFeeds(b, s, n, now)
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := s.DB.Exec("UPDATE feeds SET lease_owner = '', lease_until = NULL, next_poll_at = ?", now.Add(-time.Minute)).Error; err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		seen := drain(b, s, 8, 100, now)
		total += time.Since(start)
		if len(seen) != n {
			b.Fatalf("claimed %d of %d", len(seen), n)
		}
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "claims/s")
}

func mustUser(t *testing.T, s *store.Store) int64 {
	t.Helper()
	u, _, err := s.EnsureUser(context.Background(), "someone@example.com")
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}

// On Postgres a feed is claimed only with its host: while one owner holds a
// host, another claimer gets none of that host's feeds (but those of other
// hosts); the host comes free when the holder releases it or its lease runs
// out.
func TestClaimDueFeedsLeasesHosts(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	s := storetest.OpenPostgres(t, storetest.Options{Clock: clock.NewFake(now)})
	ctx := context.Background()
	createDueFeeds(t, s, now, 6, func(i int) (string, time.Duration) {
		return fmt.Sprintf("https://H%d.Example./feed/%d", i%2, i), time.Duration(i+1) * time.Minute
	})
	hostsOf := func(fs []store.Feed) map[string]int {
		m := map[string]int{}
		for _, f := range fs {
			m[f.Host]++
		}
		return m
	}
	// h1 is backed off: the claim hands its row over with the feeds, so the
	// poller gives them back without asking.
	if err := s.BackOffHost(ctx, "h1.example", now.Add(time.Hour), "429 from test"); err != nil {
		t.Fatal(err)
	}
	// a takes the two oldest due feeds: one of each host, and both hosts.
	a, ah, err := s.ClaimDueFeeds(ctx, "a", time.Minute, now, 2, nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got := hostsOf(a); got["h0.example"] != 1 || got["h1.example"] != 1 {
		t.Fatalf("a claimed %v; want one feed of each host (host keys lower case, no trailing dot)", got)
	}
	if len(ah) != 2 || ah[0].Host != "h0.example" || ah[1].Host != "h1.example" {
		t.Fatalf("a leased hosts %+v, want h0.example and h1.example", ah)
	}
	if h := ah[1]; h.BackoffUntil == nil || !h.BackoffUntil.Equal(now.Add(time.Hour)) || h.BackoffReason != "429 from test" ||
		h.LeaseOwner != "a" || h.LeaseUntil == nil || !h.LeaseUntil.Equal(now.Add(time.Minute)) {
		t.Fatalf("h1's row as claimed: %+v, want its back-off and a's lease", h)
	}
	if ah[0].BackoffUntil != nil {
		t.Fatalf("h0's row as claimed: %+v, want no back-off", ah[0])
	}
	held := []int64{a[0].ID, a[1].ID}
	// b finds every remaining due feed behind a host a holds.
	if b, _, err := s.ClaimDueFeeds(ctx, "b", time.Minute, now, 10, nil, time.Time{}); err != nil || len(b) != 0 {
		t.Fatalf("b claimed %d feeds (%v) of hosts a holds", len(b), err)
	}
	// a may claim more of its hosts' feeds, but not the ones it holds.
	more, _, err := s.ClaimDueFeeds(ctx, "a", time.Minute, now, 10, held, time.Time{})
	if err != nil || len(more) != 4 {
		t.Fatalf("a claimed %d more feeds (%v), want 4", len(more), err)
	}
	for _, f := range more {
		held = append(held, f.ID)
	}
	if again, _, err := s.ClaimDueFeeds(ctx, "a", time.Minute, now, 10, held, time.Time{}); err != nil || len(again) != 0 {
		t.Fatalf("a was handed %d feeds (%v) it holds already", len(again), err)
	}
	// Only the holder may write: b holds nothing.
	if ok, err := s.DeferFeed(ctx, a[0].ID, "b", now.Add(time.Hour), ""); err != nil || ok {
		t.Fatalf("b gave back a feed of a's host: %v %v", ok, err)
	}
	// After the leases ran out (a died), b takes the hosts and every feed.
	later := now.Add(61 * time.Second)
	b, _, err := s.ClaimDueFeeds(ctx, "b", time.Minute, later, 10, nil, time.Time{})
	if err != nil || len(b) != 6 {
		t.Fatalf("b claimed %d feeds (%v) after a's leases ran out, want 6", len(b), err)
	}
	var hosts []store.Host
	if err := s.DB.Order("host").Find(&hosts).Error; err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if h.LeaseOwner != "b" || h.LeaseUntil == nil || !h.LeaseUntil.Equal(later.Add(time.Minute)) {
			t.Errorf("host %s leased to %q until %v; want b until %v", h.Host, h.LeaseOwner, h.LeaseUntil, later.Add(time.Minute))
		}
	}
	// a, which lost its hosts, can no longer write; b can.
	if ok, err := s.DeferFeed(ctx, a[0].ID, "a", later.Add(time.Hour), ""); err != nil || ok {
		t.Fatalf("a wrote a feed after losing its host: %v %v", ok, err)
	}
	if ok, err := s.DeferFeed(ctx, a[0].ID, "b", later.Add(time.Hour), ""); err != nil || !ok {
		t.Fatalf("b could not write a feed it holds: %v %v", ok, err)
	}
	// Nobody else may claim by id a due feed of a host b holds: b's pass may
	// be fetching it. A feed that is not due is not being polled.
	if _, err := s.ClaimFeedForPoll(ctx, b[1].ID, "x", time.Minute, later); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("x claimed a due feed of b's host by id: %v", err)
	}
	if _, err := s.ClaimFeedForPoll(ctx, a[0].ID, "x", time.Minute, later); err != nil {
		t.Fatalf("x could not claim a feed that is not due: %v", err)
	}
	// Hosts given back are free at once: c takes the feeds still due.
	if err := s.ReleaseHosts(ctx, "b", []string{"h0.example", "h1.example"}); err != nil {
		t.Fatal(err)
	}
	c, _, err := s.ClaimDueFeeds(ctx, "c", time.Minute, later, 10, nil, time.Time{})
	if err != nil || len(c) != 5 {
		t.Fatalf("c claimed %d feeds (%v) after b gave the hosts back, want 5", len(c), err)
	}
	// A ping of a due feed whose host is held finds a poll in progress and
	// is queued for that poll's write (which would overwrite a "due now" set
	// here); once the host is free it is taken at once.
	if r, err := s.PingFeed(ctx, &c[0], later, 0); err != nil || r != store.PingQueued {
		t.Fatalf("ping while c holds the host: %v %v, want queued", r, err)
	}
	if err := s.ReleaseHosts(ctx, "c", []string{"h0.example", "h1.example"}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.PingFeed(ctx, &c[0], later, 0); err != nil || r != store.PingScheduled {
		t.Fatalf("ping of a free feed: %v %v, want scheduled", r, err)
	}
}

// A claim with after takes only feeds due at or after it (a pass's later
// claims start where the previous one ended); the older ones wait for a
// claim without it.
func TestClaimDueFeedsStartsAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(now)})
	ctx := context.Background()
	feeds := createDueFeeds(t, s, now, 4, func(i int) (string, time.Duration) {
		return fmt.Sprintf("https://example.com/feed/%d", i), time.Duration(4-i) * time.Minute
	})
	ids := func(fs []store.Feed) []int64 {
		var out []int64
		for _, f := range fs {
			out = append(out, f.ID)
		}
		slices.Sort(out)
		return out
	}
	got, _, err := s.ClaimDueFeeds(ctx, "a", time.Minute, now, 10, nil, now.Add(-2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{feeds[2].ID, feeds[3].ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("claim after -2 min got feeds %v, want %v (due -2 and -1 min)", ids(got), want)
	}
	rest, _, err := s.ClaimDueFeeds(ctx, "a", time.Minute, now, 10, ids(got), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{feeds[0].ID, feeds[1].ID}; !slices.Equal(ids(rest), want) {
		t.Fatalf("claim from the start got feeds %v, want %v", ids(rest), want)
	}
}

// createDueFeeds stores n active feeds with one subscriber; feed i has the
// URL and is overdue by the duration that spec(i) gives.
func createDueFeeds(t *testing.T, s *store.Store, now time.Time, n int, spec func(i int) (string, time.Duration)) []store.Feed {
	t.Helper()
	feeds := make([]store.Feed, n)
	for i := range feeds {
		url, overdue := spec(i)
		feeds[i] = store.Feed{URL: url, State: store.FeedActive, SubscriberCount: 1, NextPollAt: now.Add(-overdue),
			CreatedAt: now, UpdatedAt: now}
	}
	if err := s.DB.Create(&feeds).Error; err != nil {
		t.Fatal(err)
	}
	return feeds
}

// FillFeedHosts sets the host of rows stored before feeds.host existed.
func TestFillFeedHosts(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(now)})
	ctx := context.Background()
	for _, u := range []string{"https://A.example:8443/f", "http://[::1]/x", "not a url at all"} {
		if _, _, err := s.EnsureFeed(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DB.Exec("UPDATE feeds SET host = ''").Error; err != nil {
		t.Fatal(err)
	}
	n, err := s.FillFeedHosts(ctx)
	if err != nil || n != 2 {
		t.Fatalf("filled %d (%v), want 2", n, err)
	}
	for u, want := range map[string]string{"https://A.example:8443/f": "a.example", "http://[::1]/x": "::1", "not a url at all": ""} {
		f, err := s.FeedByURL(ctx, u)
		if err != nil || f.Host != want {
			t.Errorf("%s: host %q (%v), want %q", u, f.Host, err, want)
		}
	}
	if n, err := s.FillFeedHosts(ctx); err != nil || n != 0 {
		t.Errorf("second fill set %d (%v), want 0", n, err)
	}
}

// TestSpreadOverdueFeedsOldestFirst: after downtime the spread keeps the
// order in which the feeds came due, so that the oldest due are polled
// first (an id hash sent some of the oldest to the back of the window).
func TestSpreadOverdueFeedsOldestFirst(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		due  func(i int) time.Time // feed i's due time (ids ascending with i)
	}{
		{"due in id order", func(i int) time.Time { return now.Add(-time.Hour + time.Duration(i)*time.Minute) }},
		{"due against id order", func(i int) time.Time { return now.Add(-time.Duration(i+2) * time.Minute) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := storetest.Open(t, storetest.Options{Clock: clock.NewFake(now)})
			seedDueFeeds(t, s, 40, now)
			var feeds []store.Feed
			if err := s.DB.Order("id").Find(&feeds).Error; err != nil {
				t.Fatal(err)
			}
			was := map[int64]time.Time{}
			for i, f := range feeds {
				was[f.ID] = tt.due(i)
				if err := s.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Updates(map[string]any{
					"next_poll_at": tt.due(i), "last_polled_at": now.Add(-2 * time.Hour)}).Error; err != nil {
					t.Fatal(err)
				}
			}
			if moved, err := s.SpreadOverdueFeeds(context.Background(), now, time.Minute, 10*time.Minute); err != nil || moved != 40 {
				t.Fatalf("moved %d, %v; want 40", moved, err)
			}
			if err := s.DB.Find(&feeds).Error; err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(feeds, func(a, b store.Feed) int { return was[a.ID].Compare(was[b.ID]) })
			for i, f := range feeds {
				if d := f.NextPollAt.Sub(now); d < 0 || d >= 10*time.Minute {
					t.Fatalf("feed %d moved to %v (offset %v), want within the window", f.ID, f.NextPollAt, d)
				}
				if i > 0 && f.NextPollAt.Before(feeds[i-1].NextPollAt) {
					t.Fatalf("feed %d (due %v) now due %v, before feed %d (due earlier, %v, now %v)",
						f.ID, was[f.ID], f.NextPollAt, feeds[i-1].ID, was[feeds[i-1].ID], feeds[i-1].NextPollAt)
				}
			}
			if last := feeds[len(feeds)-1].NextPollAt.Sub(now); last < 9*time.Minute {
				t.Errorf("the youngest due feed moved to +%v: the spread should use the window", last)
			}
		})
	}
}
