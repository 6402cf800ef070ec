package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// TestAccountDataDownload: the account page links the download, which is
// the person's data as a JSON attachment, with how each feed was
// confirmed, and nothing of anyone else's.
func TestAccountDataDownload(t *testing.T) {
	h := newHarness(t)
	f, g := h.feed("First feed"), h.feed("Second feed")
	u := h.subscribeConfirmed("ann@example.com", f.URL(), "instant")
	h.subscribeConfirmed("ann@example.com", g.URL(), "weekly")
	h.subscribeConfirmed("bob@example.com", f.URL(), "instant")
	acc := h.accountPath(u)
	if body := h.get(acc).Body.String(); !strings.Contains(body, `href="`+acc+`/export"`) || !strings.Contains(body, `href="`+acc+`/delete"`) {
		t.Fatalf("the account page lacks the download and delete links")
	}
	w := h.get(acc + "/export")
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") ||
		!strings.HasPrefix(w.Header().Get("Content-Disposition"), "attachment;") || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("download: %d %q %q %q", w.Code, w.Header().Get("Content-Type"), w.Header().Get("Content-Disposition"), w.Header().Get("Cache-Control"))
	}
	if strings.Contains(w.Body.String(), "bob@example.com") {
		t.Fatal("the download holds another person's address")
	}
	var ex model.AccountExport
	if err := json.Unmarshal(w.Body.Bytes(), &ex); err != nil {
		t.Fatalf("download is not JSON: %v\n%s", err, w.Body.String())
	}
	if ex.Email != "ann@example.com" || ex.Timezone != "Europe/Berlin" || ex.ConfirmedAt == nil || len(ex.Subscriptions) != 2 ||
		len(ex.Digests) != 1 || ex.Digests[0].Name != "Weekly" || len(ex.Ledger) != 1 || ex.Ledger[0].Amount != 500 {
		t.Fatalf("download: %+v", ex)
	}
	for _, s := range ex.Subscriptions {
		if s.ConfirmedBy != store.ConfirmedByLink || s.ConfirmedAt == nil || s.RequestedAt == nil || s.State != store.SubActive {
			t.Errorf("%s: %+v, want active, requested and confirmed by the link", s.FeedURL, s)
		}
	}
	if ex.Subscriptions[1].Delivery != "digest" || ex.Subscriptions[1].Digest != "Weekly" {
		t.Errorf("second feed's delivery %q %q, want digest Weekly", ex.Subscriptions[1].Delivery, ex.Subscriptions[1].Digest)
	}
}

// TestAccountDelete: the confirmation page says what goes and changes
// nothing; the POST erases the account, after which its link answers 410;
// the address can sign up again as a new account.
func TestAccountDelete(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	f := h.feed("Shared feed")
	u := h.subscribeConfirmed("ann@example.com", f.URL(), "weekly")
	h.subscribeConfirmed("bob@example.com", f.URL(), "instant")
	acc := h.accountPath(u)
	count := func() int {
		t.Helper()
		feed, err := h.st.FeedByURL(ctx, f.URL())
		if err != nil {
			t.Fatal(err)
		}
		return feed.SubscriberCount
	}

	w := h.get(acc + "/delete")
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("confirmation page: %d\n%s", w.Code, body)
	}
	for _, want := range []string{"ann@example.com", "1 feed(s) and 1 digest(s)", `action="` + acc + `/delete"`, "Delete my account", acc + "/export"} {
		if !strings.Contains(body, want) {
			t.Errorf("confirmation page lacks %q", want)
		}
	}
	if _, err := h.st.UserByID(ctx, u.ID); err != nil || len(h.subsOf(u)) != 1 || count() != 2 {
		t.Fatalf("the confirmation page changed something: %v, %d subscriptions, feed count %d", err, len(h.subsOf(u)), count())
	}

	w = h.post(acc+"/delete", nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Your account is deleted") {
		t.Fatalf("delete: %d\n%s", w.Code, w.Body.String())
	}
	if _, err := h.st.UserByID(ctx, u.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after delete the account is still found: %v", err)
	}
	var n int64
	if err := h.st.DB.Model(&store.Subscription{}).Where("user_id = ?", u.ID).Count(&n).Error; err != nil || n != 0 {
		t.Fatalf("%d subscriptions left (%v)", n, err)
	}
	if c := count(); c != 1 {
		t.Errorf("feed counts %d subscribers after the deletion, want 1", c)
	}
	if err := h.st.DB.Model(&store.LedgerEntry{}).Where("user_id = ?", u.ID).Count(&n).Error; err != nil || n != 1 {
		t.Errorf("%d ledger entries kept (%v), want the trial grant", n, err)
	}
	for _, r := range []req{{method: "GET", path: acc}, {method: "GET", path: acc + "/export"}, {method: "GET", path: acc + "/delete"},
		{method: "POST", path: acc + "/delete"}} {
		w := h.do(r)
		if w.Code != http.StatusGone || !strings.Contains(w.Body.String(), "no longer exists") {
			t.Errorf("%s %s after delete: %d, want 410 saying the account no longer exists", r.method, r.path, w.Code)
		}
	}

	h.subscribeConfirmed("ann@example.com", f.URL(), "instant")
	again, err := h.st.UserByEmail(ctx, "ann@example.com")
	if err != nil || again.ID == u.ID || again.Balance != 500 {
		t.Fatalf("signing up again: %+v %v, want a new account with the trial credits", again, err)
	}
	if len(h.subsOf(again)) != 1 || count() != 2 {
		t.Errorf("new account: %d subscriptions, feed count %d", len(h.subsOf(again)), count())
	}
}
