// Package config reads feedmail's configuration from the environment (the
// contract in docs/design.md). Nothing here is global: Load returns a value
// that the wiring in cmd/feedmail passes to whoever needs it. It must not
// read anything but the environment it is given, nor open connections.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/internal/esp"
)

// Roles a `feedmail serve` process can run.
var knownRoles = []string{"web", "poller", "mailer", "digest", "inbound"}

// Config is everything an operator can set.
type Config struct {
	DatabaseURL          string
	Listen               string
	BaseURL              string
	SMTPURL              string // empty: mail goes to Maildir
	Maildir              string
	From                 string
	Secret               string // empty: generated on first run and kept in the database
	Roles                []string
	AllowPrivateNetworks bool
	TrialCredits         int64
	CreditPacks          string
	StripeSecretKey      string
	StripeWebhookSecret  string
	StripeAPIURL         string
	LogLevel             string
	// DKIM signing: all three set, or none (off).
	DKIMDomain, DKIMSelector, DKIMKeyFile string
	// BounceAddress (e.g. bounces@mail.example.org): when set, each email's
	// envelope sender is bounces+TOKEN@ on its domain and List-Unsubscribe
	// offers a mailto there. Empty: the envelope sender is From.
	BounceAddress string
	// InboundURL: the IMAP mailbox the inbound role reads (imaps://… or
	// imap://… with STARTTLS). Empty: no inbound role.
	InboundURL string
	// Email services' bounce and complaint webhooks (POST
	// /webhooks/{provider}); each is off while its variable is empty.
	// SESTopicARNs: the SNS topics whose notifications are accepted.
	// PostmarkWebhookAuth: "user:password" Postmark sends as basic auth.
	// SendGridWebhookKey: the Signed Event Webhook's verification key.
	// MailgunSigningKey: Mailgun's HTTP webhook signing key.
	SESTopicARNs        []string
	PostmarkWebhookAuth string
	SendGridWebhookKey  string
	MailgunSigningKey   string
	// PprofListen: a loopback host:port where serve answers Go's profiling
	// endpoints (/debug/pprof/); empty: none.
	PprofListen string
	// MetricsListen: a host:port where serve answers /metrics instead of on
	// Listen, which the proxy makes public; empty: /metrics stays on Listen.
	MetricsListen string
	// OperatorTokenSHA256: the SHA-256 (64 hex digits) of the operator's
	// API token, which alone may use the API's operator routes (bulk
	// import); empty: those routes are closed. ImportMaxBytes caps one
	// import request's body.
	OperatorTokenSHA256 string
	ImportMaxBytes      int64
}

// ErrInvalid wraps every configuration error.
var ErrInvalid = errors.New("invalid configuration")

