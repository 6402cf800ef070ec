package web

import (
	"io/fs"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/templates"
)

// TestPagesTakePricesFromBilling: with another price list injected, every
// page that states a price states that one, so changing a price is one
// edit in billing (the store, the digest worker and the forecast take the
// same constants).
func TestPagesTakePricesFromBilling(t *testing.T) {
	p := billing.Prices{PerPost: 2, FeedsPerDigestCredit: 7}
	h := newHarness(t, func(d *Deps) { d.Prices = &p })
	h.srv.MountCredits(CreditsConfig{Packs: billing.DefaultPacks()})
	daily := h.feed("Daily")
	h.knownFeed(daily.URL(), "Daily", 20, 24*time.Hour)
	u := h.subscribeConfirmed("prices@example.com", daily.URL(), "instant")
	pages := map[string]string{
		"signup":  h.get("/subscribe?url=" + url.QueryEscape(daily.URL())).Body.String(),
		"account": h.get(h.accountPath(u)).Body.String(),
		"credits": h.get("/credits").Body.String(),
	}
	want := map[string][]string{
		"signup":  {"2 credits per email", "1 credit per 7 feeds with news in it", "as soon as you confirm: 2 credits"},
		"account": {"It costs 1 credit per 7 feeds with news in an issue", "An instant email costs 2 credits; a digest issue 1 credit per 7 feeds in it."},
		"credits": {"An email of a single new post costs 2 credits. A digest issue costs 1 credit per 7 feeds with news in it"},
	}
	for name, b := range pages {
		for _, w := range want[name] {
			if !strings.Contains(b, w) {
				t.Errorf("%s page lacks %q", name, w)
			}
		}
		if strings.Contains(b, "per 5 feeds") || strings.Contains(b, "1 credit per email") {
			t.Errorf("%s page states the standard prices:\n%s", name, b)
		}
	}
}

// pricePattern matches a price written out in a template: "1 credit per",
// "per 5 feeds", "costs 3 credits".
var pricePattern = regexp.MustCompile(`(?i)\b\d+ credits? (per|for|a)\b|\bper \d+ feeds?\b|costs? \d+ credits?\b`)

// TestNoPriceInTemplates: no page or email template writes a price; they
// take billing's through postCost and digestRate.
func TestNoPriceInTemplates(t *testing.T) {
	err := fs.WalkDir(templates.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".html") || strings.HasSuffix(p, ".txt")) {
			return err
		}
		b, err := fs.ReadFile(templates.FS, p)
		if err != nil {
			return err
		}
		if m := pricePattern.Find(b); m != nil {
			t.Errorf("%s writes a price: %q", p, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pricePattern.FindString("1 credit per 5 feeds") == "" {
		t.Fatal("the pattern misses a price")
	}
}

// TestLedgerWords: the account page's credit history says why a post was
// free.
func TestLedgerWords(t *testing.T) {
	tests := []struct {
		e    store.LedgerEntry
		want string
	}{
		{store.LedgerEntry{Kind: "charge", Amount: -1, Reason: "item email item:5:7"}, "Email of a new post"},
		{store.LedgerEntry{Kind: "charge", Amount: 0, Reason: "item email item:5:8 (burst: free)"},
			"Email of a new post, free: it came in a burst (burst: free)"},
		{store.LedgerEntry{Kind: "charge", Amount: -2, Reason: "digest email digest:3"}, "Digest issue"},
	}
	for _, tt := range tests {
		if got := ledgerWords(tt.e); got != tt.want {
			t.Errorf("ledgerWords(%+v) = %q, want %q", tt.e, got, tt.want)
		}
	}
}
