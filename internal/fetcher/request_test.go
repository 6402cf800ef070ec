package fetcher

import (
	"errors"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestUserAgent(t *testing.T) {
	tests := []struct {
		base string
		n    int
		want string
	}{
		{"https://feedmail.example", 12, "feedmail/1 (+https://feedmail.example/bot; 12 subscribers)"},
		{"https://feedmail.example/", 1, "feedmail/1 (+https://feedmail.example/bot; 1 subscribers)"},
		{"http://127.0.0.1:8080", 0, "feedmail/1 (+http://127.0.0.1:8080/bot; 0 subscribers)"},
		{"https://x.example/sub/", -3, "feedmail/1 (+https://x.example/sub/bot; 0 subscribers)"},
	}
	for _, tt := range tests {
		if got := UserAgent(tt.base, tt.n); got != tt.want {
			t.Errorf("UserAgent(%q, %d) = %q, want %q", tt.base, tt.n, got, tt.want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{}.withDefaults()
	want := Config{Timeout: 30 * time.Second, MaxBytes: 10 << 20, MaxRedirects: 5, MaxConnsPerHost: 2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	if got := (Config{MaxRedirects: -1}).withDefaults().MaxRedirects; got != 0 {
		t.Fatalf("MaxRedirects -1 became %d, want 0 (no redirects)", got)
	}
}

func TestBuildRequest(t *testing.T) {
	cfg := Config{BaseURL: "https://feedmail.example"}
	const feed = "https://blog.example/feed.xml?format=rss"
	tests := []struct {
		name    string
		r       Request
		wantURL string
		wantINM string
		wantIMS string
		// wantAuth is the Authorization header (credentials in the URL).
		wantAuth string
	}{
		{
			name:    "validators for the same URL",
			r:       Request{URL: feed, ETag: `"abc"`, LastModified: "Sat, 01 Mar 2026 10:00:00 GMT", Subscribers: 7},
			wantURL: feed, wantINM: `"abc"`, wantIMS: "Sat, 01 Mar 2026 10:00:00 GMT",
		},
		{
			name:    "weak etag byte for byte",
			r:       Request{URL: feed, ETag: `W/"5f3c-1a2b"`},
			wantURL: feed, wantINM: `W/"5f3c-1a2b"`,
		},
		{
			name:    "odd validators byte for byte",
			r:       Request{URL: feed, ETag: `unquoted-etag;gzip`, LastModified: "Mon, 32 Foo 2024 99:99:99 XYZ"},
			wantURL: feed, wantINM: `unquoted-etag;gzip`, wantIMS: "Mon, 32 Foo 2024 99:99:99 XYZ",
		},
		{
			name:    "non-GMT Last-Modified is not reformatted",
			r:       Request{URL: feed, LastModified: "Sat, 01 Mar 2026 11:00:00 +0100"},
			wantURL: feed, wantIMS: "Sat, 01 Mar 2026 11:00:00 +0100",
		},
		{
			name:    "explicit ValidatorURL equal",
			r:       Request{URL: feed, ValidatorURL: feed, ETag: `"e"`},
			wantURL: feed, wantINM: `"e"`,
		},
		{
			name:    "validators from another URL are not sent",
			r:       Request{URL: feed, ValidatorURL: "https://blog.example/new-feed.xml", ETag: `"e"`, LastModified: "x"},
			wantURL: feed,
		},
		{
			name:    "host case and fragment do not matter for the match",
			r:       Request{URL: "https://Blog.Example/feed.xml#top", ValidatorURL: "https://blog.example/feed.xml", ETag: `"e"`},
			wantURL: "https://Blog.Example/feed.xml", wantINM: `"e"`,
		},
		{
			// As net/http's Client did: the fetcher makes requests with the
			// Transport, so it sends them itself.
			name:     "credentials in the URL go as Basic auth",
			r:        Request{URL: "https://reader:s3cret@blog.example/private.xml"},
			wantURL:  "https://reader:s3cret@blog.example/private.xml",
			wantAuth: "Basic cmVhZGVyOnMzY3JldA==",
		},
		{
			name:    "query is kept as is, nothing added",
			r:       Request{URL: "http://blog.example/?feed=rss2&x=%20y"},
			wantURL: "http://blog.example/?feed=rss2&x=%20y",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := BuildRequest(t.Context(), cfg, tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodGet || req.URL.String() != tt.wantURL {
				t.Errorf("%s %s, want GET %s", req.Method, req.URL, tt.wantURL)
			}
			want := http.Header{
				"User-Agent":      {UserAgent(cfg.BaseURL, tt.r.Subscribers)},
				"Accept":          {Accept},
				"Accept-Encoding": {"gzip, br"},
			}
			if tt.wantINM != "" {
				want["If-None-Match"] = []string{tt.wantINM}
			}
			if tt.wantIMS != "" {
				want["If-Modified-Since"] = []string{tt.wantIMS}
			}
			if tt.wantAuth != "" {
				want["Authorization"] = []string{tt.wantAuth}
			}
			if len(req.Header) != len(want) {
				t.Errorf("headers %v, want %v", req.Header, want)
			}
			for k, v := range want {
				if !slices.Equal(req.Header[k], v) {
					t.Errorf("%s: %q, want %q", k, req.Header[k], v)
				}
			}
			if req.Context() != t.Context() {
				t.Errorf("request does not carry the context")
			}
		})
	}
}

func TestBuildRequestBadURL(t *testing.T) {
	for _, raw := range []string{"", "feed.xml", "ftp://example.com/feed", "http://", "http://:80/", "https://exa mple.com/", "javascript:alert(1)", "file:///etc/passwd", "%zz"} {
		_, err := BuildRequest(t.Context(), Config{}, Request{URL: raw})
		if !errors.Is(err, ErrBadURL) || KindOf(err) != KindBadURL {
			t.Errorf("BuildRequest(%q): %v, want bad_url", raw, err)
		}
	}
}
