package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// feedSite serves what the subscribe command meets: feeds at /feed, /other
// and /y (one undated post each), /dated (a post a day), a 404, an HTML page without feeds, a site page advertising one
// feed and one advertising two. It returns the base URL; commands reach it
// with FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1.
func feedSite(t *testing.T) string {
	t.Helper()
	rss := func(title string) string {
		return `<?xml version="1.0"?><rss version="2.0"><channel><title>` + title +
			`</title><link>https://blog.example.org/</link><item><guid>a</guid><title>A post</title></item></channel></rss>`
	}
	page := func(links string) string {
		return `<!doctype html><html><head><title>Blog</title>` + links + `</head><body>hello</body></html>`
	}
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		alt := func(path, title string) string {
			return fmt.Sprintf(`<link rel="alternate" type="application/rss+xml" title="%s" href="%s%s">`, title, ts.URL, path)
		}
		switch r.URL.Path {
		case "/feed", "/other", "/y":
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, rss("Feed "+r.URL.Path))
		case "/dated":
			// Ten posts, one a day, the newest an hour ago (real time:
			// the command runs on the real clock).
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, datedRSS("Daily posts", time.Now().Add(-time.Hour), 10))
		case "/nofeed.html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, page(""))
		case "/site":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, page(alt("/feed", "Posts")))
		case "/two":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, page(alt("/feed", "Posts")+alt("/other", "Comments")))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// datedRSS is an RSS feed of n posts a day apart, the newest at last.
func datedRSS(title string, last time.Time, n int) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>` + title + `</title>`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `<item><guid>d%d</guid><title>Post %d</title><pubDate>%s</pubDate></item>`,
			i, i, last.AddDate(0, 0, -i).Format(time.RFC1123Z))
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

// environOf turns a map of variables into "NAME=value" entries, as
// os.Environ gives them.
func environOf(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}
