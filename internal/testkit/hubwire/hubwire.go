// Package hubwire holds the requests a WebSub hub sends that the test hubs
// (websubtest and hubtest) share: the GET a verification of intent or a
// denial makes to a callback, and the random challenges it carries.
//
// Test infrastructure: never linked into cmd/feedmail. It keeps no state
// and imports no testing package, so that commands such as feedfarm can
// use a hub built on it.
package hubwire

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
)

// Get sends a GET to callback with q added to the callback's own query
// (WebSub §5.3 keeps it) through client, and returns the status and up to
// limit bytes of the body, which is what a hub compares with its
// challenge.
func Get(ctx context.Context, client *http.Client, callback string, q url.Values, limit int64) (int, string, error) {
	u, err := url.Parse(callback)
	if err != nil {
		return 0, "", err
	}
	cq := u.Query()
	for k, vs := range q {
		cq[k] = vs
	}
	u.RawQuery = cq.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	return resp.StatusCode, string(b), nil
}

// RandomHex returns n random bytes in hex: a fresh challenge or secret
// that a subscriber cannot guess.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
