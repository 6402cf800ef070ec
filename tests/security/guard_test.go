package security

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/poller"
)

// TestGuardThroughPollerAndSignup: with FEEDMAIL_ALLOW_PRIVATE_NETWORKS off,
// a feed served on loopback — however its address is spelled — is never
// fetched: the poller records the refusal as a failure with its public
// reason and the first penalty, and the signup form refuses the URL without
// creating anything. The feed server sees no request at all.
//
// Only loopback spellings are used here so that a broken guard could not
// send a packet off this machine; 10/8, 169.254.169.254, names that resolve
// to private addresses and redirects to each are covered in
// poller/fetcher/guard_extra_test.go, where a dial hook refuses to connect.
func TestGuardThroughPollerAndSignup(t *testing.T) {
	e := newEnv(t, envOpt{guard: true})
	fm := farm.New(e.clk)
	t.Cleanup(fm.Close)
	ff := fm.AddFeed(farm.Spec{Title: "Local", ItemCount: 2})
	port := fm.URL()[strings.LastIndexByte(fm.URL(), ':')+1:]
	urls := []string{
		ff.URL(),
		"http://[::1]:" + port + ff.Path(),
		"http://localhost:" + port + ff.Path(),
		"http://0.0.0.0:" + port + ff.Path(),
		"http://[::ffff:127.0.0.1]:" + port + ff.Path(),
		"http://127.1.2.3:" + port + ff.Path(),
		"http://2130706433:" + port + ff.Path(),
	}
	// Refused by this installation's own setting: no penalty, no streak.
	reason := poller.RefusedReasonPrefix + ": a private or local network address, not visited unless FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1; no penalty, tried again in 1 h"
	for i, u := range urls {
		t.Run("poll "+u, func(t *testing.T) {
			f, _, err := e.st.EnsureFeed(e.ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			e.reader(fmt.Sprintf("reader%d@example.net", i), f.ID, "")
			rep, err := e.poll.PollFeed(e.ctx, f.ID, "manual")
			if err != nil {
				t.Fatal(err)
			}
			got := e.feedByURL(u)
			if strings.Contains(u, "2130706433") && strings.HasPrefix(got.PollReason, "DNS lookup failed") {
				return // a resolver may not take the one-number spelling; nothing was fetched either way
			}
			if got.PollReason != reason || rep.Outcome != "refused" || got.ConsecutiveErrors != 0 {
				t.Errorf("reason %q (outcome %q, error %q), want %q", got.PollReason, rep.Outcome, rep.Error, reason)
			}
		})
		t.Run("signup "+u, func(t *testing.T) {
			email := fmt.Sprintf("signup%d@example.net", i)
			w := e.request("POST", "/subscriptions", url.Values{"email": {email}, "url": {u}, "delivery": {"instant"}}, nil)
			if w.Code == http.StatusOK && strings.Contains(w.Body.String(), "Check your inbox") {
				t.Fatalf("signup accepted a private address")
			}
			if _, err := e.st.UserByEmail(e.ctx, email); err == nil {
				var subs int64
				e.st.DB.Model(&store.Subscription{}).Joins("JOIN users ON users.id = subscriptions.user_id").
					Where("users.email = ?", email).Count(&subs)
				if subs != 0 {
					t.Errorf("signup created %d subscriptions", subs)
				}
			}
		})
	}
	if n := len(fm.Requests()); n != 0 {
		t.Fatalf("the loopback feed server got %d requests", n)
	}
}