// Load reads the configuration through getenv (os.Getenv in production) and
// checks it, naming the variable at fault.
func Load(getenv func(string) string) (Config, error) {
	get := func(k, def string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return def
	}
	c := Config{
		DatabaseURL:         get("FEEDMAIL_DATABASE_URL", "sqlite://./feedmail.db"),
		Listen:              get("FEEDMAIL_LISTEN", "127.0.0.1:8080"),
		BaseURL:             strings.TrimRight(getenv("FEEDMAIL_BASE_URL"), "/"),
		SMTPURL:             get("FEEDMAIL_SMTP_URL", ""),
		Maildir:             get("FEEDMAIL_MAILDIR", "./mail"),
		From:                get("FEEDMAIL_FROM", "feedmail@localhost"),
		Secret:              get("FEEDMAIL_SECRET", ""),
		CreditPacks:         get("FEEDMAIL_CREDIT_PACKS", ""),
		StripeSecretKey:     get("FEEDMAIL_STRIPE_SECRET_KEY", ""),
		StripeWebhookSecret: get("FEEDMAIL_STRIPE_WEBHOOK_SECRET", ""),
		StripeAPIURL:        get("FEEDMAIL_STRIPE_API_URL", ""),
		LogLevel:            get("FEEDMAIL_LOG_LEVEL", "info"),
		DKIMDomain:          strings.ToLower(strings.TrimSuffix(get("FEEDMAIL_DKIM_DOMAIN", ""), ".")),
		DKIMSelector:        get("FEEDMAIL_DKIM_SELECTOR", ""),
		DKIMKeyFile:         get("FEEDMAIL_DKIM_PRIVATE_KEY_FILE", ""),
		BounceAddress:       get("FEEDMAIL_BOUNCE_ADDRESS", ""),
		InboundURL:          get("FEEDMAIL_INBOUND_URL", ""),
		PostmarkWebhookAuth: get("FEEDMAIL_POSTMARK_WEBHOOK_AUTH", ""),
		SendGridWebhookKey:  get("FEEDMAIL_SENDGRID_WEBHOOK_KEY", ""),
		MailgunSigningKey:   get("FEEDMAIL_MAILGUN_SIGNING_KEY", ""),
		PprofListen:         get("FEEDMAIL_PPROF_LISTEN", ""),
		MetricsListen:       get("FEEDMAIL_METRICS_LISTEN", ""),
		OperatorTokenSHA256: strings.ToLower(get("FEEDMAIL_OPERATOR_TOKEN_SHA256", "")),
	}
	if k, why := c.check(get); why != "" {
		return Config{}, fmt.Errorf("%w: %s: %s", ErrInvalid, k, why)
	}
	return c, nil
}

// check reads the variables that need parsing (through get) and checks
// every value; it returns the variable at fault and why, or "", "".
func (c *Config) check(get func(k, def string) string) (string, string) {
	bad := func(k, why string) (string, string) { return k, why }
	defaultRoles := "web,poller,mailer,digest"
	if c.InboundURL != "" {
		defaultRoles += ",inbound"
	}
	var why string
	if c.Roles, why = readRoles(get("FEEDMAIL_ROLES", defaultRoles)); why != "" {
		return bad("FEEDMAIL_ROLES", why)
	}
	switch v := get("FEEDMAIL_ALLOW_PRIVATE_NETWORKS", "0"); v {
	case "0", "false", "no":
	case "1", "true", "yes":
		c.AllowPrivateNetworks = true
	default:
		return bad("FEEDMAIL_ALLOW_PRIVATE_NETWORKS", fmt.Sprintf("%q is not 1 or 0 (true/false and yes/no work too)", v))
	}
	n, err := strconv.ParseInt(get("FEEDMAIL_TRIAL_CREDITS", "500"), 10, 64)
	if err != nil || n < 0 {
		return bad("FEEDMAIL_TRIAL_CREDITS", "must be a whole number ≥ 0")
	}
	c.TrialCredits = n
	if k, why := c.readOperator(get); why != "" {
		return bad(k, why)
	}
	if k, why := c.resolveBaseURL(); why != "" {
		return bad(k, why)
	}
	if a, err := mail.ParseAddress(c.From); err != nil || a.Name != "" {
		return bad("FEEDMAIL_FROM", fmt.Sprintf("%q is not a bare email address", c.From))
	}
	if why := checkBounceAddress(c.BounceAddress); why != "" {
		return bad("FEEDMAIL_BOUNCE_ADDRESS", why)
	}
	if why := checkInboundURL(c.InboundURL, c.Roles); why != "" {
		return bad("FEEDMAIL_INBOUND_URL", why)
	}
	if k, why := c.readWebhooks(get("FEEDMAIL_SES_TOPIC_ARNS", "")); why != "" {
		return bad(k, why)
	}
	if c.Secret != "" && len(c.Secret) < 16 {
		return bad("FEEDMAIL_SECRET", "must be at least 16 characters")
	}
	if k, why := c.checkDKIM(); why != "" {
		return bad(k, why)
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		return bad("FEEDMAIL_LOG_LEVEL", "must be debug, info, warn or error")
	}
	if why := checkPprofListen(c.PprofListen); why != "" {
		return bad("FEEDMAIL_PPROF_LISTEN", why)
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return bad("FEEDMAIL_METRICS_LISTEN", fmt.Sprintf("%q is not host:port", c.MetricsListen))
		}
		if c.MetricsListen == c.Listen {
			return bad("FEEDMAIL_METRICS_LISTEN", "must differ from FEEDMAIL_LISTEN")
		}
	}
	return "", ""
}

