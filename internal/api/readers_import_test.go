package api

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/token"
)

const importPath = "/api/v1/operator/readers:import"

// operatorHarness is a harness whose server takes a new operator token,
// returned with it, and whose imports can queue confirmation emails.
func operatorHarness(t *testing.T) (*harness, string) {
	t.Helper()
	h := newHarness(t, Limit{})
	plain, sum, err := NewOperatorToken()
	if err != nil {
		t.Fatal(err)
	}
	h.srv.OperatorTokenSHA256 = sum
	sign, err := token.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	h.srv.Subs.Links = links.New("http://feedmail.test", sign, "feedmail@feedmail.test")
	return h, plain
}

// ndjson returns one line per value (a string goes as it is).
func ndjson(t *testing.T, lines ...any) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		if s, ok := l.(string); ok {
			b.WriteString(s + "\n")
			continue
		}
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	return b.String()
}

type line = importLine
type feed = importFeed

// importCall is a POST of body to the import route with query and token.
func importCall(query, tok, body string) call {
	return call{method: "POST", path: importPath + query, token: tok, body: body, ctype: "application/x-ndjson"}
}

// TestImportReadersAuth: only the operator token imports; a person's
// working token is 403, no token or any other 401, and with no operator
// token configured nothing passes.
func TestImportReadersAuth(t *testing.T) {
	h, op := operatorHarness(t)
	_, person := h.user("ann@mail.org")
	other, _, err := NewOperatorToken()
	if err != nil {
		t.Fatal(err)
	}
	body := ndjson(t, line{Email: "bea@mail.org", Feeds: []feed{{URL: "https://feeds.org/a"}}})
	for _, c := range []struct {
		name, tok string
		closed    bool
		want      int
	}{
		{"none", "", false, 401},
		{"person", person, false, 403},
		{"another operator token", other, false, 401},
		{"not a token", "fm_nope", false, 401},
		{"operator, routes closed", op, true, 401},
		{"person, routes closed", person, true, 403},
		{"operator", op, false, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			saved := h.srv.OperatorTokenSHA256
			if c.closed {
				h.srv.OperatorTokenSHA256 = ""
			}
			w := h.do(importCall("?confirmed=1", c.tok, body))
			h.srv.OperatorTokenSHA256 = saved
			if w.Code != c.want {
				t.Fatalf("%d %s, want %d", w.Code, w.Body, c.want)
			}
			_, err := h.st.UserByEmail(context.Background(), "bea@mail.org")
			if imported := err == nil; imported != (c.want == 200) {
				t.Errorf("answered %d and bea imported: %v", w.Code, imported)
			}
		})
	}
}

// importMixed is a body with good lines and one of each problem the API
// can meet: a line that is not JSON, one with a member it does not know,
// a person twice, a feed twice, a bad URL, a subscription the person had.
func importMixed(t *testing.T) string {
	return ndjson(t,
		line{Email: "ann@mail.org", Feeds: []feed{{URL: "https://feeds.org/a", Title: "A", Folder: "Moved"}, {URL: "feeds.org/b"}}},
		`{"email": "broken@mail.org", "feeds": [`,
		`{"email": "odd@mail.org", "feeds": [], "digest": "weekly"}`,
		"",
		line{Email: "ANN@mail.org", Feeds: []feed{{URL: "https://feeds.org/c"}}},
		line{Email: "had@mail.org", Feeds: []feed{{URL: "https://feeds.org/known"}, {URL: "https://feeds.org/a"},
			{URL: "https://feeds.org/a#x"}, {URL: "javascript:alert(1)"}}},
		`not json at all`,
		line{Email: "cy@mail.org", Feeds: []feed{{URL: "https://feeds.org/b"}}},
	)
}

