package outbox

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/discord"
	"github.com/feedmail/feedmail/internal/channel/matrix"
	"github.com/feedmail/feedmail/internal/channel/ntfy"
	"github.com/feedmail/feedmail/internal/channel/slack"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/channeltest"
)

// Each chat and push channel, end to end: a new post reaches its local
// receiver (which follows the service's contract) once; the service's
// rate-limit answer puts the delivery back for at least the wait it asked
// for, with the outbox's backoff, and the retry gets through with the
// same idempotency id. Here Matrix is a stand-in for a homeserver's
// client-server API (for its rate-limit answer); TestMatrixToDendrite
// delivers to a real homeserver.
func TestChannelsDeliverEndToEnd(t *testing.T) {
	const token = "tk_0123456789"
	cases := []struct {
		name    string
		rc      func(t testing.TB) *channeltest.Receiver
		target  func(base string) channel.Target
		limited channeltest.Answer
		wait    time.Duration // the least wait the limit asked for
		check   func(t *testing.T, r channeltest.Request)
	}{
		{slack.Name, channeltest.Slack, func(b string) channel.Target { return channel.Target{URL: b + "/services/T0/B0/xyz"} },
			channeltest.SlackRateLimited(900), 15 * time.Minute, func(t *testing.T, r channeltest.Request) {
				var m struct{ Text string }
				if json.Unmarshal(r.Body, &m) != nil || !strings.Contains(m.Text, "<https://blog.example.org/posts/1|Post number 1>") ||
					!strings.Contains(m.Text, "Body of post 1") {
					t.Errorf("slack body = %s", r.Body)
				}
			}},
		{discord.Name, channeltest.Discord, func(b string) channel.Target { return channel.Target{URL: b + "/api/webhooks/1/abc"} },
			channeltest.DiscordRateLimited(1800.5), 30 * time.Minute, func(t *testing.T, r channeltest.Request) {
				var m struct {
					Embeds []struct{ Title, URL, Description string }
				}
				if json.Unmarshal(r.Body, &m) != nil || len(m.Embeds) != 1 || m.Embeds[0].Title != "Post number 1" ||
					m.Embeds[0].URL != "https://blog.example.org/posts/1" {
					t.Errorf("discord body = %s", r.Body)
				}
			}},
		{ntfy.Name, func(t testing.TB) *channeltest.Receiver { return channeltest.Ntfy(t, token) },
			func(b string) channel.Target { return channel.Target{URL: b + "/feeds", Secret: token} },
			channeltest.NtfyRateLimited(), RetryBase, func(t *testing.T, r channeltest.Request) {
				if r.Header.Get("Title") != "Post number 1" || r.Header.Get("Click") != "https://blog.example.org/posts/1" ||
					!strings.Contains(string(r.Body), "Body of post 1") {
					t.Errorf("ntfy request = %v %s", r.Header, r.Body)
				}
			}},
		{matrix.Name, func(t testing.TB) *channeltest.Receiver { return channeltest.Matrix(t, token, "!room:example.org") },
			func(b string) channel.Target { return channel.Target{URL: b + "#!room:example.org", Secret: token} },
			channeltest.MatrixRateLimited(1_200_000), 20 * time.Minute, func(t *testing.T, r channeltest.Request) {
				var m struct{ MsgType, Body string }
				if json.Unmarshal(r.Body, &m) != nil || !strings.Contains(m.Body, "Post number 1") ||
					!strings.Contains(r.Path, "/send/m.room.message/feedmail-") {
					t.Errorf("matrix request %s = %s", r.Path, r.Body)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := c.rc(t)
			fx, _ := newChanFixture(t, c.name, c.target(rc.URL()))
			rc.Then(c.limited)
			if n := fx.push(newPost(1)); n != 1 {
				t.Fatalf("the push queued %d deliveries, want 1", n)
			}
			fx.pass(fx.ob)
			rows := fx.rowsOf()
			if len(rows) != 1 || rows[0].State != store.OutboxQueued || rows[0].Attempts != 1 ||
				rows[0].NextAttemptAt.Before(fx.clk.Now().Add(c.wait)) {
				t.Fatalf("after the rate limit: rows = %+v, want queued, 1 attempt, due in %v or more", rows, c.wait)
			}
			fx.clk.Advance(c.wait + time.Minute)
			fx.pass(fx.ob)
			got, all := rc.Accepted(), rc.Requests()
			if len(got) != 1 || len(all) != 2 {
				t.Fatalf("receiver got %d requests, accepted %d; want 2 and 1", len(all), len(got))
			}
			if all[0].Path != all[1].Path {
				t.Errorf("retry went to %s, first try to %s", all[1].Path, all[0].Path)
			}
			c.check(t, got[0])
			if rows := fx.rowsOf(); rows[0].State != store.OutboxSent {
				t.Errorf("row = %+v, want sent", rows[0])
			}
			if b := fx.balance(fx.u); b != 9 {
				t.Errorf("balance = %d, want 9", b)
			}
		})
	}
}

// A target that refuses a delivery (401, 403, 400) fails that delivery,
// refunded, and keeps the subscription; a target the private-network
// guard refuses is refused the same way.
func TestChannelRefusedKeepsSubscription(t *testing.T) {
	rc := channeltest.Ntfy(t, "right")
	fx, _ := newChanFixture(t, ntfy.Name, channel.Target{URL: rc.URL() + "/feeds", Secret: "wrong"})
	fx.push(newPost(1))
	fx.pass(fx.ob)
	rows := fx.rowsOf()
	if len(rows) != 1 || rows[0].State != store.OutboxFailed || !strings.Contains(rows[0].LastError, "refused") {
		t.Fatalf("rows = %+v, want one failed as refused", rows)
	}
	if reqs := rc.Requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer wrong" {
		t.Errorf("requests = %+v", reqs)
	}
	if b := fx.balance(fx.u); b != 10 {
		t.Errorf("balance = %d, want 10 (refunded)", b)
	}
	var sub store.Subscription
	fx.s.DB.Take(&sub, fx.sub.ID)
	if sub.State != store.SubActive {
		t.Errorf("subscription is %s, want still active", sub.State)
	}
	if v := ntfy.New().Judge(&channel.HTTPError{Status: http.StatusForbidden}); v.Action != channel.Refused {
		t.Errorf("403 judged %v", v.Action)
	}
}
