package main

import (
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestMalformedFeedAddress: every command that takes a feed address says
// a malformed one (misspelled scheme, missing //, no host) is not a web
// address, as the web form does, and exits 2 without looking it up.
func TestMalformedFeedAddress(t *testing.T) {
	cli := cliFor(storetest.FreshDSN(t, storetest.URL()), nil)
	const email = "ann@example.com"
	for _, addr := range []string{"notaurl", "htp:/bad", "http:/example.com/feed", "https//example.com/feed", "ftp://example.com/x", "http:///feed", "example.com:/feed"} {
		for _, args := range [][]string{
			{"subscribe", "--email", email, "--feed", addr},
			{"poll", addr},
			{"feed", "status", addr},
			{"pause", "--email", email, "--feed", addr},
		} {
			code, _, errs := cli(args...)
			if code != 2 || !strings.Contains(errs, "not a web address") || strings.Contains(errs, "did not answer") {
				t.Errorf("feedmail %q: exit %d, stderr %q; want 2 and not a web address", args, code, errs)
			}
		}
	}
}
