package recovery

import (
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/newitems"
)

func TestVerdict(t *testing.T) {
	tests := []struct {
		name string
		e    evidence
		want string
	}{
		{"posts in common", evidence{items: 5, postsInCommon: 3}, Same},
		{"same site, nothing in common", evidence{items: 5}, Probably},
		{"temporary redirect, even with posts in common", evidence{temporary: true, items: 5, postsInCommon: 5}, "rejected: reached through a temporary redirect"},
		{"another site, even with posts in common", evidence{otherSite: true, items: 5, postsInCommon: 5}, "rejected: another site"},
		{"http self link without posts in common", evidence{selfLink: true, downgrade: true, items: 5}, "rejected: self link to http without posts in common"},
		{"http self link with posts in common", evidence{selfLink: true, downgrade: true, items: 5, postsInCommon: 2}, Same},
		{"its site link elsewhere, nothing in common", evidence{siteElsewhere: true, items: 5}, "rejected: another site"},
		{"its site link elsewhere, posts in common", evidence{siteElsewhere: true, items: 5, postsInCommon: 1}, Same},
		{"empty feed", evidence{}, "rejected: no posts"},
		{"frozen: in common and newer", evidence{frozen: true, newer: true, items: 5, postsInCommon: 4}, Same},
		{"frozen: in common, nothing newer", evidence{frozen: true, items: 5, postsInCommon: 4}, "rejected: no newer posts"},
		{"frozen: same site, newer", evidence{frozen: true, newer: true, items: 5}, Probably},
		{"frozen: same site, older", evidence{frozen: true, items: 5}, "rejected: no newer posts"},
		{"shared platform, other title", evidence{sharedHost: true, items: 5}, "rejected: another publisher on a shared platform"},
		{"shared platform, same title", evidence{sharedHost: true, sameTitle: true, items: 5}, Probably},
		{"shared platform, posts in common", evidence{sharedHost: true, items: 5, postsInCommon: 1}, Same},
	}
	for _, tt := range tests {
		if got := verdict(tt.e); got != tt.want {
			t.Errorf("%s: verdict(%+v) = %q, want %q", tt.name, tt.e, got, tt.want)
		}
	}
}

func TestPostsInCommon(t *testing.T) {
	day := time.Date(2024, 3, 2, 10, 0, 0, 0, time.UTC)
	old := []KnownItem{
		{GUID: "tag:blog.test,2024:1", Link: "https://blog.test/a", Title: "First post", Published: day},
		{GUID: "http://blog.test/?p=2", Link: "http://www.blog.test/b/", Title: "Second: the sequel!", Published: day.Add(-48 * time.Hour)},
		{Title: "Untitled day", Published: day.Add(-96 * time.Hour)},
	}
	tests := []struct {
		name  string
		items []newitems.Item
		want  int
	}{
		{"same GUID", []newitems.Item{{GUID: "tag:blog.test,2024:1"}}, 1},
		{"GUID a URL, respelled", []newitems.Item{{GUID: "https://blog.test/?p=2"}}, 1},
		{"link without scheme, www or slash", []newitems.Item{{Link: "https://blog.test/b"}}, 1},
		{"link with another query", []newitems.Item{{Link: "https://blog.test/b?x=1"}}, 0},
		{"title and day", []newitems.Item{{GUID: "uuid-9", Title: "second — THE sequel", Published: day.Add(-44 * time.Hour)}}, 1},
		{"title, another day", []newitems.Item{{GUID: "uuid-9", Title: "First post", Published: day.Add(30 * 24 * time.Hour)}}, 0},
		{"title without a date", []newitems.Item{{GUID: "uuid-9", Title: "First post"}}, 0},
		{"nothing alike", []newitems.Item{{GUID: "x", Link: "https://other.test/a", Title: "Other", Published: day}}, 0},
		{"each item once", []newitems.Item{{GUID: "tag:blog.test,2024:1", Link: "https://blog.test/a"}, {Link: "https://blog.test/a/"}}, 2},
	}
	for _, tt := range tests {
		if got := postsInCommon(old, tt.items); got != tt.want {
			t.Errorf("%s: %d in common, want %d", tt.name, got, tt.want)
		}
	}
}

func TestDecide(t *testing.T) {
	later := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		cs      []Candidate
		verdict string
		to      string
	}{
		{"nothing", nil, None, ""},
		{"only rejections", []Candidate{{URL: "a", Verdict: "rejected: another site"}}, None, ""},
		{"same beats probably", []Candidate{{URL: "p", Verdict: Probably, SameTitle: true}, {URL: "s", Verdict: Same, PostsInCommon: 1}}, Moved, "s"},
		{"most posts in common", []Candidate{{URL: "s1", Verdict: Same, PostsInCommon: 2}, {URL: "s2", Verdict: Same, PostsInCommon: 9}}, Moved, "s2"},
		{"probably: same title first", []Candidate{{URL: "comments", Verdict: Probably, Newest: &later}, {URL: "main", Verdict: Probably, SameTitle: true}}, Offered, "main"},
		{"ties: the first found", []Candidate{{URL: "a", Verdict: Probably}, {URL: "b", Verdict: Probably}}, Offered, "a"},
	}
	for _, tt := range tests {
		v, to := decide(tt.cs)
		if v != tt.verdict || to != tt.to {
			t.Errorf("%s: %q %q, want %q %q", tt.name, v, to, tt.verdict, tt.to)
		}
	}
}
