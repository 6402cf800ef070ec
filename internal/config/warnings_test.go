package config

import (
	"strings"
	"testing"
)

// TestBaseURLFollowsListen: without FEEDMAIL_BASE_URL the links in email
// use the listen address (a wildcard host becomes 127.0.0.1); a set one is
// taken as it is.
func TestBaseURLFollowsListen(t *testing.T) {
	cases := []struct{ listen, base, want string }{
		{"", "", "http://127.0.0.1:8080"},
		{"127.0.0.1:9090", "", "http://127.0.0.1:9090"},
		{"0.0.0.0:9090", "", "http://127.0.0.1:9090"},
		{"[::1]:9090", "", "http://[::1]:9090"},
		{":9090", "", "http://127.0.0.1:9090"},
		{"127.0.0.1:9090", "https://feeds.example.org/", "https://feeds.example.org"},
	}
	for _, c := range cases {
		cfg, err := Load(env(map[string]string{"FEEDMAIL_LISTEN": c.listen, "FEEDMAIL_BASE_URL": c.base}))
		if err != nil || cfg.BaseURL != c.want {
			t.Errorf("listen %q base %q: %q, %v; want %q", c.listen, c.base, cfg.BaseURL, err, c.want)
		}
	}
}

func TestWarnings(t *testing.T) {
	cases := []struct {
		name    string
		environ []string
		want    []string // substrings, one per warning, in order
	}{
		{"clean", []string{"FEEDMAIL_LISTEN=127.0.0.1:9090", "HOME=/root", "FEEDMAIL_TEST_DATABASE_URL=x", "FEEDMAIL_CORPUS=/c"}, nil},
		{"typo", []string{"FEEDMAIL_BASEURL=https://x.example"}, []string{"FEEDMAIL_BASEURL is not a feedmail variable and is ignored (did you mean FEEDMAIL_BASE_URL?)"}},
		{"typo in the middle", []string{"FEEDMAIL_ALOW_PRIVATE_NETWORKS=1"}, []string{"did you mean FEEDMAIL_ALLOW_PRIVATE_NETWORKS?"}},
		{"far from any", []string{"FEEDMAIL_FROBNICATE=1"}, []string{"FEEDMAIL_FROBNICATE is not a feedmail variable and is ignored"}},
		{"wildcard listen without a base", []string{"FEEDMAIL_LISTEN=0.0.0.0:8080"}, []string{"FEEDMAIL_BASE_URL is not set: links in email point at http://127.0.0.1:8080"}},
		{"wildcard listen with a base", []string{"FEEDMAIL_LISTEN=0.0.0.0:8080", "FEEDMAIL_BASE_URL=https://x.example"}, nil},
		{"metrics listener", []string{"FEEDMAIL_METRICS_LISTEN=127.0.0.1:9100"}, nil},
	}
	for _, c := range cases {
		m := map[string]string{}
		for _, kv := range c.environ {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		cfg, err := Load(env(m))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := Warnings(cfg, c.environ)
		if len(got) != len(c.want) {
			t.Errorf("%s: warnings %q, want %d", c.name, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: warning %q, want it to say %q", c.name, got[i], w)
			}
		}
	}
	// FEEDMAIL_ALLOW_PRIVATE_NETWORKS: the error names every accepted word.
	if _, err := Load(env(map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "maybe"})); err == nil ||
		!strings.Contains(err.Error(), "yes/no") {
		t.Errorf("error %v does not say what is accepted", err)
	}
}

func TestPublicMetrics(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{"FEEDMAIL_BASE_URL": "https://x.example"}, true},
		{map[string]string{"FEEDMAIL_BASE_URL": "https://x.example", "FEEDMAIL_METRICS_LISTEN": "127.0.0.1:9100"}, false},
		{map[string]string{"FEEDMAIL_BASE_URL": "https://x.example", "FEEDMAIL_ROLES": "poller"}, false},
		{map[string]string{"FEEDMAIL_BASE_URL": "http://localhost:8080"}, false},
		{map[string]string{}, false}, // the default base is the loopback listen address
	} {
		cfg, err := Load(env(c.env))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.PublicMetrics(); got != c.want {
			t.Errorf("%v: PublicMetrics %v, want %v", c.env, got, c.want)
		}
	}
}