// TestImportReadersMixedAPI: every problem is reported in the answer's
// problem_list with its line, and the rest is imported (the line after a
// malformed one too); confirmed=1 queues no email, confirmed=0 one per
// person with a subscription added.
func TestImportReadersMixedAPI(t *testing.T) {
	for _, confirmed := range []bool{true, false} {
		t.Run(fmt.Sprint("confirmed=", confirmed), func(t *testing.T) {
			h, op := operatorHarness(t)
			had, _ := h.user("had@mail.org")
			h.subscribed(had, "https://feeds.org/known")
			q := "?confirmed=0&batch=2"
			if confirmed {
				q = "?confirmed=1&batch=2"
			}
			w := h.do(importCall(q, op, importMixed(t)))
			if w.Code != 200 {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			var rep struct {
				importReport
				List []subscribe.ReaderProblem `json:"problem_list"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range rep.List {
				got = append(got, p.Source+": "+p.Kind+" "+p.URL)
			}
			want := []string{"line 2: malformed list ", "line 3: malformed list ", "line 5: duplicate reader ",
				"line 6: duplicate subscription https://feeds.org/a", "line 6: malformed feed URL javascript:alert(1)",
				"line 7: malformed list ", "line 6: duplicate subscription https://feeds.org/known"}
			if !slices.Equal(got, want) {
				t.Errorf("problems\n%q\nwant\n%q", got, want)
			}
			wantSum := subscribe.ReadersSummary{Lists: 7, Readers: 3, Created: 2, SkippedLists: 4, Added: 4, Already: 2,
				Failed: 1, Problems: len(want)}
			if !confirmed {
				wantSum.Notices = 3
			}
			if rep.ReadersSummary != wantSum || rep.Confirmed != confirmed || rep.ByKind[subscribe.ProblemBadList] != 3 {
				t.Errorf("report %+v\nwant    %+v, confirmed %v, 3 malformed lists", rep.importReport, wantSum, confirmed)
			}
			checkImported(t, h, confirmed)
		})
	}
}

// checkImported checks the accounts and emails TestImportReadersMixedAPI
// left.
func checkImported(t *testing.T, h *harness, confirmed bool) {
	t.Helper()
	ctx := context.Background()
	state, notices := store.SubPending, int64(3)
	if confirmed {
		state, notices = store.SubActive, 0
	}
	for email, n := range map[string]int{"ann@mail.org": 2, "cy@mail.org": 1, "had@mail.org": 2} {
		u, err := h.st.UserByEmail(ctx, email)
		if err != nil {
			t.Fatalf("%s: %v", email, err)
		}
		subs, err := h.st.SubscriptionsOfUser(ctx, u.ID)
		if err != nil || len(subs) != n {
			t.Fatalf("%s: %d subscriptions (%v), want %d", email, len(subs), err, n)
		}
		for _, s := range subs {
			if s.FeedURL != "https://feeds.org/known" && s.State != state {
				t.Errorf("%s: %s is %s, want %s", email, s.FeedURL, s.State, state)
			}
		}
	}
	for _, email := range []string{"broken@mail.org", "odd@mail.org"} {
		if _, err := h.st.UserByEmail(ctx, email); err == nil {
			t.Errorf("%s: an account was made from a malformed line", email)
		}
	}
	var queued int64
	if err := h.st.DB.Model(&store.OutboxRow{}).Where("kind = ?", store.KindNotice).Count(&queued).Error; err != nil {
		t.Fatal(err)
	}
	if queued != notices {
		t.Errorf("%d confirmation emails queued, want %d", queued, notices)
	}
}

// TestImportReadersTooLarge: a body over the cap is a 413 problem, and
// the lines before the cap are imported and counted in it.
func TestImportReadersTooLarge(t *testing.T) {
	h, op := operatorHarness(t)
	first := ndjson(t, line{Email: "ann@mail.org", Feeds: []feed{{URL: "https://feeds.org/a"}}})
	h.srv.ImportMaxBytes = int64(len(first) + 10)
	body := first + ndjson(t, line{Email: "bea@mail.org", Feeds: []feed{{URL: "https://feeds.org/b"}}})
	w := h.do(importCall("?confirmed=1", op, body))
	m := decode(t, w)
	imp, _ := m["import"].(map[string]any)
	if w.Code != 413 || imp["added"] != 1.0 || imp["readers"] != 1.0 {
		t.Fatalf("%d %s; want 413 with 1 reader and 1 subscription imported", w.Code, w.Body)
	}
	if _, err := h.st.UserByEmail(context.Background(), "ann@mail.org"); err != nil {
		t.Errorf("the line before the cap was not imported: %v", err)
	}
}

// TestImportReadersBadRequest: a query or media type the route does not
// take is refused before anything is read.
func TestImportReadersBadRequest(t *testing.T) {
	h, op := operatorHarness(t)
	body := ndjson(t, line{Email: "ann@mail.org", Feeds: []feed{{URL: "https://feeds.org/a"}}})
	for _, c := range []struct {
		name string
		c    call
		want int
	}{
		{"confirmed maybe", importCall("?confirmed=maybe", op, body), 400},
		{"batch 0", importCall("?batch=0", op, body), 400},
		{"unknown parameter", importCall("?confirm=1", op, body), 400},
		{"csv", call{method: "POST", path: importPath, token: op, body: body, ctype: "text/csv"}, 415},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.c.docInvalid = c.name != "unknown parameter"
			if w := h.do(c.c); w.Code != c.want || w.Header().Get("Content-Type") != problemJSONType {
				t.Errorf("%d %q %s, want %d problem", w.Code, w.Header().Get("Content-Type"), w.Body, c.want)
			}
		})
	}
	if _, err := h.st.UserByEmail(context.Background(), "ann@mail.org"); err == nil {
		t.Error("a refused request imported someone")
	}
}
