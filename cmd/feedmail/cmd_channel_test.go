package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestSubscribeChannel: --channel and --target choose where posts go; a
// webhook subscription prints its signing secret once; a token given is
// never printed; a wrong choice is a usage error (exit 2) and stores
// nothing.
func TestSubscribeChannel(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	site := feedSite(t)
	type printed struct {
		Subscription  int64  `json:"subscription"`
		Channel       string `json:"channel"`
		Target        string `json:"target"`
		SigningSecret string `json:"signing_secret"`
	}
	run := func(args ...string) (printed, string) {
		t.Helper()
		code, out, errs := cli(append([]string{"subscribe", "--confirmed", "--feed", site + "/feed"}, args...)...)
		if code != 0 {
			t.Fatalf("subscribe %v: exit %d: %s", args, code, errs)
		}
		var p printed
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return p, out
	}
	p, _ := run("--email", "hook@example.com", "--channel", "webhook", "--target", "https://hooks.example.org/in")
	if p.Channel != "webhook" || p.Target != "https://hooks.example.org/in" || !strings.HasPrefix(p.SigningSecret, "whsec_") {
		t.Errorf("webhook: printed %+v, want the channel, target and a whsec_ secret", p)
	}
	p, out := run("--email", "push@example.com", "--channel", "ntfy", "--target", "https://ntfy.example.org/news", "--token", "tk_secret")
	if p.Channel != "ntfy" || strings.Contains(out, "tk_secret") {
		t.Errorf("ntfy: printed %s, want the channel without the token", out)
	}
	if p, _ = run("--email", "mail@example.com"); p.Channel != "email" {
		t.Errorf("default: channel %q, want email", p.Channel)
	}
	for _, bad := range [][]string{
		{"--channel", "pigeon", "--target", "https://x.example.org/"},
		{"--channel", "slack"},
		{"--channel", "slack", "--target", "ftp://x.example.org/"},
		{"--channel", "matrix", "--target", "https://m.example.org#!r:example.org"},
		{"--target", "https://x.example.org/"},
	} {
		code, _, errs := cli(append([]string{"subscribe", "--email", "bad@example.com", "--feed", site + "/feed"}, bad...)...)
		if code != 2 || !strings.Contains(errs, "--channel") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming --channel", bad, code, errs)
		}
	}
	// The export names the channel and target, never the secret.
	code, out, errs := cli("account", "export", "--email", "hook@example.com")
	if code != 0 || !strings.Contains(out, `"name": "webhook"`) && !strings.Contains(out, `"name":"webhook"`) ||
		!strings.Contains(out, "https://hooks.example.org/in") || strings.Contains(out, "whsec_") {
		t.Errorf("export: exit %d %s\n%s; want the webhook channel and target without its secret", code, errs, out)
	}
	code, out, _ = cli("account", "export", "--email", "bad@example.com")
	if code == 0 && strings.Contains(out, "subscription") && strings.Contains(out, "x.example.org") {
		t.Errorf("a refused choice was stored: %s", out)
	}
}
