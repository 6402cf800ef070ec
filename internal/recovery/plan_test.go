package recovery

import (
	"slices"
	"strings"
	"testing"
)

func TestURLHelpers(t *testing.T) {
	tests := []struct {
		fn   func(string) string
		name string
		in   string
		want string
	}{
		{normURL, "normURL", "HTTPS://Blog.Test:443#x", "https://blog.test/"},
		{normURL, "normURL", "ftp://blog.test/", ""},
		{toggleWWW, "toggleWWW", "https://blog.test/feed", "https://www.blog.test/feed"},
		{toggleWWW, "toggleWWW", "https://www.blog.test:8080/feed", "https://blog.test:8080/feed"},
		{toggleWWW, "toggleWWW", "https://www.co.uk/feed", ""},
		{func(u string) string { return domainOf(hostOf(u)) }, "domain", "https://a.b.example.co.uk/x", "example.co.uk"},
		{func(u string) string { return domainOf(hostOf(u)) }, "domain", "https://alice.github.io/x", "alice.github.io"},
		{func(u string) string { return domainOf(hostOf(u)) }, "domain", "http://127.0.0.1:8080/", "127.0.0.1"},
		{linkKey, "linkKey", "http://www.Blog.test/a/b/#c", "blog.test/a/b"},
		{linkKey, "linkKey", "https://blog.test/?p=3", "blog.test?p=3"},
		{func(u string) string { return strings.Join(dirs(u), " ") }, "dirs", "https://b.test/a/b/c.xml", "/a/b/ /a/"},
		{func(u string) string { return strings.Join(dirs(u), " ") }, "dirs", "https://b.test/blog/feed/", "/blog/"},
		{func(u string) string { return strings.Join(dirs(u), " ") }, "dirs", "https://b.test/feed/", ""},
	}
	for _, tt := range tests {
		if got := tt.fn(tt.in); got != tt.want {
			t.Errorf("%s(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

// urls returns the URLs of steps with their found-by, in order.
func urls(steps []step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.url+" | "+s.foundBy)
	}
	return out
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		k    Known
		want []string // a prefix of the plan, in order
		not  []string // URLs that must not be in the plan
	}{{
		name: "an http feed in a folder",
		k: Known{URL: "http://blog.test/blog/rss.xml", SiteURL: "http://blog.test/blog/", PermanentURL: "http://blog.test/blog/atom.xml",
			SelfURL: "http://blog.test/blog/rss.xml"},
		want: []string{
			"http://blog.test/blog/rss.xml | feed URL's page",
			"http://blog.test/blog/atom.xml | last permanent redirect",
			"http://blog.test/blog/rss.xml | self link",
			"http://blog.test/blog/ | site homepage",
			"http://blog.test/ | homepage",
			"https://blog.test/blog/rss.xml | https variant",
			"http://www.blog.test/blog/rss.xml | www variant",
			"https://www.blog.test/blog/rss.xml | https www variant",
			"https://blog.test/ | https homepage",
			"http://www.blog.test/ | www homepage",
			"http://blog.test/blog/ | parent path",
			"http://blog.test/blog/feed/ | WordPress path /feed/",
		},
	}, {
		name: "frozen: the old URL is not asked",
		k:    Known{URL: "https://blog.test/feed.xml", Frozen: true},
		want: []string{"https://blog.test/ | homepage", "https://www.blog.test/feed.xml | www variant"},
	}, {
		name: "YouTube: the channel's feed, no generic paths",
		k:    Known{URL: "https://www.youtube.com/feeds/videos.xml?user=someone", SiteURL: "https://www.youtube.com/channel/UCabcdefghijklmnopqrstuv"},
		want: []string{
			"https://www.youtube.com/feeds/videos.xml?user=someone | feed URL's page",
			"https://www.youtube.com/feeds/videos.xml?channel_id=UCabcdefghijklmnopqrstuv | YouTube channel feed",
			"https://www.youtube.com/user/someone | YouTube channel page",
		},
		not: []string{"https://www.youtube.com/", "https://www.youtube.com/feed/"},
	}, {
		name: "Medium: both forms of a user's feed",
		k:    Known{URL: "https://medium.com/feed/@ann", SiteURL: "https://medium.com/@ann"},
		want: []string{
			"https://medium.com/feed/@ann | feed URL's page",
			"https://medium.com/feed/@ann | Medium path /feed/@user",
			"https://ann.medium.com/feed | Medium path user.medium.com/feed",
		},
		not: []string{"https://medium.com/"},
	}}
	for _, tt := range tests {
		got := urls(plan(tt.k))
		if len(got) < len(tt.want) || !slices.Equal(got[:len(tt.want)], tt.want) {
			t.Errorf("%s: plan\n%s\nwant it to start with\n%s", tt.name, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
		}
		for _, n := range tt.not {
			for _, g := range got {
				if strings.HasPrefix(g, n+" |") {
					t.Errorf("%s: plan has %s", tt.name, g)
				}
			}
		}
	}
}
