// Package slack is the channel "slack": a Slack incoming webhook (and
// Mattermost's or Rocket.Chat's, which take the same JSON), one message
// with mrkdwn links per post or digest issue. Slack's 429 carries
// Retry-After, which the shared judgement honours. It must not do
// anything beyond that request: the outbox retries, charges and settles.
package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
)

// Name is the channel's name.
const Name = "slack"

// maxText is the most of a post's text a message shows.
const maxText = 1500

// Channel is the Slack channel.
type Channel struct{}

// New returns the Slack channel.
func New() Channel { return Channel{} }

// Name is "slack".
func (Channel) Name() string { return Name }

// Check validates the webhook URL; a secret is not used.
func (Channel) Check(t channel.Target) (channel.Target, error) {
	u, err := channel.CheckURL(t.URL)
	return channel.Target{URL: u}, err
}

// escape escapes Slack's control characters in text.
var escape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

// link is Slack's mrkdwn link.
func link(title, url string) string {
	if url == "" {
		return escape(title)
	}
	return "<" + url + "|" + strings.ReplaceAll(escape(title), "|", "¦") + ">"
}

// Credential is true when requests carry a credential: the webhook URL is itself the secret.
func (Channel) Credential(channel.Target) bool { return true }

// Render makes the webhook's JSON POST: {"text": …} with links.
func (Channel) Render(d channel.Delivery) (*channel.Request, error) {
	lines := channel.Lines(d, maxText, link)
	if len(lines) == 0 {
		return nil, fmt.Errorf("slack: nothing to deliver")
	}
	lines[0] = "*" + lines[0] + "*"
	body, err := json.Marshal(map[string]any{"text": strings.Join(lines, "\n"), "unfurl_links": false})
	if err != nil {
		return nil, err
	}
	h := http.Header{"Content-Type": {"application/json"}}
	return &channel.Request{Method: http.MethodPost, URL: d.Target.URL, Header: h, Body: body, Credential: Channel{}.Credential(d.Target)}, nil
}

// Deliver sends r.
func (Channel) Deliver(ctx context.Context, hc *http.Client, r *channel.Request) error {
	return channel.Send(ctx, hc, r, time.Now())
}

// Judge is channel.JudgeHTTP (Slack answers 404 no_service and 410
// channel_is_archived for a webhook that is gone).
func (Channel) Judge(err error) channel.Verdict { return channel.JudgeHTTP(err) }