// checkPprofListen returns why addr cannot serve the profiling endpoints,
// or "": they show the process's memory and stacks, so only a loopback
// address is accepted (reach it over SSH from elsewhere).
func checkPprofListen(addr string) string {
	if addr == "" {
		return ""
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%q is not host:port", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Sprintf("%q is not a loopback address (127.0.0.1, ::1 or localhost)", host)
	}
	return ""
}

// readRoles returns the roles listed in v (comma-separated, repeats
// dropped), or why v is no list of known roles.
func readRoles(v string) ([]string, string) {
	var roles []string
	for _, r := range strings.Split(v, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !slices.Contains(knownRoles, r) {
			return nil, fmt.Sprintf("unknown role %q (known: %s)", r, strings.Join(knownRoles, ", "))
		}
		if !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	if len(roles) == 0 {
		return nil, "no role given"
	}
	return roles, ""
}

// resolveBaseURL checks the listen address and fills in the base URL from
// it when unset (links in email follow the listen address unless told
// otherwise); it returns the variable at fault and why, or "", "".
func (c *Config) resolveBaseURL() (key, why string) {
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return "FEEDMAIL_LISTEN", fmt.Sprintf("%q is not host:port", c.Listen)
	}
	if c.BaseURL = strings.TrimSpace(c.BaseURL); c.BaseURL == "" {
		if wildcardHost(host) {
			host = "127.0.0.1"
		}
		c.BaseURL = "http://" + net.JoinHostPort(host, port)
	}
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "FEEDMAIL_BASE_URL", fmt.Sprintf("%q is not an http(s) URL", c.BaseURL)
	}
	return "", ""
}

// checkBounceAddress returns why addr cannot be the bounce address, or "":
// a bare address whose local part has no '+', since feedmail adds its own
// "+TOKEN" there.
func checkBounceAddress(addr string) string {
	if addr == "" {
		return ""
	}
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Name != "" || a.Address != addr {
		return fmt.Sprintf("%q is not a bare email address", addr)
	}
	local, _, _ := strings.Cut(addr, "@")
	if strings.Contains(local, "+") {
		return fmt.Sprintf("%q: leave the '+' out; feedmail adds +TOKEN to the local part itself", addr)
	}
	if len(local) > 20 {
		return fmt.Sprintf("%q: the local part is over 20 characters, which leaves no room for the 36-character token within the 64 allowed", addr)
	}
	return ""
}

// checkInboundURL returns why u cannot be the inbound mailbox, or "". The
// inbound role needs it; the URL's finer points are checked when the role
// starts.
func checkInboundURL(u string, roles []string) string {
	if u == "" {
		if slices.Contains(roles, "inbound") {
			return "the inbound role reads this mailbox; set it (imaps://user:password@host/INBOX) or leave the role out"
		}
		return ""
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "imaps" && p.Scheme != "imap") || p.Host == "" {
		return "not an imaps:// or imap:// URL (imaps://user:password@host/INBOX)"
	}
	return ""
}

