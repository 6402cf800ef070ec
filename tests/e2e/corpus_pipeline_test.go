package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
	"github.com/feedmail/feedmail/poller"
)

// TestCorpusThroughPipeline serves every third-party feed file (feedparser's
// and feedvalidator's test cases, the JSON Feed set) over loopback HTTP and
// polls them all with the real poller into the store, each feed followed by an
// instant subscriber and already past its first poll, so every item goes
// through fetch → decode → parse → identity → ignore rules → the one
// transaction that writes items and outbox rows. Nothing may panic or fail at
// the store; UTF-16/32 documents must parse.
func TestCorpusThroughPipeline(t *testing.T) {
	root := testutil.CorpusDir(t)
	var files []string
	for _, dir := range []string{"feedparser/tests", "feedvalidator/testcases", "jsonfeed"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatalf("walk corpus: %v", err)
		}
	}
	if len(files) < 4000 {
		t.Fatalf("corpus has %d files, expected over 4,000", len(files))
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/c/"))
		if err != nil || i < 0 || i >= len(files) {
			http.NotFound(w, r)
			return
		}
		b, err := os.ReadFile(files[i])
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		ct := "application/xml"
		if strings.HasSuffix(files[i], ".json") {
			ct = "application/feed+json"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("ETag", fmt.Sprintf(`"%d"`, i))
		_, _ = w.Write(b)
	}))
	defer srv.Close()

	ctx := context.Background()
	st := storetest.Open(t, storetest.Options{})
	u, _, err := st.EnsureUser(ctx, "reader@example.com")
	if err != nil {
		t.Fatal(err)
	}
	feedFile := map[int64]string{}
	for i, f := range files {
		feed, _, err := st.EnsureFeed(ctx, fmt.Sprintf("%s/c/%d", srv.URL, i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Subscribe(ctx, u.ID, feed.ID, nil, true); err != nil {
			t.Fatal(err)
		}
		feedFile[feed.ID] = f
	}
	// Past the first poll: items found now are new, so they are delivered or
	// ignored by a rule rather than all recorded as "first poll".
	if err := st.DB.Exec("UPDATE feeds SET primed_at = ?, next_poll_at = ?", time.Now().UTC().Add(-time.Hour),
		time.Now().UTC().Add(-time.Minute)).Error; err != nil {
		t.Fatal(err)
	}

	p, err := poller.New(poller.Config{Store: st, Owner: "corpus", Concurrency: 8, MaxPerHost: 8,
		Fetch: fetcher.Config{AllowPrivate: true, Timeout: 20 * time.Second, BaseURL: "http://feedmail.test"}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(8 * time.Minute)
	for {
		n, err := p.PollDue(ctx)
		if err != nil {
			t.Fatalf("PollDue: %v", err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("corpus polls did not finish within 8 minutes")
		}
	}

	type row struct {
		FeedID  int64
		Outcome string
	}
	var polls []row
	if err := st.DB.Raw("SELECT feed_id, outcome FROM poll_log").Scan(&polls).Error; err != nil {
		t.Fatal(err)
	}
	outcome := map[int64]string{}
	for _, r := range polls {
		outcome[r.FeedID] = r.Outcome
	}
	counts := map[string]int{}
	wideFiles := 0
	for id, f := range feedFile {
		o, ok := outcome[id]
		if !ok {
			t.Errorf("%s was never polled", f)
			continue
		}
		counts[o]++
		if wide(f) {
			wideFiles++
			if o != "ok" {
				t.Errorf("UTF-16/32 document %s: outcome %q, want ok", f, o)
			}
		}
	}
	var items, ignored, emails int64
	st.DB.Model(&store.Item{}).Count(&items)
	st.DB.Model(&store.Item{}).Where("ignored_rule <> ''").Count(&ignored)
	st.DB.Model(&store.OutboxRow{}).Where("kind = ?", store.KindItem).Count(&emails)
	t.Logf("%d files polled (%d UTF-16/32): outcomes %v; %d items stored (%d ignored by a rule), %d emails queued",
		len(files), wideFiles, counts, items, ignored, emails)
	if wideFiles < 16 {
		t.Errorf("found %d UTF-16/32 documents in the corpus, expected 16", wideFiles)
	}
	if counts["ok"] < 3500 {
		t.Errorf("only %d of %d corpus files parsed as feeds", counts["ok"], len(files))
	}
	if items == 0 || emails == 0 || emails != items-ignored {
		t.Errorf("items %d, ignored %d, emails %d: every delivered item should be one queued email", items, ignored, emails)
	}
}

// wide reports whether a file is UTF-16 or UTF-32 (by BOM or NUL pattern).
func wide(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 4 {
		return false
	}
	for _, bom := range [][]byte{{0xFF, 0xFE}, {0xFE, 0xFF}, {0, 0, 0xFE, 0xFF}} {
		if bytes.HasPrefix(b, bom) {
			return true
		}
	}
	return b[0] == 0 || b[1] == 0
}
