package subscribe

import (
	"strings"
	"testing"
)

// TestNormalizeFeedURL: what the form and the commands accept as a web
// address; a malformed one (unknown or misspelled scheme, missing //, no
// host, an empty port) is "not a web address" before anything is fetched.
func TestNormalizeFeedURL(t *testing.T) {
	good := []struct{ in, want string }{
		{"example.com/blog", "https://example.com/blog"},
		{"https://example.com/feed", "https://example.com/feed"},
		{"HTTP://Example.com/feed", "http://Example.com/feed"},
		{"http://example.com/feed#top", "http://example.com/feed"},
		{"feed://example.com/rss", "http://example.com/rss"},
		{"feed:https://example.com/rss", "https://example.com/rss"},
		{"localhost:8080/feed", "https://localhost:8080/feed"},
		{"example.com:8080", "https://example.com:8080"},
		{"http://127.0.0.1:8080/feed", "http://127.0.0.1:8080/feed"},
		{"http://[::1]:8080/feed", "http://[::1]:8080/feed"},
		{"bücher.example/feed", "https://b%C3%BCcher.example/feed"},
		{"my_host.example.com/rss", "https://my_host.example.com/rss"},
		{"LOCALHOST/feed", "https://LOCALHOST/feed"},
		{"[::1]:8080/feed", "https://[::1]:8080/feed"},
		{"http://intranet/feed", "http://intranet/feed"},
	}
	for _, tc := range good {
		if got, msg := NormalizeFeedURL(tc.in); msg != "" || got != tc.want {
			t.Errorf("NormalizeFeedURL(%q) = %q, %q; want %q", tc.in, got, msg, tc.want)
		}
	}
	bad := []string{
		"htp:/bad",
		"htp://bad.example/feed",
		"htps://example.com/feed",
		"ftp://example.com/x",
		"http:/example.com/feed",
		"https:example.com/feed",
		"http//example.com/feed",
		"https//example.com/feed",
		"mailto:ann@example.com",
		"javascript:alert(1)",
		"http://",
		"http:///feed",
		"https://:443/feed",
		"example.com:/feed",
		"https://example.com:port/feed",
		"https://exa mple.com/feed",
		"https://ann@example.com/feed",
		"https://exa<mple.com/feed",
		"https://../feed",
		"notaurl",
		"notaurl/feed",
		"intranet:8080/feed",
		"feed:notaurl",
	}
	for _, in := range bad {
		if got, msg := NormalizeFeedURL(in); !strings.Contains(msg, "not a web address") {
			t.Errorf("NormalizeFeedURL(%q) = %q, %q; want not a web address", in, got, msg)
		}
	}
}
