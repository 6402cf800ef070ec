// Package discord is the channel "discord": a Discord webhook, one message
// per post (an embed with its title, link, text and feed) or digest issue.
// A 429 is honoured by its retry_after (seconds, in the JSON body) or,
// failing that, the Retry-After and X-RateLimit-Reset-After headers. It
// must not do anything beyond that request: the outbox retries, charges
// and settles.
package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
)

// Name is the channel's name.
const Name = "discord"

// Discord's limits: an embed's title 256, its description 4096, a
// message's content 2000 characters.
const (
	maxTitle   = 256
	maxDesc    = 4096
	maxContent = 2000
)

// Channel is the Discord channel.
type Channel struct{}

// New returns the Discord channel.
func New() Channel { return Channel{} }

// Name is "discord".
func (Channel) Name() string { return Name }

// Check validates the webhook URL; a secret is not used.
func (Channel) Check(t channel.Target) (channel.Target, error) {
	u, err := channel.CheckURL(t.URL)
	return channel.Target{URL: u}, err
}

type embed struct {
	Title       string        `json:"title,omitempty"`
	URL         string        `json:"url,omitempty"`
	Description string        `json:"description,omitempty"`
	Timestamp   string        `json:"timestamp,omitempty"`
	Author      *embedAuthor  `json:"author,omitempty"`
	Footer      *embedFooter  `json:"footer,omitempty"`
	Image       *embedPicture `json:"thumbnail,omitempty"`
}

type embedAuthor struct {
	Name string `json:"name"`
}
type embedFooter struct {
	Text string `json:"text"`
}
type embedPicture struct {
	URL string `json:"url"`
}

// link is Discord's markdown link.
func link(title, url string) string {
	if url == "" {
		return title
	}
	return "[" + strings.NewReplacer("[", "(", "]", ")").Replace(title) + "](" + url + ")"
}

// Credential is true when requests carry a credential: the webhook URL is itself the secret.
func (Channel) Credential(channel.Target) bool { return true }

// Render makes the webhook's JSON POST: an embed for a post, content
// lines for an issue.
func (Channel) Render(d channel.Delivery) (*channel.Request, error) {
	var msg map[string]any
	switch {
	case d.Post != nil:
		p := *d.Post
		e := embed{Title: channel.Clip(channel.TitleOf(p), maxTitle), URL: p.Link, Description: channel.Clip(p.Text, maxDesc),
			Footer: &embedFooter{Text: channel.Clip(channel.FeedName(p.Feed), 2048)}}
		if !p.Published.IsZero() {
			e.Timestamp = p.Published.UTC().Format(time.RFC3339)
		}
		if p.Author != "" {
			e.Author = &embedAuthor{Name: channel.Clip(p.Author, 256)}
		}
		if p.Media.Thumbnail != "" {
			e.Image = &embedPicture{URL: p.Media.Thumbnail}
		}
		msg = map[string]any{"embeds": []embed{e}, "allowed_mentions": map[string]any{"parse": []string{}}}
	case d.Issue != nil:
		content := strings.Join(channel.Lines(d, 0, link), "\n")
		msg = map[string]any{"content": channel.Clip(content, maxContent), "allowed_mentions": map[string]any{"parse": []string{}}}
	default:
		return nil, fmt.Errorf("discord: nothing to deliver")
	}
	body, err := json.Marshal(msg)
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

// Judge is channel.JudgeHTTP, with a 429's wait read from Discord's
// retry_after (body) or X-RateLimit-Reset-After when longer than
// Retry-After.
func (Channel) Judge(err error) channel.Verdict {
	v := channel.JudgeHTTP(err)
	var he *channel.HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusTooManyRequests {
		return v
	}
	var b struct {
		RetryAfter float64 `json:"retry_after"`
	}
	if json.Unmarshal(he.Body, &b) == nil && b.RetryAfter > 0 {
		v.After = max(v.After, channel.Seconds(b.RetryAfter))
	}
	if s, err := strconv.ParseFloat(he.Header.Get("X-RateLimit-Reset-After"), 64); err == nil && s > 0 {
		v.After = max(v.After, channel.Seconds(s))
	}
	return v
}
