package web

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/token"
)

func (h *harness) accountPath(u *store.User) string {
	return "/account/" + h.sign.SignIssued(token.Account, u.ID, h.clk.Now(), h.clk.Now().Add(time.Hour))
}

func TestAccountPage(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	f, g := h.feed("First feed"), h.feed("Second feed")
	u := h.subscribeConfirmed("ann@example.com", f.URL(), "instant")
	h.subscribeConfirmed("ann@example.com", g.URL(), "weekly")
	acc := h.accountPath(u)

	w := h.get(acc)
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("%d\n%s", w.Code, body)
	}
	for _, want := range []string{"ann@example.com", "First feed", "Second feed", "500 credits", "Trial credits",
		"/feeds/status?url=" + url.QueryEscape(f.URL()), "does not take payments", "Weekly", acc + "/opml"} {
		if !strings.Contains(body, want) {
			t.Errorf("account page lacks %q", want)
		}
	}
	if w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", w.Header().Get("Cache-Control"))
	}
	subs := h.subsOf(u)
	weekly := *subs[1].DigestID

	// Switch the first feed into the digest and back.
	w = h.post(acc+"/subscriptions/"+itoa(int(subs[0].ID))+"/delivery", url.Values{"delivery": {"digest-" + itoa(int(weekly))}})
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), acc+"?done=delivery") {
		t.Fatalf("delivery: %d %s", w.Code, w.Header().Get("Location"))
	}
	if s := h.subsOf(u)[0]; s.DigestID == nil || *s.DigestID != weekly {
		t.Fatalf("not moved into the digest: %+v", s)
	}
	h.post(acc+"/subscriptions/"+itoa(int(subs[0].ID))+"/delivery", url.Values{"delivery": {"instant"}})
	if s := h.subsOf(u)[0]; s.DigestID != nil {
		t.Fatalf("not instant: %+v", s)
	}

	// Another person's subscription or digest is not reachable.
	other := h.subscribeConfirmed("bob@example.com", f.URL(), "daily")
	osub := h.subsOf(other)[0]
	if w := h.post(acc+"/subscriptions/"+itoa(int(osub.ID))+"/unsubscribe", nil); w.Code != http.StatusNotFound {
		t.Fatalf("someone else's subscription: %d", w.Code)
	}
	if w := h.post(acc+"/subscriptions/"+itoa(int(subs[0].ID))+"/delivery", url.Values{"delivery": {"digest-" + itoa(int(*osub.DigestID))}}); w.Code != http.StatusNotFound {
		t.Fatalf("someone else's digest: %d", w.Code)
	}

	// Digests: create with a preset, create with cron, errors inline, edit.
	w = h.post(acc+"/digests", url.Values{"name": {"Mornings"}, "preset": {"daily"}, "zone": {"Europe/Paris"}})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("create digest: %d\n%s", w.Code, w.Body.String())
	}
	dg, err := h.st.DigestByName(ctx, u.ID, "Mornings")
	if err != nil || dg.Schedule != "0 7 * * *" || dg.Timezone != "Europe/Paris" || !dg.NextSlotAt.After(h.clk.Now()) {
		t.Fatalf("digest %+v %v", dg, err)
	}
	bad := []struct {
		form  url.Values
		field string
		says  string
	}{
		{url.Values{"name": {"Bad cron"}, "preset": {"custom"}, "spec": {"every tuesday"}, "zone": {"UTC"}}, "dg-spec-0", "not a schedule"},
		{url.Values{"name": {"Never"}, "preset": {"custom"}, "spec": {"0 0 30 2 *"}, "zone": {"UTC"}}, "dg-spec-0", "never comes round"},
		{url.Values{"name": {"Spam"}, "preset": {"custom"}, "spec": {"@every 1s"}, "zone": {"UTC"}}, "dg-spec-0", "at least 10s"},
		{url.Values{"name": {"mornings"}, "preset": {"daily"}, "zone": {"UTC"}}, "dg-name-0", "already have"},
		{url.Values{"name": {""}, "preset": {"daily"}, "zone": {"UTC"}}, "dg-name-0", "give the digest a name"},
		{url.Values{"name": {"Z"}, "preset": {"daily"}, "zone": {"Nowhere/Town"}}, "dg-zone-0", "time zone"},
	}
	for _, c := range bad {
		w := h.post(acc+"/digests", c.form)
		errs := fieldErrors(w.Body.String())
		if w.Code != http.StatusUnprocessableEntity || !strings.Contains(errs[c.field], c.says) {
			t.Errorf("%v: %d %v", c.form, w.Code, errs)
		}
		if name := c.form.Get("name"); name != "" && !strings.Contains(w.Body.String(), `value="`+name+`"`) {
			t.Errorf("%v: the form lost the name", c.form)
		}
	}
	w = h.post(acc+"/digests", url.Values{"id": {itoa(int(dg.ID))}, "name": {"Weekday mornings"}, "preset": {"custom"},
		"spec": {"30 6 * * 1-5"}, "zone": {"America/New_York"}})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("edit digest: %d\n%s", w.Code, w.Body.String())
	}
	dg, _ = h.st.DigestByID(ctx, dg.ID)
	if dg.Name != "Weekday mornings" || dg.Schedule != "30 6 * * 1-5" || dg.Timezone != "America/New_York" {
		t.Fatalf("edited %+v", dg)
	}
	if w := h.post(acc+"/digests", url.Values{"id": {itoa(int(*osub.DigestID))}, "name": {"Mine now"}, "preset": {"daily"}, "zone": {"UTC"}}); w.Code != http.StatusNotFound {
		t.Fatalf("editing someone else's digest: %d", w.Code)
	}

	// Unsubscribe from the account page.
	w = h.post(acc+"/subscriptions/"+itoa(int(subs[0].ID))+"/unsubscribe", nil)
	if w.Code != http.StatusSeeOther || len(h.subsOf(u)) != 1 {
		t.Fatalf("unsubscribe: %d %+v", w.Code, h.subsOf(u))
	}
	if w := h.get(acc + "?done=unsubscribed"); !strings.Contains(w.Body.String(), "Unsubscribed.") {
		t.Fatal("no message after unsubscribing")
	}
}

