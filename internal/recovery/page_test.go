package recovery

import (
	"slices"
	"testing"
)

func TestReadPage(t *testing.T) {
	const base = "https://blog.test/"
	tests := []struct {
		name       string
		body       string
		alternates []string
		anchors    []string
		channel    string
	}{
		{"alternates and feed-looking anchors",
			`<html><head><link rel="alternate" type="application/rss+xml" href="/feed/"><link rel=alternate type="application/atom+xml" href="https://blog.test/atom.xml">` +
				`<link rel="alternate" type="text/html" href="/fr/"></head><body><a href="/about">About</a><a href="/feed/">RSS</a>` +
				`<a href="/comments/rss">Comments</a><a href="https://other.test/index.xml">x</a><a href="/">home</a></body></html>`,
			[]string{"https://blog.test/feed/", "https://blog.test/atom.xml"},
			[]string{"https://blog.test/comments/rss", "https://other.test/index.xml"}, ""},
		{"anchors capped", `<a href="/1.xml"></a><a href="/2.xml"></a><a href="/3.xml"></a><a href="/4.xml"></a>`,
			nil, []string{"https://blog.test/1.xml", "https://blog.test/2.xml", "https://blog.test/3.xml"}, ""},
		{"YouTube channel id", `<script>{"externalId":"UCabcdefghijklmnopqrstuv"}</script>`, nil, nil, "UCabcdefghijklmnopqrstuv"},
		{"YouTube channel link", `<a href="https://www.youtube.com/channel/UCabcdefghijklmnopqrstuv">c</a>`, nil, nil, "UCabcdefghijklmnopqrstuv"},
		{"the page itself is no link", `<a href="https://blog.test/">rss</a>`, nil, nil, ""},
	}
	for _, tt := range tests {
		pl := readPage([]byte(tt.body), base)
		if !slices.Equal(pl.alternates, tt.alternates) || !slices.Equal(pl.anchors, tt.anchors) || pl.channelID != tt.channel {
			t.Errorf("%s: got %q %q %q, want %q %q %q", tt.name, pl.alternates, pl.anchors, pl.channelID, tt.alternates, tt.anchors, tt.channel)
		}
	}
}

func TestLoginAndParkedPages(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		body          string
		login, parked bool
	}{
		{"401", 401, "", true, false},
		{"403", 403, "forbidden", true, false},
		{"password field", 200, `<form><INPUT type='password' name=p></form>`, true, false},
		{"sign-in title", 200, `<title>Sign in to Members</title>`, true, false},
		{"a sign-in button on a blog", 200, `<title>My blog</title><a href=/login>Sign in</a>`, false, false},
		{"for sale", 200, `<h1>This Domain Is For Sale</h1>`, false, true},
		{"parking service", 200, `<script src="//www.sedoparking.com/x.js"></script>`, false, true},
		{"ordinary page", 200, `<title>Home</title><p>Hello</p>`, false, false},
	}
	for _, tt := range tests {
		if got := loginPage(tt.status, []byte(tt.body)); got != tt.login {
			t.Errorf("%s: loginPage %v, want %v", tt.name, got, tt.login)
		}
		if got := parkedPage([]byte(tt.body)); got != tt.parked {
			t.Errorf("%s: parkedPage %v, want %v", tt.name, got, tt.parked)
		}
	}
}
