package fetcher

import (
	"context"
	"testing"
)

// TestRequestAccept: a request's own Accept replaces the feed types; none
// keeps them.
func TestRequestAccept(t *testing.T) {
	for _, tc := range []struct{ accept, want string }{{"", Accept}, {"text/html", "text/html"}} {
		req, err := BuildRequest(context.Background(), Config{}, Request{URL: "https://example.com/p", Accept: tc.accept})
		if err != nil {
			t.Fatal(err)
		}
		if got := req.Header.Get("Accept"); got != tc.want {
			t.Errorf("Accept %q: sent %q, want %q", tc.accept, got, tc.want)
		}
	}
}