func TestAccountConfirmsPending(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Pending feed")
	h.signup("ann@example.com", f.URL(), "instant")
	u, _ := h.st.UserByEmail(context.Background(), "ann@example.com")
	acc := h.accountPath(u)
	if b := h.get(acc).Body.String(); !strings.Contains(b, "Waiting for your confirmation") {
		t.Fatal("pending state not shown")
	}
	sub := h.subsOf(u)[0]
	if w := h.post(acc+"/subscriptions/"+itoa(int(sub.ID))+"/confirm", nil); w.Code != http.StatusSeeOther {
		t.Fatalf("%d", w.Code)
	}
	u, _ = h.st.UserByID(context.Background(), u.ID)
	if h.subsOf(u)[0].State != store.SubActive || u.Balance != 500 || u.ConfirmedAt == nil {
		t.Fatalf("%+v %+v", h.subsOf(u)[0], u)
	}
	if by := h.subsOf(u)[0].ConfirmedBy; by != store.ConfirmedByAccount {
		t.Errorf("confirmed on the account page, recorded as confirmed by %q", by)
	}
}

// upload posts an OPML file to the account page.
func (h *harness) upload(acc string, doc []byte, delivery string) *httptest.ResponseRecorder {
	h.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("delivery", delivery)
	fw, _ := mw.CreateFormFile("file", "subs.opml")
	_, _ = fw.Write(doc)
	_ = mw.Close()
	r := httptest.NewRequest("POST", acc+"/opml", &buf)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	w := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(w, r)
	return w
}

func TestOPMLImportAndExport(t *testing.T) {
	h := newHarness(t)
	have := h.feed("Already mine")
	u := h.subscribeConfirmed("ann@example.com", have.URL(), "instant")
	acc := h.accountPath(u)
	fresh := h.feed("Fresh feed")
	missing := h.farm.AddFeed(farm.Spec{Status: http.StatusNotFound})
	notFeed := h.farm.AddSite()
	var doc bytes.Buffer
	if err := opml.Write(&doc, "mine", []opml.Outline{
		{Title: "Fresh", XMLURL: fresh.URL()},
		{Title: "Mine", XMLURL: have.URL()},
		{Title: "Gone", XMLURL: missing.URL()},
		{Title: "Just a page", XMLURL: notFeed},
		{Title: "Nonsense", XMLURL: "mailto:x@example.com"},
	}); err != nil {
		t.Fatal(err)
	}
	w := h.upload(acc, doc.Bytes(), "instant")
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, "1 added · 1 already there · 3 failed") {
		t.Fatalf("%d\n%s", w.Code, body)
	}
	for _, want := range []string{"could not be fetched", "has no feed", "not a web address"} {
		if !strings.Contains(body, want) {
			t.Errorf("report lacks the reason %q", want)
		}
	}
	if strings.Contains(body, "404") { // coarse words: no status, no network detail
		t.Errorf("report tells the status of a failed fetch")
	}
	subs := h.subsOf(u)
	if len(subs) != 2 || subs[1].FeedURL != fresh.URL() || subs[1].State != store.SubActive || subs[1].FeedTitle != "Fresh feed" {
		t.Fatalf("after import: %+v", subs)
	}
	if subs[0].ConfirmedBy != store.ConfirmedByLink || subs[1].ConfirmedBy != store.ConfirmedByAccount {
		t.Errorf("confirmed by %q (signup link) and %q (account import), want link and account", subs[0].ConfirmedBy, subs[1].ConfirmedBy)
	}
	// Again: everything is already there or still failing.
	if b := h.upload(acc, doc.Bytes(), "instant").Body.String(); !strings.Contains(b, "0 added · 2 already there · 3 failed") {
		t.Fatalf("second import: %s", b)
	}
	if w := h.upload(acc, []byte("<html>no</html>"), "instant"); w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "not an OPML") {
		t.Fatalf("not OPML: %d", w.Code)
	}
	for _, bad := range []string{"weekly", "digest-x", "Instant "} {
		if w := h.upload(acc, doc.Bytes(), bad); w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "Pick a delivery") {
			t.Fatalf("delivery %q: %d, want 422 asking to pick a delivery", bad, w.Code)
		}
	}

	w = h.get(acc + "/opml")
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/x-opml") {
		t.Fatalf("export: %d %s", w.Code, w.Header().Get("Content-Type"))
	}
	outs, err := opml.Parse(w.Body)
	if err != nil || len(outs) != 2 || outs[0].XMLURL != have.URL() || outs[1].Title != "Fresh feed" {
		t.Fatalf("export: %+v %v", outs, err)
	}
}

