// Package matrix is the channel "matrix": an m.room.message (msgtype
// m.notice, with an HTML formatted_body) sent to a room through a
// homeserver's client-server API, PUT
// /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}, with the
// delivery's idempotency id as the transaction id (a retry is the same
// event) and the subscription's access token as a Bearer token. The
// target is the homeserver's URL with the room id as its fragment:
// https://matrix.example.org#!room:example.org. It must not do anything
// beyond that request: the outbox retries, charges and settles.
package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
)

// Name is the channel's name.
const Name = "matrix"

// maxText is the most of a post's text a message shows.
const maxText = 2000

// Channel is the Matrix channel.
type Channel struct{}

// New returns the Matrix channel.
func New() Channel { return Channel{} }

// Name is "matrix".
func (Channel) Name() string { return Name }

// Check validates the homeserver URL and its room fragment (a room id,
// "!…:server"), and requires the access token.
func (Channel) Check(t channel.Target) (channel.Target, error) {
	u, err := channel.CheckURL(t.URL)
	if err != nil {
		return t, err
	}
	if _, room := split(u); !strings.HasPrefix(room, "!") || !strings.Contains(room, ":") {
		return t, fmt.Errorf("%w: a matrix target is the homeserver's URL with the room id after #, such as https://matrix.example.org#!abc:example.org", channel.ErrBadTarget)
	}
	if strings.TrimSpace(t.Secret) == "" {
		return t, fmt.Errorf("%w: a matrix target needs the account's access token (--token)", channel.ErrBadTarget)
	}
	return channel.Target{URL: u, Secret: strings.TrimSpace(t.Secret)}, nil
}

// split returns the homeserver's base URL and the room id of a target.
func split(target string) (base, room string) {
	u, err := url.Parse(target)
	if err != nil {
		return target, ""
	}
	room = u.Fragment
	u.Fragment, u.RawFragment = "", ""
	return strings.TrimRight(u.String(), "/"), room
}

// Credential is true when requests carry a credential: the access token.
func (Channel) Credential(channel.Target) bool { return true }

// Render makes the send request.
func (Channel) Render(d channel.Delivery) (*channel.Request, error) {
	plain := channel.Lines(d, maxText, func(title, _ string) string { return title })
	rich := channel.Lines(d, maxText, func(title, u string) string {
		if u == "" {
			return html.EscapeString(title)
		}
		return `<a href="` + html.EscapeString(u) + `">` + html.EscapeString(title) + `</a>`
	})
	if len(plain) == 0 {
		return nil, fmt.Errorf("matrix: nothing to deliver")
	}
	for i := range rich {
		if !strings.HasPrefix(rich[i], "<a ") && !strings.HasPrefix(rich[i], "• <a") {
			rich[i] = html.EscapeString(rich[i])
		}
	}
	body, err := json.Marshal(map[string]string{"msgtype": "m.notice", "body": strings.Join(plain, "\n"),
		"format": "org.matrix.custom.html", "formatted_body": strings.Join(rich, "<br>")})
	if err != nil {
		return nil, err
	}
	base, room := split(d.Target.URL)
	u := base + "/_matrix/client/v3/rooms/" + url.PathEscape(room) + "/send/m.room.message/" + url.PathEscape(d.ID)
	h := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + d.Target.Secret}}
	return &channel.Request{Method: http.MethodPut, URL: u, Header: h, Body: body, Credential: Channel{}.Credential(d.Target)}, nil
}

// Deliver sends r.
func (Channel) Deliver(ctx context.Context, hc *http.Client, r *channel.Request) error {
	return channel.Send(ctx, hc, r, time.Now())
}

// Judge is channel.JudgeHTTP, with a 429's wait read from the
// homeserver's retry_after_ms.
func (Channel) Judge(err error) channel.Verdict {
	v := channel.JudgeHTTP(err)
	var he *channel.HTTPError
	if errors.As(err, &he) && he.Status == http.StatusTooManyRequests {
		var b struct {
			RetryAfterMS int64 `json:"retry_after_ms"`
		}
		if json.Unmarshal(he.Body, &b) == nil && b.RetryAfterMS > 0 {
			v.After = max(v.After, time.Duration(b.RetryAfterMS)*time.Millisecond)
		}
	}
	return v
}
