package poller_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/poller"
)

// rssDoc is an RSS head and the items guid → hours before now (newest
// first), as complete <item> elements, without the closing tags.
func rssDoc(now time.Time, items ...any) string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<rss version=\"2.0\">\n<channel>\n<title>Cut</title>\n<link>https://example.com/</link>\n")
	for i := 0; i+1 < len(items); i += 2 {
		guid, hours := items[i].(string), items[i+1].(int)
		fmt.Fprintf(&b, "<item><title>Post %s</title><guid>%s</guid><pubDate>%s</pubDate></item>\n",
			guid, guid, now.Add(-time.Duration(hours)*time.Hour).Format(time.RFC1123Z))
	}
	return b.String()
}

// TestPartialFeed polls a feed whose document is cut short (its complete
// new items are stored and mailed, the one cut short is not, and the poll
// is a success that says "partial"), then one whose item markup the parser
// cannot see (a success that warns, kept while the body stays the same).
func TestPartialFeed(t *testing.T) {
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	ctx := context.Background()
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, body.Load().(string))
	}))
	t.Cleanup(srv.Close)
	f := wkFollow(t, s, srv.URL+"/feed.xml", 2, 0)
	p := wkPoller(t, s, clk, "w", nil)
	// poll polls the feed an hour later and returns its report and row.
	poll := func() (*poller.Report, *store.Feed) {
		t.Helper()
		clk.Advance(time.Hour)
		rep, err := p.PollFeed(ctx, f.ID, "manual")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("outcome %q, warning %q, %d new, %d emails", rep.Outcome, rep.Warning, len(rep.NewItems), rep.Emails)
		return rep, wkFeed(t, s, f.ID)
	}
	lastLine := func() store.PollLog {
		t.Helper()
		lines, err := s.RecentPolls(ctx, f.ID, 1)
		if err != nil || len(lines) != 1 {
			t.Fatalf("poll_log: %v %v", lines, err)
		}
		return lines[0]
	}

	// First poll: two items, all seen, nothing mailed.
	body.Store(rssDoc(clk.Now(), "g2", 47, "g1", 48) + "</channel></rss>")
	poll()

	// Cut short: two new complete items and one cut in the middle.
	body.Store(rssDoc(clk.Now(), "g4", 1, "g3", 2, "g2", 48) + "<item><title>Half</title><guid>g-half</gu")
	rep, got := poll()
	const partial = "after 3 complete items without its closing tags (truncated?): 3 items kept, the one cut short ignored"
	if rep.Outcome != "partial" || !strings.Contains(rep.Warning, partial) || rep.Error != "" {
		t.Errorf("report: outcome %q, warning %q, error %q", rep.Outcome, rep.Warning, rep.Error)
	}
	if len(rep.NewItems) != 2 || rep.Emails != 4 {
		t.Errorf("report: %d new items, %d emails; want 2 items mailed to 2 subscribers", len(rep.NewItems), rep.Emails)
	}
	if n := wkCount(t, s, "items", "feed_id = ?", f.ID); n != 4 {
		t.Errorf("%d items stored, want g1–g4", n)
	}
	if n := wkCount(t, s, "items", "feed_id = ? AND guid LIKE ?", f.ID, "g-half%"); n != 0 {
		t.Error("the item cut short was stored")
	}
	if got.LastError != rep.Warning || got.ConsecutiveErrors != 0 || got.LastSuccessAt == nil || !got.LastSuccessAt.Equal(*got.LastPolledAt) {
		t.Errorf("feed: last_error %q, %d errors, last success %v", got.LastError, got.ConsecutiveErrors, got.LastSuccessAt)
	}
	if strings.Contains(got.PollReason, "penalty") {
		t.Errorf("a partial success was penalised: %q", got.PollReason)
	}
	if l := lastLine(); l.Outcome != "partial" || !strings.HasPrefix(l.Reason, "partial: the feed ends on line") ||
		!strings.Contains(l.Reason, "; "+got.PollReason) || l.NewItems != 2 {
		t.Errorf("poll_log line: %+v", l)
	}

	// An unclosed element swallows the items: ok, but with a warning.
	body.Store(strings.Replace(rssDoc(clk.Now(), "g6", 1, "g5", 2), "<item>", "<description>About us\n<item>", 1) + "</channel></rss>")
	rep, got = poll()
	const unseen = "the document has 2 <item> elements but the parser found none: the <description> element opened on line 6 is not closed"
	if !strings.HasPrefix(got.LastError, unseen) || got.ConsecutiveErrors != 0 || rep.Warning != got.LastError || rep.Outcome != "ok" {
		t.Errorf("feed: last_error %q, %d errors; report: outcome %q, warning %q", got.LastError, got.ConsecutiveErrors, rep.Outcome, rep.Warning)
	}
	if l := lastLine(); l.Outcome != "ok" || !strings.HasPrefix(l.Reason, "warning: "+unseen) {
		t.Errorf("poll_log line: %+v", l)
	}
	// The same body again: the warning still holds.
	if _, got = poll(); !strings.HasPrefix(got.LastError, unseen) {
		t.Errorf("an unchanged body dropped the warning: last_error %q", got.LastError)
	}
	// A sound document clears it.
	body.Store(rssDoc(clk.Now(), "g6", 1, "g5", 2) + "</channel></rss>")
	if _, got = poll(); got.LastError != "" {
		t.Errorf("a sound document kept last_error %q", got.LastError)
	}
	if l := lastLine(); l.Outcome != "ok" || strings.HasPrefix(l.Reason, "warning") || l.NewItems != 2 {
		t.Errorf("poll_log line: %+v", l)
	}
}
