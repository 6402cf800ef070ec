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
		c.TrialCredits != 500 || len(c.Roles) != 4 || c.AllowPrivateNetworks || c.PaymentsEnabled() ||
		c.OperatorTokenSHA256 != "" || c.ImportMaxBytes != DefaultImportMaxBytes {
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
		{"FEEDMAIL_PPROF_LISTEN", "6060"},
		{"FEEDMAIL_PPROF_LISTEN", "0.0.0.0:6060"},
		{"FEEDMAIL_PPROF_LISTEN", "feedmail.example.org:6060"},
		{"FEEDMAIL_METRICS_LISTEN", "9100"},
		{"FEEDMAIL_OPERATOR_TOKEN_SHA256", "abc"},
		{"FEEDMAIL_OPERATOR_TOKEN_SHA256", strings.Repeat("g", 64)},
		{"FEEDMAIL_API_IMPORT_MAX_BYTES", "0"},
		{"FEEDMAIL_API_IMPORT_MAX_BYTES", "1GB"},
		{"FEEDMAIL_METRICS_LISTEN", "127.0.0.1:8080"}, // the public listener itself
		{"FEEDMAIL_DKIM_DOMAIN", "example.com"},
		{"FEEDMAIL_DKIM_SELECTOR", "fm1"},
		{"FEEDMAIL_DKIM_PRIVATE_KEY_FILE", "/etc/feedmail/dkim.pem"},
		{"FEEDMAIL_BOUNCE_ADDRESS", "bounces"},
		{"FEEDMAIL_BOUNCE_ADDRESS", "Bounces <b@example.org>"},
		{"FEEDMAIL_BOUNCE_ADDRESS", "bounces+x@example.org"},
		{"FEEDMAIL_BOUNCE_ADDRESS", "a-very-long-local-part-indeed@example.org"},
		{"FEEDMAIL_INBOUND_URL", "pop3://u:p@mail.example.org/"},
		{"FEEDMAIL_INBOUND_URL", "imaps:///INBOX"},
		{"FEEDMAIL_SES_TOPIC_ARNS", "feedmail-bounces"},
		{"FEEDMAIL_SES_TOPIC_ARNS", "arn:aws:sns:us-east-1:123456789012:ok, arn:aws:sqs:us-east-1:123456789012:q"},
		{"FEEDMAIL_POSTMARK_WEBHOOK_AUTH", "just-a-password"},
		{"FEEDMAIL_POSTMARK_WEBHOOK_AUTH", "user:short"},
		{"FEEDMAIL_SENDGRID_WEBHOOK_KEY", "not a key"},
		{"FEEDMAIL_SENDGRID_WEBHOOK_KEY", "bm90IGEga2V5"},
		{"FEEDMAIL_MAILGUN_SIGNING_KEY", "key-1"},
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

func TestDKIM(t *testing.T) {
	all := map[string]string{"FEEDMAIL_DKIM_DOMAIN": "Example.COM.", "FEEDMAIL_DKIM_SELECTOR": "fm2026",
		"FEEDMAIL_DKIM_PRIVATE_KEY_FILE": "/etc/feedmail/dkim.pem"}
	c, err := Load(env(all))
	if err != nil || !c.DKIMEnabled() || c.DKIMDomain != "example.com" || c.DKIMSelector != "fm2026" || c.DKIMKeyFile != "/etc/feedmail/dkim.pem" {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := Load(env(nil)); err != nil || c.DKIMEnabled() {
		t.Fatalf("DKIM must be off when unset: %+v %v", c, err)
	}
	bad := []struct{ key, val, want string }{
		{"FEEDMAIL_DKIM_SELECTOR", "", "FEEDMAIL_DKIM_SELECTOR: DKIM signing needs"},
		{"FEEDMAIL_DKIM_PRIVATE_KEY_FILE", "", "FEEDMAIL_DKIM_PRIVATE_KEY_FILE: DKIM signing needs"},
		{"FEEDMAIL_DKIM_DOMAIN", "", "FEEDMAIL_DKIM_DOMAIN: DKIM signing needs"},
		{"FEEDMAIL_DKIM_DOMAIN", "localhost", "is not a domain name"},
		{"FEEDMAIL_DKIM_DOMAIN", "exa mple.com", "is not a DNS name"},
		{"FEEDMAIL_DKIM_SELECTOR", "fm;x", "is not a DNS name"},
	}
	for _, b := range bad {
		m := map[string]string{}
		for k, v := range all {
			m[k] = v
		}
		m[b.key] = b.val
		if _, err := Load(env(m)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), b.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s=%q: got %v, want one line saying %q", b.key, b.val, err, b.want)
		}
	}
}

func TestPlainHTTPBaseURL(t *testing.T) {
	tests := []struct {
		base string
		want bool
	}{
		{"https://feedmail.example.com", false},
		{"http://feedmail.example.com", true},
		{"http://feedmail.example.com:8080/sub", true},
		{"http://192.0.2.7", true},
		{"http://127.0.0.1:8080", false},
		{"http://127.9.9.9", false},
		{"http://[::1]:8080", false},
		{"http://localhost:8080", false},
		{"http://LOCALHOST.", false},
		{"http://app.localhost", false},
		{"http://localhost.example.com", true},
		{"http://[::2]", true},
	}
	for _, tc := range tests {
		c, err := Load(env(map[string]string{"FEEDMAIL_BASE_URL": tc.base}))
		if err != nil {
			t.Fatalf("%s: %v", tc.base, err)
		}
		if got := c.PlainHTTPBaseURL(); got != tc.want {
			t.Errorf("%s: PlainHTTPBaseURL = %v, want %v", tc.base, got, tc.want)
		}
	}
}

func TestInbound(t *testing.T) {
	c, err := Load(env(map[string]string{"FEEDMAIL_BOUNCE_ADDRESS": "bounces@mail.example.org",
		"FEEDMAIL_INBOUND_URL": "imaps://u:p@mail.example.org/INBOX"}))
	if err != nil || c.BounceAddress != "bounces@mail.example.org" || !c.HasRole("inbound") || len(c.Roles) != 5 {
		t.Fatalf("%+v %v", c, err)
	}
	c, err = Load(env(map[string]string{"FEEDMAIL_INBOUND_URL": "imap://u:p@mail.example.org/INBOX", "FEEDMAIL_ROLES": "mailer"}))
	if err != nil || c.HasRole("inbound") {
		t.Fatalf("roles given explicitly leave inbound out: %+v %v", c.Roles, err)
	}
	if _, err := Load(env(map[string]string{"FEEDMAIL_ROLES": "web,inbound"})); err == nil ||
		!strings.Contains(err.Error(), "FEEDMAIL_INBOUND_URL") {
		t.Fatalf("inbound role without a mailbox: %v", err)
	}
}

// TestEmailServiceWebhooks: the email services' settings are read and
// checked; unset, every service is off.
func TestEmailServiceWebhooks(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || len(c.SESTopicARNs) != 0 || c.PostmarkWebhookAuth != "" || c.SendGridWebhookKey != "" || c.MailgunSigningKey != "" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = Load(env(map[string]string{
		"FEEDMAIL_SES_TOPIC_ARNS":        " arn:aws:sns:us-east-1:123456789012:feedmail-ses ,arn:aws:sns:eu-west-1:123456789012:eu,arn:aws:sns:us-east-1:123456789012:feedmail-ses",
		"FEEDMAIL_POSTMARK_WEBHOOK_AUTH": "postmark:0123456789abcdef",
		"FEEDMAIL_SENDGRID_WEBHOOK_KEY":  "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g==",
		"FEEDMAIL_MAILGUN_SIGNING_KEY":   "key-3ax6xnjp29jd6fds4gc373sgvjxteol0",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.SESTopicARNs, " ") != "arn:aws:sns:us-east-1:123456789012:feedmail-ses arn:aws:sns:eu-west-1:123456789012:eu" {
		t.Errorf("topics %q", c.SESTopicARNs)
	}
}
