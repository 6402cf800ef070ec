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

// TestDigestSetChannel: a digest's issues can go by a channel too; a
// webhook's secret is printed when it is set; a wrong choice is a usage
// error and creates nothing.
func TestDigestSetChannel(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, nil)
	code, out, errs := cli("digest", "set", "--email", "d@example.com", "--name", "Daily", "--schedule", "daily",
		"--channel", "webhook", "--target", "https://hooks.example.org/d")
	var p struct {
		Channel, Target string
		SigningSecret   string `json:"signing_secret"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.Channel != "webhook" || p.Target != "https://hooks.example.org/d" ||
		!strings.HasPrefix(p.SigningSecret, "whsec_") {
		t.Fatalf("digest set: exit %d %s %s", code, out, errs)
	}
	code, out, _ = cli("digest", "list", "--email", "d@example.com")
	if code != 0 || !strings.Contains(out, `"channel"`) || strings.Contains(out, "whsec_") {
		t.Errorf("digest list: exit %d %s; want the channel without the secret", code, out)
	}
	if code, _, _ := cli("digest", "set", "--email", "e@example.com", "--name", "Daily", "--schedule", "daily", "--channel", "discord"); code != 2 {
		t.Errorf("digest set without a target: exit %d, want 2", code)
	}
}
