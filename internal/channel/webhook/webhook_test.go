package webhook_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/webhook"
)

// The specification's published example signs to its published value.
func TestSignSpecExample(t *testing.T) {
	got, err := webhook.Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil || got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Errorf("Sign = %q, %v", got, err)
	}
}

func TestCheck(t *testing.T) {
	ok, err := webhook.New().Check(channel.Target{URL: "https://x.example.org/in"})
	if err != nil || !strings.HasPrefix(ok.Secret, webhook.SecretPrefix) || len(ok.Secret) < 40 {
		t.Errorf("Check without a secret = %+v, %v; want a new whsec_ secret", ok, err)
	}
	again, _ := webhook.New().Check(channel.Target{URL: "https://x.example.org/in"})
	if again.Secret == ok.Secret {
		t.Error("two checks made the same secret")
	}
	if kept, err := webhook.New().Check(ok); err != nil || kept.Secret != ok.Secret {
		t.Errorf("Check keeps a good secret: %+v, %v", kept, err)
	}
	for _, bad := range []channel.Target{{URL: "https://x.example.org/", Secret: "whsec_c2hvcnQ="}, {URL: "mailto:x@example.org"}} {
		if _, err := webhook.New().Check(bad); !errors.Is(err, channel.ErrBadTarget) {
			t.Errorf("Check(%+v) = %v, want a bad target", bad, err)
		}
	}
}

// An issue renders as one digest.issue event with its feeds, their posts
// and the count of the posts left out.
func TestRenderIssue(t *testing.T) {
	secret, _ := webhook.NewSecret()
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	r, err := webhook.New().Render(channel.Delivery{ID: "feedmail-9", At: at, Target: channel.Target{URL: "https://x.example.org/in", Secret: secret},
		Issue: &channel.Issue{Name: "Morning", Edition: "Mon 2 Mar", Feeds: []channel.IssueFeed{{Feed: channel.Feed{Title: "A"},
			Posts: []channel.Post{{Title: "one", Link: "https://a.example.org/1"}}, More: 5}}}})
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Type string
		Data webhook.IssueData
	}
	if err := json.Unmarshal(r.Body, &b); err != nil || b.Type != webhook.TypeIssue || b.Data.Edition != "Mon 2 Mar" ||
		len(b.Data.Feeds) != 1 || b.Data.Feeds[0].Posts[0].Title != "one" || b.Data.Feeds[0].More != 5 {
		t.Errorf("body %s: %v", r.Body, err)
	}
	if r.Header.Get("webhook-id") != "feedmail-9" || r.Header.Get("webhook-timestamp") != "1772442000" {
		t.Errorf("headers %v", r.Header)
	}
	want, _ := webhook.Sign(secret, "feedmail-9", at, r.Body)
	if r.Header.Get("webhook-signature") != want {
		t.Errorf("signature %q, want %q", r.Header.Get("webhook-signature"), want)
	}
}