// readWebhooks sets SESTopicARNs from arns (a comma-separated list) and
// returns the variable at fault and why, or "" when every email service
// setting is empty or well formed.
func (c *Config) readWebhooks(arns string) (key, why string) {
	for _, a := range strings.Split(arns, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if !esp.ValidTopicARN(a) {
			return "FEEDMAIL_SES_TOPIC_ARNS", fmt.Sprintf("%q is not an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:TOPIC)", a)
		}
		if !slices.Contains(c.SESTopicARNs, a) {
			c.SESTopicARNs = append(c.SESTopicARNs, a)
		}
	}
	if c.PostmarkWebhookAuth != "" {
		if _, err := esp.ParsePostmarkAuth(c.PostmarkWebhookAuth); err != nil {
			return "FEEDMAIL_POSTMARK_WEBHOOK_AUTH", err.Error()
		}
	}
	if c.SendGridWebhookKey != "" {
		if _, err := esp.ParseSendGridKey(c.SendGridWebhookKey); err != nil {
			return "FEEDMAIL_SENDGRID_WEBHOOK_KEY", "the Signed Event Webhook's verification key, base64 as SendGrid shows it: " + err.Error()
		}
	}
	if c.MailgunSigningKey != "" && len(c.MailgunSigningKey) < 16 {
		return "FEEDMAIL_MAILGUN_SIGNING_KEY", "too short for Mailgun's HTTP webhook signing key"
	}
	return "", ""
}

// wildcardHost reports whether a listen host means every address.
func wildcardHost(host string) bool {
	return host == "" || host == "0.0.0.0" || host == "::" || host == "[::]"
}

// dnsLabelRe is one DNS label (letters, digits, hyphens inside).
var dnsLabelRe = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

// checkDKIM returns the variable at fault and why, or "" when the DKIM
// variables are all unset or all set and well formed. The key file is
// read by the mailer at start, not here.
func (c Config) checkDKIM() (key, why string) {
	vars := []struct{ name, value string }{
		{"FEEDMAIL_DKIM_DOMAIN", c.DKIMDomain}, {"FEEDMAIL_DKIM_SELECTOR", c.DKIMSelector},
		{"FEEDMAIL_DKIM_PRIVATE_KEY_FILE", c.DKIMKeyFile},
	}
	var set, unset []string
	for _, v := range vars {
		if v.value == "" {
			unset = append(unset, v.name)
		} else {
			set = append(set, v.name)
		}
	}
	if len(set) == 0 {
		return "", ""
	}
	if len(unset) > 0 {
		return unset[0], "DKIM signing needs FEEDMAIL_DKIM_DOMAIN, FEEDMAIL_DKIM_SELECTOR and " +
			"FEEDMAIL_DKIM_PRIVATE_KEY_FILE together; " + strings.Join(set, " and ") + " set, " + strings.Join(unset, " and ") + " not"
	}
	for _, v := range vars[:2] {
		labels := strings.Split(v.value, ".")
		if v.name == "FEEDMAIL_DKIM_DOMAIN" && len(labels) < 2 {
			return v.name, fmt.Sprintf("%q is not a domain name", v.value)
		}
		for _, l := range labels {
			if !dnsLabelRe.MatchString(l) {
				return v.name, fmt.Sprintf("%q is not a DNS name (letters, digits, '-' and '.')", v.value)
			}
		}
	}
	return "", ""
}

// DKIMEnabled reports whether outgoing mail is DKIM-signed.
func (c Config) DKIMEnabled() bool { return c.DKIMDomain != "" }

// PlainHTTPBaseURL reports whether FEEDMAIL_BASE_URL is http on a host
// other than loopback (127.0.0.0/8, ::1, localhost and names under it):
// the unsubscribe links in email then are not https, which RFC 8058
// one-click unsubscribe requires.
func (c Config) PlainHTTPBaseURL() bool {
	u, err := url.Parse(c.BaseURL)
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// HasRole reports whether this process runs role.
func (c Config) HasRole(role string) bool { return slices.Contains(c.Roles, role) }

// PaymentsEnabled reports whether Stripe keys are set.
func (c Config) PaymentsEnabled() bool { return c.StripeSecretKey != "" && c.StripeWebhookSecret != "" }
