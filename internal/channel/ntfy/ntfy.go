// Package ntfy is the channel "ntfy": a POST to an ntfy topic URL with the
// post's text as the message, its title in Title and its link in Click,
// and, when the subscription has one, its access token as a Bearer
// token. It must not do anything beyond that request: the outbox retries,
// charges and settles.
package ntfy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
)

// Name is the channel's name.
const Name = "ntfy"

// maxMessage keeps a message under ntfy's 4,096-byte message limit (longer
// ones become attachments).
const maxMessage = 1000

// Channel is the ntfy channel.
type Channel struct{}

// New returns the ntfy channel.
func New() Channel { return Channel{} }

// Name is "ntfy".
func (Channel) Name() string { return Name }

// Check validates the topic URL (a server and one path segment, the
// topic); the secret, optional, is an access token.
func (Channel) Check(t channel.Target) (channel.Target, error) {
	u, err := channel.CheckURL(t.URL)
	if err != nil {
		return t, err
	}
	p, _ := url.Parse(u)
	if topic := strings.Trim(p.Path, "/"); topic == "" || strings.Contains(topic, "/") {
		return t, fmt.Errorf("%w: an ntfy target is the topic's URL, such as https://ntfy.example.org/mytopic", channel.ErrBadTarget)
	}
	t.URL, t.Secret = u, strings.TrimSpace(t.Secret)
	return t, nil
}

// Credential is true when requests carry a credential: an access token, when one is set.
func (Channel) Credential(t channel.Target) bool { return t.Secret != "" }

// Render makes the publish request.
func (Channel) Render(d channel.Delivery) (*channel.Request, error) {
	lines := channel.Lines(d, maxMessage, func(title, _ string) string { return title })
	if len(lines) == 0 {
		return nil, fmt.Errorf("ntfy: nothing to deliver")
	}
	msg := strings.Join(lines[1:], "\n")
	if msg == "" {
		msg = lines[0]
	}
	h := http.Header{}
	h.Set("Title", headerSafe(channel.Subject(d)))
	if d.Post != nil && d.Post.Link != "" {
		h.Set("Click", d.Post.Link)
	}
	h.Set("Tags", "newspaper")
	if d.Target.Secret != "" {
		h.Set("Authorization", "Bearer "+d.Target.Secret)
	}
	return &channel.Request{Method: http.MethodPost, URL: d.Target.URL, Header: h, Body: []byte(channel.Clip(msg, maxMessage)), Credential: Channel{}.Credential(d.Target)}, nil
}

// headerSafe makes s one line of at most 250 runes.
func headerSafe(s string) string {
	return channel.Clip(strings.Join(strings.Fields(s), " "), 250)
}

// Deliver sends r.
func (Channel) Deliver(ctx context.Context, hc *http.Client, r *channel.Request) error {
	return channel.Send(ctx, hc, r, time.Now())
}

// Judge is channel.JudgeHTTP (ntfy's 401 and 403 are the target's fault,
// its 429 a retry).
func (Channel) Judge(err error) channel.Verdict { return channel.JudgeHTTP(err) }
