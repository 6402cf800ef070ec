package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
)

// TestAccountSettings: the account page sets a subscription's filters and
// format; a bad term or format shows the problem next to the form as
// typed and changes nothing; another person's subscription is not found.
func TestAccountSettings(t *testing.T) {
	h := newHarness(t)
	f := h.feed("Filtered feed")
	u := h.subscribeConfirmed("ann@example.com", f.URL(), "instant")
	acc := h.accountPath(u)
	sub := h.subsOf(u)[0]
	path := acc + "/subscriptions/" + itoa(int(sub.ID)) + "/settings"

	body := h.get(acc).Body.String()
	for _, want := range []string{`action="` + path + `"`, `name="include"`, `name="exclude"`, `<option value="full" selected>`} {
		if !strings.Contains(body, want) {
			t.Errorf("account page lacks %q", want)
		}
	}

	w := h.post(path, url.Values{"include": {"golang,, open source"}, "exclude": {"/sponsor(ed)?/"}, "format": {"summary"}})
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), acc+"?done=settings") {
		t.Fatalf("save: %d %s", w.Code, w.Header().Get("Location"))
	}
	got := h.subsOf(u)[0]
	if got.IncludeTerms != "golang, open source" || got.ExcludeTerms != "/sponsor(ed)?/" || got.Format != store.FormatSummary {
		t.Fatalf("saved %q %q %q", got.IncludeTerms, got.ExcludeTerms, got.Format)
	}
	body = h.get(acc + "?done=settings").Body.String()
	for _, want := range []string{"Filters and format saved.", `value="golang, open source"`, `<option value="summary" selected>`, "(filtered)"} {
		if !strings.Contains(body, want) {
			t.Errorf("page after saving lacks %q", want)
		}
	}

	bad := []struct {
		form url.Values
		says string
	}{
		{url.Values{"include": {"/(/"}, "format": {"full"}}, "Include: invalid regular expression /(/: missing closing )"},
		{url.Values{"include": {"ok"}, "format": {"huge"}}, `Unknown format "huge"`},
		{url.Values{"exclude": {"!!!"}, "format": {"full"}}, `Exclude: term "!!!" has no letter or digit`},
	}
	for _, c := range bad {
		w := h.post(path, c.form)
		errs := fieldErrors(w.Body.String())
		if w.Code != http.StatusUnprocessableEntity || !strings.HasPrefix(html.UnescapeString(errs["st-"+itoa(int(sub.ID))]), c.says) {
			t.Errorf("%v: %d %v, want %q", c.form, w.Code, errs, c.says)
		}
		if v := c.form.Get("include"); v != "" && !strings.Contains(w.Body.String(), `value="`+v+`"`) {
			t.Errorf("%v: the form lost what was typed", c.form)
		}
	}
	if again := h.subsOf(u)[0]; again.IncludeTerms != got.IncludeTerms || again.ExcludeTerms != got.ExcludeTerms || again.Format != got.Format {
		t.Errorf("bad input changed the settings: %+v", again)
	}

	other := h.subscribeConfirmed("bob@example.com", f.URL(), "instant")
	if w := h.post(h.accountPath(other)+"/subscriptions/"+itoa(int(sub.ID))+"/settings", url.Values{"format": {"title"}}); w.Code != http.StatusNotFound {
		t.Errorf("another person's subscription: %d", w.Code)
	}
	if _, err := h.st.UserByEmail(context.Background(), "bob@example.com"); err != nil {
		t.Fatal(err)
	}
}
