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
		// Plain http: refused where a credential would cross it, unless
		// private networks are allowed (sending then checks the address).
		{"ntfy", "http://ntfy.example.org/topic", "tk", false, ""},
		{"ntfy", "http://ntfy.example.org/topic", "", true, ""},
		{"matrix", "http://m.example.org#!r:example.org", "syt_x", false, ""},
		{"slack", "http://hooks.example.org/services/a", "", false, ""},
		{"discord", "http://discord.example.org/api/webhooks/1/x", "", false, ""},
		{"webhook", "http://x.example.org/in", "", true, "whsec_"}, // signed; the secret never travels
	}
	for _, c := range cases {
		got, err := channels.Choose(c.name, c.target, c.secret, false)
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

// TestChoosePlainHTTPOnPrivateNetworks: with private networks allowed, a
// plain http target with a token is taken (sending lets it reach only a
// private address).
func TestChoosePlainHTTPOnPrivateNetworks(t *testing.T) {
	for _, c := range []struct{ name, target, secret string }{
		{"ntfy", "http://192.168.1.5/topic", "tk"},
		{"matrix", "http://127.0.0.1:8008#!r:example.org", "syt_x"},
		{"slack", "http://mattermost.lan/hooks/abc", ""},
	} {
		if _, err := channels.Choose(c.name, c.target, c.secret, true); err != nil {
			t.Errorf("Choose(%q, %q) with private networks allowed: %v", c.name, c.target, err)
		}
	}
}

// TestRequestsSayTheyCarryACredential: the channels whose requests carry a
// token or a secret URL mark them (channel.Request.Credential).
func TestRequestsSayTheyCarryACredential(t *testing.T) {
	d := channel.Delivery{ID: "1", Post: &channel.Post{Title: "T", Link: "https://x.example/p", Text: "x"}}
	for _, c := range []struct {
		name, url, secret string
		want              bool
	}{
		{"slack", "http://h.example/s", "", true},
		{"discord", "http://h.example/d", "", true},
		{"matrix", "http://m.example#!r:m.example", "syt", true},
		{"ntfy", "http://n.example/t", "tk", true},
		{"ntfy", "http://n.example/t", "", false},
		{"webhook", "http://w.example/in", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false},
	} {
		ch, _ := channels.All().Get(c.name)
		d.Target = channel.Target{URL: c.url, Secret: c.secret}
		r, err := ch.Render(d)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Credential != c.want || channel.CarriesCredential(ch, d.Target) != c.want {
			t.Errorf("%s (secret %q): request credential %v, CarriesCredential %v; want %v", c.name, c.secret, r.Credential, channel.CarriesCredential(ch, d.Target), c.want)
		}
	}
}
