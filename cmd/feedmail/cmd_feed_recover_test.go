package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// moveRSS is an RSS document with posts first..last, a day apart and
// recent (post n is 10-n days old), so that the feed is never stale by the
// real clock the commands run on.
func moveRSS(first, last int) string {
	base := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -10).Add(9 * time.Hour)
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title><link>http://blog.example/</link>`)
	for i := last; i >= first; i-- {
		fmt.Fprintf(&b, `<item><title>Post %d</title><guid>post-%d</guid><pubDate>%s</pubDate></item>`,
			i, i, base.AddDate(0, 0, i).Format(time.RFC1123Z))
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

// TestFeedRecoverAndMoveCommands: `feed recover` and `feed move` say what
// is wrong in one line (exit 2 for the command line, 1 for an unknown
// feed, a target that is not a feed, a private address), call a healthy
// feed healthy, find a failing feed's new address and, with --apply or
// by `feed move`, move its readers; `feed status` then says "moved".
func TestFeedRecoverAndMoveCommands(t *testing.T) {
	var oldDown atomic.Bool
	mux := http.NewServeMux()
	rss := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, body)
		}
	}
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		if oldDown.Load() {
			http.NotFound(w, r)
			return
		}
		rss(moveRSS(1, 3))(w, r)
	})
	mux.HandleFunc("/other", rss(moveRSS(1, 3)))
	mux.HandleFunc("/new", rss(moveRSS(1, 4)))
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html><body>hello</body></html>") })
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><head><link rel="alternate" type="application/rss+xml" href="/new"></head><body>Blog</body></html>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	old, other, nu, page := srv.URL+"/old", srv.URL+"/other", srv.URL+"/new", srv.URL+"/page"

	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	guarded := cliFor(dsn, nil)
	for _, args := range [][]string{{"migrate"}, {"subscribe", "--email", "r@example.org", "--feed", old, "--confirmed"},
		{"subscribe", "--email", "s@example.org", "--feed", other, "--confirmed"}, {"poll", old}, {"poll", other}} {
		if code, out, errs := cli(args...); code != 0 {
			t.Fatalf("%q: exit %d\n%s%s", args, code, out, errs)
		}
	}
	bad := []struct {
		cli  func(...string) (int, string, string)
		args []string
		code int
		says string
	}{
		{cli, []string{"feed", "recover"}, 2, "give exactly one feed URL"},
		{cli, []string{"feed", "recover", "https://unknown.example/feed"}, 1, "no feed with URL"},
		{cli, []string{"feed", "move", "--from", old}, 2, "--from and --to are required"},
		{cli, []string{"feed", "move", "--from", old, "--to", old}, 2, "the same address"},
		{cli, []string{"feed", "move", "--from", "https://unknown.example/feed", "--to", nu}, 1, "no feed with URL"},
		{cli, []string{"feed", "move", "--from", old, "--to", page}, 1, "not a feed"},
		{cli, []string{"feed", "move", "--from", old, "--to", srv.URL + "/missing"}, 1, "404"},
		{guarded, []string{"feed", "move", "--from", old, "--to", nu}, 1, "private"},
	}
	for _, b := range bad {
		code, out, errs := b.cli(b.args...)
		lines := strings.Count(strings.TrimSpace(errs), "\n") + 1
		if code != b.code || !strings.Contains(out+errs, b.says) || (code != 0 && lines > 2) {
			t.Errorf("feedmail %q: exit %d, stdout %q, stderr %q; want exit %d saying %q in one line", b.args, code, out, errs, b.code, b.says)
		}
	}
	if code, out, errs := cli("feed", "recover", old); code != 0 || !strings.Contains(out, `"verdict": "healthy"`) {
		t.Errorf("recover a healthy feed: exit %d\n%s%s", code, out, errs)
	}

	oldDown.Store(true)
	if code, out, errs := cli("poll", old); code != 0 || !strings.Contains(out, `"status": 404`) {
		t.Fatalf("poll of the dead feed: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := cli("feed", "recover", old)
	if code != 0 || !strings.Contains(out, `"verdict": "moved"`) || !strings.Contains(out, `"to": "`+nu+`"`) ||
		!strings.Contains(out, `"posts_in_common": 3`) || !strings.Contains(out, `"applied": false`) {
		t.Fatalf("recover a failing feed: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := cli("feed", "recover", old, "--apply"); code != 0 || !strings.Contains(out, `"applied": true`) || !strings.Contains(out, `"readers": 1`) {
		t.Fatalf("recover --apply: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := cli("feed", "status", old); code != 0 || !strings.Contains(out, `"health": "moved"`) {
		t.Errorf("feed status after the move: exit %d\n%s", code, out)
	}

	code, out, errs = cli("feed", "move", "--from", other, "--to", nu)
	if code != 0 || !strings.Contains(out, `"moved": true`) || !strings.Contains(out, `"readers": 1`) || !strings.Contains(out, `"posts_in_common": 3`) {
		t.Fatalf("feed move: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := cli("feed", "status", nu); code != 0 || !strings.Contains(out, `"subscribers": 2`) {
		t.Errorf("the new feed after both moves: exit %d\n%s", code, out)
	}
}
