package web

import (
	"context"
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/ledgercsv"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
)

// TestAccountLedgerCSV: the account page links the CSV download, which
// holds the person's whole ledger (and no one else's), oldest first,
// formula-safe; a bad, expired, wrong-purpose or deleted account's link
// gets the same answers as the other account routes and no CSV.
func TestAccountLedgerCSV(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	f := h.feed("First feed")
	u := h.subscribeConfirmed("ann@example.com", f.URL(), "instant")
	bob := h.subscribeConfirmed("bob@example.com", f.URL(), "instant")
	if _, _, err := h.st.AddLedgerEntry(ctx, u.ID, store.LedgerGrant, 7, "grant:test:1", "@gift, from \"us\""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.st.AddLedgerEntry(ctx, bob.ID, store.LedgerGrant, 9, "grant:test:2", "bob's gift"); err != nil {
		t.Fatal(err)
	}
	acc := h.accountPath(u)
	if body := h.get(acc).Body.String(); !strings.Contains(body, `href="`+acc+`/ledger.csv"`) {
		t.Fatal("the account page lacks the CSV link")
	}
	w := h.get(acc + "/ledger.csv")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.HasPrefix(w.Header().Get("Content-Disposition"), "attachment;") || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("download: %d %q %q %q", w.Code, w.Header().Get("Content-Type"), w.Header().Get("Content-Disposition"), w.Header().Get("Cache-Control"))
	}
	rows, err := csv.NewReader(strings.NewReader(w.Body.String())).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, w.Body.String())
	}
	if len(rows) != 3 || strings.Join(rows[0], ",") != strings.Join(ledgercsv.Header, ",") {
		t.Fatalf("rows %q: want the header, the trial grant and the gift", rows)
	}
	if r := rows[1]; r[1] != "grant" || r[2] != "+500" || r[3] != "500" {
		t.Errorf("first row %q: want the trial grant of 500", r)
	}
	if r := rows[2]; r[0] != h.clk.Now().UTC().Format(time.RFC3339) || r[2] != "+7" || r[3] != "507" ||
		r[4] != "'@gift, from \"us\"" || r[5] != "grant:test:1" {
		t.Errorf("second row %q", r)
	}
	if strings.Contains(w.Body.String(), "bob") {
		t.Error("the download holds another person's entries")
	}

	expired := "/account/" + h.sign.Sign(token.Account, u.ID, h.clk.Now().Add(-time.Minute)) + "/ledger.csv"
	wrong := "/account/" + h.sign.Sign(token.Unsubscribe, u.ID, time.Time{}) + "/ledger.csv"
	if _, err := h.st.DeleteUser(ctx, bob.ID); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		code       int
	}{
		{"garbage", "/account/not-a-token/ledger.csv", http.StatusBadRequest},
		{"tampered", acc[:len(acc)-2] + "xx/ledger.csv", http.StatusBadRequest},
		{"expired", expired, http.StatusGone},
		{"wrong purpose", wrong, http.StatusBadRequest},
		{"deleted account", h.accountPath(bob) + "/ledger.csv", http.StatusGone},
	} {
		w := h.get(c.path)
		if w.Code != c.code || strings.HasPrefix(w.Header().Get("Content-Type"), "text/csv") {
			t.Errorf("%s: %d %q, want %d and a page", c.name, w.Code, w.Header().Get("Content-Type"), c.code)
		}
	}
}
