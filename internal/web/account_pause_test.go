package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// TestAccountPauseAndResume: the account page pauses and resumes one feed
// and the whole account, says until when, and refuses a date in the past
// or another person's subscription without changing anything.
func TestAccountPauseAndResume(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Paused feed")
	u := h.subscribeConfirmed("pat@example.com", f.URL(), "instant")
	acc := h.accountPath(u)
	sub := h.subsOf(u)[0]
	id := itoa(int(sub.ID))

	if body := h.get(acc).Body.String(); !strings.Contains(body, "Pause this feed") || !strings.Contains(body, "Pause all email") {
		t.Fatalf("account page lacks the pause forms:\n%s", body)
	}
	loc, err := time.LoadLocation(u.Timezone)
	if err != nil {
		t.Fatal(err)
	}
	day := h.clk.Now().In(loc).AddDate(0, 0, 10).Format(time.DateOnly)
	w := h.post(acc+"/pause", url.Values{"sub": {id}, "until": {day}})
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), acc+"?done=paused") {
		t.Fatalf("pause a feed: %d %s", w.Code, w.Header().Get("Location"))
	}
	if s := h.subsOf(u)[0]; s.PausedAt == nil || s.PausedUntil == nil || s.PausedUntil.In(loc).Format(time.DateOnly) != day || s.PausedUntil.In(loc).Hour() != 0 {
		t.Fatalf("subscription after pausing: %+v", s.Subscription)
	}
	body := h.get(acc).Body.String()
	if !strings.Contains(body, "Paused until") || !strings.Contains(body, "Resume this feed") {
		t.Fatalf("account page does not say the feed is paused:\n%s", body)
	}
	if w := h.post(acc+"/resume", url.Values{"sub": {id}}); w.Code != http.StatusSeeOther {
		t.Fatalf("resume a feed: %d", w.Code)
	}
	if s := h.subsOf(u)[0]; s.PausedAt != nil {
		t.Fatalf("still paused: %+v", s.Subscription)
	}

	// The whole account, until resumed.
	if w := h.post(acc+"/pause", url.Values{"until": {""}}); w.Code != http.StatusSeeOther {
		t.Fatalf("pause the account: %d", w.Code)
	}
	if body := h.get(acc).Body.String(); !strings.Contains(body, "Paused until you resume") || !strings.Contains(body, "Resume all email") {
		t.Fatalf("account page does not say the account is paused:\n%s", body)
	}
	h.post(acc+"/resume", nil)

	// Bad input changes nothing.
	past := h.clk.Now().In(loc).AddDate(0, 0, -1).Format(time.DateOnly)
	if w := h.post(acc+"/pause", url.Values{"until": {past}}); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "Pick a later date") {
		t.Fatalf("date in the past: %d", w.Code)
	}
	if w := h.post(acc+"/pause", url.Values{"until": {"soon"}}); w.Code != http.StatusBadRequest {
		t.Fatalf("unreadable date: %d", w.Code)
	}
	other := h.subscribeConfirmed("quinn@example.com", f.URL(), "instant")
	osub := h.subsOf(other)[0]
	if w := h.post(acc+"/pause", url.Values{"sub": {itoa(int(osub.ID))}}); w.Code != http.StatusNotFound {
		t.Fatalf("someone else's subscription: %d", w.Code)
	}
	var n int64
	if err := h.st.DB.Model(&store.Subscription{}).Where("paused_at IS NOT NULL").Count(&n).Error; err != nil || n != 0 {
		t.Fatalf("%d subscriptions paused after bad input (%v)", n, err)
	}
	if err := h.st.DB.Model(&store.User{}).Where("paused_at IS NOT NULL").Count(&n).Error; err != nil || n != 0 {
		t.Fatalf("%d accounts paused after bad input (%v)", n, err)
	}
}
