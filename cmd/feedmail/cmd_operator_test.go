package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/web"
)

// TestOperatorTokenImports: the token `feedmail operator token` prints,
// with the setting it prints, is taken by serve's web handler for a bulk
// import (200, the person imported); the same handler without the
// setting refuses it (401), so the wiring from the environment is whole.
func TestOperatorTokenImports(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	code, out, errs := cliFor(dsn, nil)("operator", "token")
	if code != 0 {
		t.Fatalf("operator token: exit %d: %s", code, errs)
	}
	tok := decodeJSON[operatorTokenJSON](t, out)
	name, sum, _ := strings.Cut(tok.Setting, "=")
	if !strings.HasPrefix(tok.Token, "fmop_") || name != "FEEDMAIL_OPERATOR_TOKEN_SHA256" || sum != tok.SHA256 {
		t.Fatalf("printed %+v", tok)
	}
	st := storetest.Open(t, storetest.Options{})
	for _, c := range []struct {
		setting string
		want    int
	}{{"", 401}, {tok.SHA256, 200}} {
		cfg, err := config.Load(func(k string) string {
			return map[string]string{"FEEDMAIL_OPERATOR_TOKEN_SHA256": c.setting}[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(web.New(web.Deps{Store: st, Config: cfg}).Handler())
		req, err := http.NewRequestWithContext(context.Background(), "POST", ts.URL+"/api/v1/operator/readers:import?confirmed=1",
			strings.NewReader(`{"email": "ann@mail.org", "feeds": [{"url": "https://feeds.org/a"}]}`+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ts.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("setting %q: %d %s, want %d", c.setting, resp.StatusCode, body, c.want)
		}
	}
	if _, err := st.UserByEmail(context.Background(), "ann@mail.org"); err != nil {
		t.Errorf("the import with the operator token stored nobody: %v", err)
	}
}