// TestAccountDigestDeleteAndConfirmAll: the account page deletes a digest
// (its feeds go instant or end, as picked) and confirms every waiting feed
// with one button.
func TestAccountDigestDeleteAndConfirmAll(t *testing.T) {
	h := newHarness(t)
	u := h.subscribeConfirmed("dee@example.com", h.feed("Instant later").URL(), "weekly")
	acc := h.accountPath(u)
	subs := h.subsOf(u)
	weekly := *subs[0].DigestID
	del := acc + "/digests/" + itoa(int(weekly)) + "/delete"
	if w := h.post(del, url.Values{}); w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("delete without saying what becomes of its feeds: %d", w.Code)
	}
	if w := h.post(del, url.Values{"feeds": {"instant"}}); w.Code != http.StatusSeeOther ||
		!strings.Contains(w.Header().Get("Location"), "done=digestgone") {
		t.Fatalf("delete: %d %s", w.Code, w.Header().Get("Location"))
	}
	if subs := h.subsOf(u); len(subs) != 1 || subs[0].DigestID != nil || subs[0].State != store.SubActive {
		t.Fatalf("after delete: %+v; want the feed active and instant", subs)
	}
	if w := h.post(del, url.Values{"feeds": {"instant"}}); w.Code != http.StatusNotFound {
		t.Fatalf("deleting it again: %d, want 404", w.Code)
	}

	// Three imported feeds wait; one button confirms them all.
	ctx := context.Background()
	for _, name := range []string{"Import one", "Import two", "Import three"} {
		feed, _, err := h.st.EnsureFeed(ctx, h.feed(name).URL())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.st.Subscribe(ctx, u.ID, feed.ID, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	if body := h.get(acc).Body.String(); !strings.Contains(body, "Confirm all 3") {
		t.Fatalf("account page lacks the confirm-all button")
	}
	if w := h.post(acc+"/subscriptions/confirm-all", url.Values{}); w.Code != http.StatusSeeOther {
		t.Fatalf("confirm all: %d", w.Code)
	}
	active := 0
	for _, s := range h.subsOf(u) {
		if s.State == store.SubActive {
			active++
		}
	}
	if active != 4 {
		t.Fatalf("%d active subscriptions after confirming all, want 4", active)
	}
}

// TestAccountPageShowsBounces: the page says when mail to the address
// bounced, and that deliveries are paused once it bounces for good.
func TestAccountPageShowsBounces(t *testing.T) {
	h := newHarness(t)
	u := h.subscribeConfirmed("ann@example.com", h.feed("First feed").URL(), "instant")
	acc := h.accountPath(u)
	if body := h.get(acc).Body.String(); strings.Contains(body, `id="bounces"`) {
		t.Fatal("a page without bounces says something about them")
	}
	at := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		upd  map[string]any
		want string
	}{
		{map[string]any{"soft_bounces": 2, "last_bounce": "soft 4.2.2 mailbox full", "last_bounce_at": at}, "does not stop deliveries"},
		{map[string]any{"hard_bounces": 1, "last_bounce": "hard 5.1.1 no such user", "last_bounce_at": at}, "5.1.1 no such user"},
		{map[string]any{"hard_bounces": 3, "bouncing_since": at}, "Deliveries are paused since 20 Nov 2026"},
	} {
		if err := h.st.DB.Model(&store.User{}).Where("id = ?", u.ID).Updates(c.upd).Error; err != nil {
			t.Fatal(err)
		}
		if body := h.get(acc).Body.String(); !strings.Contains(body, c.want) {
			t.Errorf("after %v the page lacks %q", c.upd, c.want)
		}
	}
}
