package mailbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	good := []struct {
		raw  string
		want Target
	}{
		{"imaps://bounces:s3cret@mail.example.org/INBOX",
			Target{ImplicitTLS: true, Host: "mail.example.org", Addr: "mail.example.org:993", User: "bounces", Password: "s3cret", Mailbox: "INBOX"}},
		{"imaps://bounces:s3cret@mail.example.org",
			Target{ImplicitTLS: true, Host: "mail.example.org", Addr: "mail.example.org:993", User: "bounces", Password: "s3cret", Mailbox: "INBOX"}},
		{"imap://bounces:s3cret@mail.example.org:1143/",
			Target{Host: "mail.example.org", Addr: "mail.example.org:1143", User: "bounces", Password: "s3cret", Mailbox: "INBOX"}},
		{"IMAPS://u%40example.org:p%3Aw%2Fd@127.0.0.1:9993/Lists/Bounces",
			Target{ImplicitTLS: true, Host: "127.0.0.1", Addr: "127.0.0.1:9993", User: "u@example.org", Password: "p:w/d", Mailbox: "Lists/Bounces"}},
		{"imaps://u:pw6@[::1]:993/INBOX",
			Target{ImplicitTLS: true, Host: "::1", Addr: "[::1]:993", User: "u", Password: "pw6", Mailbox: "INBOX"}},
	}
	for _, tc := range good {
		got, err := ParseURL(tc.raw)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.raw, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseURL(%q) = %+v, want %+v", tc.raw, got, tc.want)
		}
		if strings.Contains(got.String(), got.Password) {
			t.Errorf("String() %q shows the password", got.String())
		}
	}

	const pass = "Sup3rSecretPw"
	bad := []struct {
		raw, wantErr string
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"mail.example.org", "no scheme"},
		{"pop3://u:" + pass + "@mail.example.org/INBOX", "scheme"},
		{"https://u:" + pass + "@mail.example.org/INBOX", "scheme"},
		{"imaps://mail.example.org/INBOX", "no user"},
		{"imaps://u@mail.example.org/INBOX", "no password"},
		{"imaps://u:@mail.example.org/INBOX", "no password"},
		{"imaps://:" + pass + "@mail.example.org/INBOX", "no user"},
		{"imaps://u:" + pass + "@/INBOX", "no host"},
		{"imaps://u:" + pass + "@mail.example.org:0/INBOX", "port"},
		{"imaps://u:" + pass + "@mail.example.org:70000/INBOX", "port"},
		{"imaps://u:" + pass + "@mail.example.org:imap/INBOX", "does not parse"},
		{"imaps://u:" + pass + "%zz@mail.example.org/INBOX", "does not parse"},
		{"imaps://u:" + pass + "@mail.example.org/INBOX?x=1", "query"},
		{"imaps://u:" + pass + "@mail.example.org/INBOX#top", "fragment"},
		{"imaps:u:" + pass + "@mail.example.org", "imaps://user:password@host"},
	}
	for _, tc := range bad {
		_, err := ParseURL(tc.raw)
		if err == nil {
			t.Errorf("ParseURL(%q): no error", tc.raw)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseURL(%q) = %q, want it to say %q", tc.raw, err, tc.wantErr)
		}
		if strings.Contains(err.Error(), pass) {
			t.Errorf("ParseURL(%q) error shows the password: %q", tc.raw, err)
		}
	}
}

func TestNewChecksConfig(t *testing.T) {
	h := func(context.Context, []byte, bool) error { return nil }
	cases := []struct {
		name string
		cfg  Config
		h    Handler
		ok   bool
	}{
		{"defaults", Config{URL: "imaps://u:p@h/INBOX"}, h, true},
		{"nil handler", Config{URL: "imaps://u:p@h/INBOX"}, nil, false},
		{"bad URL", Config{URL: "pop3://u:p@h/INBOX"}, h, false},
		{"done folder is the mailbox", Config{URL: "imaps://u:p@h/Bounces", DoneFolder: "Bounces"}, h, false},
	}
	for _, tc := range cases {
		r, err := New(tc.cfg, tc.h)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err == nil && (r.cfg.DoneFolder != DefaultDoneFolder || r.cfg.MaxBytes != DefaultMaxBytes || r.cfg.Poll != time.Minute) {
			t.Errorf("%s: defaults not filled: %+v", tc.name, r.cfg)
		}
	}
}
