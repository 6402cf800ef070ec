// Package webhook is the channel "webhook": a JSON POST of each post or
// digest issue to the subscriber's URL, signed as Standard Webhooks
// specifies (webhook-id, webhook-timestamp, webhook-signature: v1 and the
// base64 HMAC-SHA256 of "id.timestamp.body" under the subscription's
// whsec_ secret). The webhook-id is the delivery's idempotency id, the
// same on every retry. It must not do anything beyond that request: the
// outbox retries, charges and settles.
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
)

// Name is the channel's name.
const Name = "webhook"

// SecretPrefix starts every signing secret; the rest is base64 of the key.
const SecretPrefix = "whsec_"

// Channel is the webhook channel.
type Channel struct{}

// New returns the webhook channel.
func New() Channel { return Channel{} }

// Name is "webhook".
func (Channel) Name() string { return Name }

// Check validates the URL and makes a new signing secret when t has none;
// a secret given must be a whsec_ secret of at least 24 bytes.
func (Channel) Check(t channel.Target) (channel.Target, error) {
	u, err := channel.CheckURL(t.URL)
	if err != nil {
		return t, err
	}
	t.URL = u
	if t.Secret == "" {
		if t.Secret, err = NewSecret(); err != nil {
			return t, err
		}
		return t, nil
	}
	if k, err := key(t.Secret); err != nil || len(k) < 24 {
		return t, fmt.Errorf("%w: the signing secret must be %s followed by base64 of 24 bytes or more", channel.ErrBadTarget, SecretPrefix)
	}
	return t, nil
}

// NewSecret returns a fresh signing secret: whsec_ and 32 random bytes.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("signing secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// key decodes a whsec_ secret.
func key(secret string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
}

// Event types of the body.
const (
	TypePost  = "post.published"
	TypeIssue = "digest.issue"
)

// Body is a delivery's JSON body.
type Body struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// IssueData is the data of a digest issue.
type IssueData struct {
	Digest  string      `json:"digest"`
	Edition string      `json:"edition"`
	Feeds   []IssueFeed `json:"feeds"`
}

// IssueFeed is one feed of an issue. More counts the feed's posts of the
// issue not in Posts (an issue carries at most a few of each feed).
type IssueFeed struct {
	Feed  channel.Feed       `json:"feed"`
	Posts []channel.PostJSON `json:"posts"`
	More  int                `json:"more"`
}

// Render makes the signed POST of d.
func (Channel) Render(d channel.Delivery) (*channel.Request, error) {
	b := Body{Timestamp: d.At.UTC()}
	switch {
	case d.Post != nil:
		b.Type, b.Data = TypePost, channel.JSONOf(*d.Post)
	case d.Issue != nil:
		data := IssueData{Digest: d.Issue.Name, Edition: d.Issue.Edition}
		for _, f := range d.Issue.Feeds {
			jf := IssueFeed{Feed: f.Feed, More: f.More}
			for _, p := range f.Posts {
				jf.Posts = append(jf.Posts, channel.JSONOf(p))
			}
			data.Feeds = append(data.Feeds, jf)
		}
		b.Type, b.Data = TypeIssue, data
	default:
		return nil, fmt.Errorf("webhook: nothing to deliver")
	}
	body, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("webhook body: %w", err)
	}
	sig, err := Sign(d.Target.Secret, d.ID, d.At, body)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", d.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(d.At.Unix(), 10))
	h.Set("webhook-signature", sig)
	return &channel.Request{Method: http.MethodPost, URL: d.Target.URL, Header: h, Body: body}, nil
}

// Sign returns the webhook-signature value of body sent as id at at:
// "v1," and the base64 HMAC-SHA256 of "id.unix-seconds.body".
func Sign(secret, id string, at time.Time, body []byte) (string, error) {
	k, err := key(secret)
	if err != nil || len(k) == 0 {
		return "", fmt.Errorf("webhook: the signing secret is not a %s secret", SecretPrefix)
	}
	m := hmac.New(sha256.New, k)
	m.Write([]byte(id + "." + strconv.FormatInt(at.Unix(), 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// Deliver sends r.
func (Channel) Deliver(ctx context.Context, hc *http.Client, r *channel.Request) error {
	return channel.Send(ctx, hc, r, time.Now())
}

// Judge is channel.JudgeHTTP.
func (Channel) Judge(err error) channel.Verdict { return channel.JudgeHTTP(err) }
