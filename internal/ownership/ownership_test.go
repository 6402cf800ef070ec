package ownership

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/fetcher"
)

const tok = "feedmail-verify-0123456789abcdef0123456789abcdef"

func TestInFeedMetadata(t *testing.T) {
	tests := []struct {
		name string
		body string
		want bool
	}{
		{"rss channel link", `<rss><channel><title>B</title><link rel="feedmail-verify" href="` + tok + `"/><item><title>x</title></item></channel></rss>`, true},
		{"rss comment before items", `<rss><channel><!-- ` + tok + ` --><item/></channel></rss>`, true},
		{"atom feed element", `<feed><feedmail-verify>` + tok + `</feedmail-verify><entry/></feed>`, true},
		{"json feed top level", `{"version":"x","feedmail_verify":"` + tok + `","items":[]}`, true},
		{"only in a post", `<rss><channel><title>B</title><item><description>` + tok + `</description></item></channel></rss>`, false},
		{"only in an atom entry", `<feed><ENTRY><content>` + tok + `</content></ENTRY></feed>`, false},
		{"only in a json item", `{"items":[{"content_text":"` + tok + `"}]}`, false},
		{"no items at all", `<rss><channel>` + tok + `</channel></rss>`, true},
		{"another token", `<rss><channel>feedmail-verify-ffff</channel></rss>`, false},
	}
	for _, tt := range tests {
		if got := InFeedMetadata([]byte(tt.body), tok); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if InFeedMetadata([]byte("anything"), "") {
		t.Error("an empty token was found")
	}
}

func TestWellKnownURL(t *testing.T) {
	tests := map[string]string{
		"https://blog.example/feed.xml":    "https://blog.example/.well-known/feedmail-verify",
		"http://blog.example:8080/a/b?c=d": "http://blog.example:8080/.well-known/feedmail-verify",
		"ftp://blog.example/feed":          "",
		"/relative":                        "",
	}
	for in, want := range tests {
		if got := WellKnownURL(in); got != want {
			t.Errorf("WellKnownURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCheck fetches through the real fetcher (private networks allowed
// for the test server): the feed's metadata, then the well-known URL.
func TestCheck(t *testing.T) {
	feedBody, wellKnown := "", ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/feed":
			w.Write([]byte(feedBody))
		case WellKnownPath:
			if wellKnown == "" {
				http.NotFound(w, r)
				return
			}
			w.Write([]byte(wellKnown))
		}
	}))
	defer srv.Close()
	f := fetcher.New(fetcher.Config{AllowPrivate: true})
	ctx := context.Background()

	feedBody = `<rss><channel><!-- ` + tok + ` --><item/></channel></rss>`
	if how, err := Check(ctx, f, srv.URL+"/feed", tok); err != nil || how != InFeed {
		t.Errorf("token in the feed: %q %v", how, err)
	}
	feedBody = `<rss><channel><item><description>` + tok + `</description></item></channel></rss>`
	_, err := Check(ctx, f, srv.URL+"/feed", tok)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "answered 404") {
		t.Errorf("token only in a post: %v", err)
	}
	wellKnown = tok + "\n"
	if how, err := Check(ctx, f, srv.URL+"/feed", tok); err != nil || how != AtWellKnown {
		t.Errorf("token at the well-known URL: %q %v", how, err)
	}
	// Without AllowPrivate the guard refuses the loopback test server.
	if _, err := Check(ctx, fetcher.New(fetcher.Config{}), srv.URL+"/feed", tok); !errors.Is(err, ErrNotFound) ||
		!strings.Contains(err.Error(), "could not be fetched") {
		t.Errorf("private address: %v, want refused by the guard", err)
	}
}
