package ntfy_test

import (
	"errors"
	"testing"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/ntfy"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		url string
		ok  bool
	}{
		{"https://ntfy.example.org/news", true},
		{"https://ntfy.example.org/news/", true},
		{"https://ntfy.example.org/", false},
		{"https://ntfy.example.org/a/b", false},
	}
	for _, c := range cases {
		_, err := ntfy.New().Check(channel.Target{URL: c.url})
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, channel.ErrBadTarget)) {
			t.Errorf("Check(%q) = %v, want ok %v", c.url, err, c.ok)
		}
	}
}

// The token goes as a Bearer token only when one is set; the title is
// one header-safe line.
func TestRenderHeaders(t *testing.T) {
	p := &channel.Post{Title: "Line one\nline two", Link: "https://a.example.org/1", Text: "Body"}
	r, err := ntfy.New().Render(channel.Delivery{Target: channel.Target{URL: "https://ntfy.example.org/news"}, Post: p})
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Get("Authorization") != "" || r.Header.Get("Title") != "Line one line two" || string(r.Body) != "Body" {
		t.Errorf("without a token: %v %q", r.Header, r.Body)
	}
	r, _ = ntfy.New().Render(channel.Delivery{Target: channel.Target{URL: "https://ntfy.example.org/news", Secret: "tk_1"}, Post: p})
	if r.Header.Get("Authorization") != "Bearer tk_1" {
		t.Errorf("with a token: %v", r.Header)
	}
}
