package channels_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/channels"
)

func TestAllRegistersEveryChannel(t *testing.T) {
	want := "email discord matrix ntfy slack webhook"
	if got := strings.Join(channels.All().Names(), " "); got != want {
		t.Errorf("Names() = %q, want %q", got, want)
	}
}

func TestChoose(t *testing.T) {
	cases := []struct {
		name, target, secret string
		ok                   bool
		wantSecret           string // "whsec_" prefix, a literal, or ""
	}{
		{"", "", "", true, ""},
		{"email", "", "", true, ""},
		{"email", "https://x.example.org/", "", false, ""},
		{"webhook", "https://x.example.org/in", "", true, "whsec_"},
		{"Webhook", "https://x.example.org/in", "short", false, ""},
		{"slack", "https://hooks.example.org/services/a", "", true, ""},
		{"discord", "", "", false, ""},
		{"ntfy", "https://ntfy.example.org/topic", "tk", true, "tk"},
		{"ntfy", "https://ntfy.example.org/", "", false, ""},
		{"matrix", "https://m.example.org#!r:example.org", "syt_x", true, "syt_x"},
		{"matrix", "https://m.example.org#!r:example.org", "", false, ""},
		{"matrix", "https://m.example.org#r", "syt_x", false, ""},
		{"pigeon", "https://x.example.org/", "", false, ""},
	}
	for _, c := range cases {
		got, err := channels.Choose(c.name, c.target, c.secret)
		if (err == nil) != c.ok {
			t.Errorf("Choose(%q, %q, %q): %v, want ok %v", c.name, c.target, c.secret, err, c.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, channel.ErrBadTarget) {
				t.Errorf("Choose(%q): %v does not wrap ErrBadTarget", c.name, err)
			}
			continue
		}
		if !strings.HasPrefix(got.Secret, c.wantSecret) || (c.wantSecret == "" && got.Secret != "") {
			t.Errorf("Choose(%q, %q): secret %q, want %q", c.name, c.target, got.Secret, c.wantSecret)
		}
	}
}
