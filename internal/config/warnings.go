package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// variables are the FEEDMAIL_* variables Load reads.
func variables() []string {
	return []string{
		"FEEDMAIL_DATABASE_URL", "FEEDMAIL_LISTEN", "FEEDMAIL_BASE_URL", "FEEDMAIL_SMTP_URL", "FEEDMAIL_MAILDIR",
		"FEEDMAIL_FROM", "FEEDMAIL_SECRET", "FEEDMAIL_ROLES", "FEEDMAIL_ALLOW_PRIVATE_NETWORKS",
		"FEEDMAIL_TRIAL_CREDITS", "FEEDMAIL_CREDIT_PACKS", "FEEDMAIL_STRIPE_SECRET_KEY",
		"FEEDMAIL_STRIPE_WEBHOOK_SECRET", "FEEDMAIL_STRIPE_API_URL", "FEEDMAIL_LOG_LEVEL",
		"FEEDMAIL_DKIM_DOMAIN", "FEEDMAIL_DKIM_SELECTOR", "FEEDMAIL_DKIM_PRIVATE_KEY_FILE",
		"FEEDMAIL_BOUNCE_ADDRESS", "FEEDMAIL_INBOUND_URL", "FEEDMAIL_SES_TOPIC_ARNS", "FEEDMAIL_POSTMARK_WEBHOOK_AUTH",
		"FEEDMAIL_SENDGRID_WEBHOOK_KEY", "FEEDMAIL_MAILGUN_SIGNING_KEY", "FEEDMAIL_PPROF_LISTEN",
		"FEEDMAIL_METRICS_LISTEN", "FEEDMAIL_OPERATOR_TOKEN_SHA256", "FEEDMAIL_API_IMPORT_MAX_BYTES",
	}
}

// testVariable reports whether name belongs to the test suite and its
// tools, which set them for every process they start.
func testVariable(name string) bool {
	return strings.HasPrefix(name, "FEEDMAIL_TEST_") || strings.HasPrefix(name, "FEEDMAIL_E2E_") ||
		name == "FEEDMAIL_CORPUS" || name == "FEEDMAIL_CHROMIUM"
}

// Warnings returns what an operator should hear about a configuration
// that loaded: environment entries ("NAME=value") named FEEDMAIL_* that
// feedmail does not read (a typo is silently ignored otherwise; the closest
// known name is suggested), and links in email that only this machine can
// open because FEEDMAIL_BASE_URL is unset while FEEDMAIL_LISTEN listens on
// every address.
func Warnings(c Config, environ []string) []string {
	var out []string
	known := variables()
	baseSet := false
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "FEEDMAIL_") || testVariable(name) {
			continue
		}
		if name == "FEEDMAIL_BASE_URL" && strings.TrimSpace(value) != "" {
			baseSet = true
		}
		if slices.Contains(known, name) {
			continue
		}
		w := name + " is not a feedmail variable and is ignored"
		if best := closest(name, known); best != "" {
			w += " (did you mean " + best + "?)"
		}
		out = append(out, w)
	}
	if !baseSet {
		if host, _, err := net.SplitHostPort(c.Listen); err == nil && wildcardHost(host) {
			out = append(out, fmt.Sprintf("FEEDMAIL_BASE_URL is not set: links in email point at %s, which only this machine can open; set it to the address people reach feedmail at", c.BaseURL))
		}
	}
	return out
}

// PublicMetrics reports whether serve's web role answers /metrics on a
// listener the public reaches: FEEDMAIL_METRICS_LISTEN is unset and
// FEEDMAIL_BASE_URL names a host other than this machine's loopback.
// serve warns about it at start.
func (c Config) PublicMetrics() bool {
	if c.MetricsListen != "" || !c.HasRole("web") {
		return false
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || u.Hostname() == "" {
		return false
	}
	h := strings.ToLower(u.Hostname())
	ip := net.ParseIP(h)
	return h != "localhost" && !strings.HasSuffix(h, ".localhost") && (ip == nil || !ip.IsLoopback())
}

// closest is the known name nearest to name by edit distance, when it is
// near enough (at most a third of its length) to be a likely typo.
func closest(name string, known []string) string {
	best, bestD := "", len(name)/3+1
	for _, k := range known {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
