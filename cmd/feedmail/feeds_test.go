package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// feedSite serves what the subscribe command meets: feeds at /feed, /other
// and /y, a 404, an HTML page without feeds, a site page advertising one
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

// environOf turns a map of variables into "NAME=value" entries, as
// os.Environ gives them.
func environOf(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}
