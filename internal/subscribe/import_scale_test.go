package subscribe

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/poller"
)

// TestImportPerHostDefaultIsThePollers: an import asks a host no more at
// once than the poller does.
func TestImportPerHostDefaultIsThePollers(t *testing.T) {
	if DefaultImportPerHost != poller.MaxInFlightPerHost {
		t.Fatalf("DefaultImportPerHost %d, poller.MaxInFlightPerHost %d", DefaultImportPerHost, poller.MaxInFlightPerHost)
	}
}

// importHosts starts one farm on each of n loopback addresses (127.0.0.1,
// 127.0.0.2, …): n hosts to the per-host limit, which tells hosts apart by
// name, not port.
func importHosts(t *testing.T, svc *Service, n int) []*farm.Farm {
	t.Helper()
	var out []*farm.Farm
	for i := range n {
		fm, err := farm.Listen(svc.Clock, fmt.Sprintf("127.0.0.%d:0", i+1))
		if err != nil {
			t.Skipf("loopback address 127.0.0.%d not available: %v", i+1, err)
		}
		t.Cleanup(fm.Close)
		out = append(out, fm)
	}
	return out
}

// TestImportManyFeedsOverHosts imports a list of a few hundred feeds over
// several hosts, one of which fails every request, with feeds the person
// already has and feeds the list repeats, through the poller's baseline:
// every good feed is added exactly once and baselined, the others are
// already there or failed with the reason, and no host ever had more
// requests in flight than the per-host limit, although the fetcher would
// allow more connections.
func TestImportManyFeedsOverHosts(t *testing.T) {
	svc := newService(t)
	svc.Fetch = fetcher.New(fetcher.Config{AllowPrivate: true, Timeout: 30 * time.Second, MaxConnsPerHost: 16})
	p, err := poller.New(poller.Config{Store: svc.Store, Clock: svc.Clock, Owner: "import-test",
		Fetch: fetcher.Config{AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	svc.Baseline = p
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const perHost, items = 60, 3
	farms := importHosts(t, svc, 5)
	good, bad := farms[:4], farms[4]
	var outlines []opml.Outline
	var goodURLs []string
	for i := range perHost {
		for _, fm := range good {
			// A little latency, so that a host's requests overlap.
			f := fm.AddFeed(farm.Spec{Format: farm.Format(i % 3), ItemCount: items, Latency: 2 * time.Millisecond})
			goodURLs = append(goodURLs, f.URL())
			outlines = append(outlines, opml.Outline{XMLURL: f.URL(), Folder: "Host " + fm.URL()[7:16]})
		}
		f := bad.AddFeed(farm.Spec{Status: http.StatusInternalServerError, Latency: 2 * time.Millisecond})
		outlines = append(outlines, opml.Outline{XMLURL: f.URL()})
	}
	u, _, err := svc.Store.EnsureUser(ctx, "many@example.com")
	if err != nil {
		t.Fatal(err)
	}
	// The person has the first 20 already; the list repeats the last 10.
	for _, url := range goodURLs[:20] {
		f, _, err := svc.Store.EnsureFeed(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Store.Subscribe(ctx, u.ID, f.ID, nil, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, url := range goodURLs[len(goodURLs)-10:] {
		outlines = append(outlines, opml.Outline{XMLURL: url})
	}

	rep, err := svc.ImportOPML(ctx, u, outlines, ImportOptions{Confirmed: true, StopOnError: true, Parallel: 16, Detailed: true})
	if err != nil {
		t.Fatal(err)
	}
	checkImportReport(t, rep, goodURLs, perHost)
	checkImportStore(t, svc, u.ID, goodURLs, items)
	fetched := 0
	for _, fm := range farms {
		if got := fm.MaxInFlight(); got > DefaultImportPerHost {
			t.Errorf("host %s had %d requests in flight at once, want at most %d", fm.URL(), got, DefaultImportPerHost)
		} else {
			t.Logf("host %s: at most %d requests in flight", fm.URL(), got)
		}
		fetched += len(fm.Requests())
	}
	// Each feed is fetched once; those the person has, and repeats, never.
	if want := len(goodURLs) - 20 + perHost; fetched != want {
		t.Errorf("%d requests to the hosts, want %d", fetched, want)
	}
}

// checkImportReport checks the report of TestImportManyFeedsOverHosts.
func checkImportReport(t *testing.T, rep ImportReport, goodURLs []string, perHost int) {
	t.Helper()
	added := map[string]int{}
	for _, r := range rep.Added {
		added[r.URL]++
	}
	for _, url := range goodURLs[20:] {
		if added[url] != 1 {
			t.Errorf("%s added %d times, want once", url, added[url])
		}
	}
	if len(rep.Added) != len(goodURLs)-20 {
		t.Errorf("%d added, want %d", len(rep.Added), len(goodURLs)-20)
	}
	already := map[string]bool{}
	for _, r := range rep.Already {
		already[r.URL] = true
	}
	for _, url := range append(goodURLs[:20:20], goodURLs[len(goodURLs)-10:]...) {
		if !already[url] {
			t.Errorf("%s not reported already there", url)
		}
	}
	if len(rep.Already) != 30 {
		t.Errorf("%d already there, want 30 (20 the person has, 10 the list repeats)", len(rep.Already))
	}
	if len(rep.Failed) != perHost {
		t.Errorf("%d failed, want the failing host's %d", len(rep.Failed), perHost)
	}
	for _, r := range rep.Failed {
		if !strings.Contains(r.Reason, "500") {
			t.Errorf("failed %s: reason %q, want it to say 500", r.URL, r.Reason)
		}
	}
}

// checkImportStore checks that the person has exactly one active
// subscription to every good feed and that each was baselined (its items
// recorded as seen, none queued).
func checkImportStore(t *testing.T, svc *Service, userID int64, goodURLs []string, items int) {
	t.Helper()
	ctx := context.Background()
	subs, err := svc.Store.SubscriptionsOfUser(ctx, userID)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range subs {
		count[s.FeedURL]++
		if s.State != "active" {
			t.Errorf("subscription to %s is %s, want active", s.FeedURL, s.State)
		}
	}
	for _, url := range goodURLs {
		if count[url] != 1 {
			t.Errorf("%d subscriptions to %s, want 1", count[url], url)
		}
	}
	if len(subs) != len(goodURLs) {
		t.Errorf("%d subscriptions, want %d", len(subs), len(goodURLs))
	}
	var seen, queued, counted int64
	db := svc.Store.DB.WithContext(ctx)
	if err := db.Raw("SELECT COUNT(*) FROM items").Scan(&seen).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Raw("SELECT COUNT(*) FROM outbox").Scan(&queued).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Raw("SELECT COUNT(*) FROM feeds WHERE subscriber_count = 1").Scan(&counted).Error; err != nil {
		t.Fatal(err)
	}
	// The 20 the person had were never fetched: no baseline for them.
	if want := int64((len(goodURLs) - 20) * items); seen != want || queued != 0 {
		t.Errorf("%d items seen and %d emails queued, want %d and 0", seen, queued, want)
	}
	if counted != int64(len(goodURLs)) {
		t.Errorf("%d feeds count one subscriber, want %d", counted, len(goodURLs))
	}
}
