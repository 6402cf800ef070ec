package config

import (
	"errors"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != "sqlite://./feedmail.db" || c.Listen != "127.0.0.1:8080" || c.Maildir != "./mail" ||
		c.TrialCredits != 500 || len(c.Roles) != 4 || c.AllowPrivateNetworks || c.PaymentsEnabled() {
		t.Fatalf("unexpected defaults: %+v", c)
	}
}

func TestInvalid(t *testing.T) {
	cases := []struct{ key, val string }{
		{"FEEDMAIL_ROLES", "web,cook"},
		{"FEEDMAIL_ROLES", ","},
		{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS", "maybe"},
		{"FEEDMAIL_TRIAL_CREDITS", "-1"},
		{"FEEDMAIL_TRIAL_CREDITS", "lots"},
		{"FEEDMAIL_LISTEN", "8080"},
		{"FEEDMAIL_BASE_URL", "ftp://x"},
		{"FEEDMAIL_FROM", "Feedmail <a@b.c>"},
		{"FEEDMAIL_SECRET", "short"},
		{"FEEDMAIL_LOG_LEVEL", "loud"},
	}
	for _, c := range cases {
		_, err := Load(env(map[string]string{c.key: c.val}))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s=%q: got %v, want an error naming the variable", c.key, c.val, err)
		}
	}
}

func TestRolesDeduplicated(t *testing.T) {
	c, err := Load(env(map[string]string{"FEEDMAIL_ROLES": " poller, poller ,web"}))
	if err != nil || strings.Join(c.Roles, ",") != "poller,web" || !c.HasRole("web") || c.HasRole("mailer") {
		t.Fatalf("%v %v", c.Roles, err)
	}
}
