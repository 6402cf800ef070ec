package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/proof"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// floodLimits are the default limits without the proof of work (these
// tests send the form as a script would after solving it).
func floodLimits() Limits {
	l := DefaultLimits()
	l.Proof = proof.Options{}
	return l
}

// confirmations counts the confirmation emails queued to addresses
// ending in suffix.
func confirmations(t *testing.T, st *store.Store, suffix string) int {
	t.Helper()
	var n int64
	if err := st.DB.Model(&store.OutboxRow{}).Where("kind = ? AND to_addr LIKE ?", store.KindNotice, "%"+suffix).
		Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// TestConfirmationFlood: 50 signups from one client for variants of one
// mailbox (+tags; Gmail's dots and googlemail.com) queue no more
// confirmation emails than the per-mailbox limit allows.
func TestConfirmationFlood(t *testing.T) {
	cases := []struct {
		name, suffix string
		variant      func(i int) string
	}{
		{"plus tags", "@example.org", func(i int) string { return fmt.Sprintf("victim+%d@example.org", i) }},
		{"gmail dots and googlemail", "mail.com", func(i int) string {
			local := "victim"
			local = local[:1+i%5] + "." + local[1+i%5:]
			domain := []string{"gmail.com", "googlemail.com", "GMail.com"}[i%3]
			return fmt.Sprintf("%s+%d@%s", local, i, domain)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := floodLimits()
			h := newHarness(t, withLimits(lim))
			f := h.feed("Attacker's Feed")
			codes := map[int]int{}
			for i := range 50 {
				w := h.do(req{method: "POST", path: "/subscriptions", remote: "198.51.100.7:4000",
					form: url.Values{"email": {c.variant(i)}, "url": {f.URL()}, "delivery": {"instant"}}})
				codes[w.Code]++
			}
			got := confirmations(t, h.st, c.suffix)
			if got > lim.SignupPerMailbox.Burst || got == 0 {
				t.Fatalf("50 signups for one mailbox queued %d confirmations; the per-mailbox limit is %d (answers %v)",
					got, lim.SignupPerMailbox.Burst, codes)
			}
			if codes[http.StatusTooManyRequests] == 0 {
				t.Fatalf("no signup was refused with 429: %v", codes)
			}
		})
	}
}

// TestConfirmationFloodPerDomain: distinct mailboxes of one domain, from
// many clients, are bounded by the per-domain limit.
func TestConfirmationFloodPerDomain(t *testing.T) {
	lim := floodLimits()
	lim.SignupPerDomain = Limit{Every: time.Hour, Burst: 10}
	h := newHarness(t, withLimits(lim))
	f := h.feed("Feed")
	for i := range 30 {
		h.do(req{method: "POST", path: "/subscriptions", remote: fmt.Sprintf("198.51.100.%d:1", i+1),
			form: url.Values{"email": {fmt.Sprintf("person%d@victim.example", i)}, "url": {f.URL()}, "delivery": {"instant"}}})
	}
	if got := confirmations(t, h.st, "@victim.example"); got != 10 {
		t.Fatalf("30 mailboxes of one domain got %d confirmations; the per-domain limit is 10", got)
	}
}

// TestSignupLimitSurvivesRestart: the per-mailbox count is in the
// database: a second process on the same database, and this process
// after a restart, see the emails the first one queued.
func TestSignupLimitSurvivesRestart(t *testing.T) {
	lim := floodLimits()
	dsn := storetest.FreshDSN(t, storetest.URL())
	var d1 Deps
	h := newHarness(t, withLimits(lim), func(d *Deps) {
		d.Store = storetest.OpenDSN(t, dsn, storetest.Options{Clock: d.Clock})
		d1 = *d
	})
	f := h.feed("Feed")
	signup := func(srv *Server, i int) {
		t.Helper()
		form := url.Values{"email": {fmt.Sprintf("victim+%d@example.org", i)}, "url": {f.URL()}, "delivery": {"instant"}}
		r := httptest.NewRequest("POST", "/subscriptions", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = fmt.Sprintf("203.0.113.%d:1", i+1)
		srv.Handler().ServeHTTP(httptest.NewRecorder(), r)
	}
	for i := range 3 {
		signup(h.srv, i)
	}
	// Another process: its own connections to the same database.
	d2 := d1
	d2.Store = storetest.OpenDSN(t, dsn, storetest.Options{Clock: d1.Clock, NoMigrate: true})
	other := New(d2)
	for i := 3; i < 6; i++ {
		signup(other, i)
	}
	// This process, restarted.
	restarted := New(d1)
	for i := 6; i < 10; i++ {
		signup(restarted, i)
	}
	if got := confirmations(t, h.st, "@example.org"); got != lim.SignupPerMailbox.Burst {
		t.Fatalf("10 signups through three servers queued %d confirmations; the per-mailbox limit is %d",
			got, lim.SignupPerMailbox.Burst)
	}
}
