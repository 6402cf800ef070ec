package discord_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/discord"
)

// A 429 waits for the longest of Retry-After, the body's retry_after and
// X-RateLimit-Reset-After.
func TestJudgeRateLimit(t *testing.T) {
	cases := []struct {
		name string
		err  *channel.HTTPError
		want time.Duration
	}{
		{"body", &channel.HTTPError{Status: 429, Body: []byte(`{"retry_after": 64.57, "global": false}`)}, 64570 * time.Millisecond},
		{"header", &channel.HTTPError{Status: 429, RetryAfter: 2 * time.Second, Header: http.Header{"X-Ratelimit-Reset-After": {"3.5"}}}, 3500 * time.Millisecond},
		{"retry-after only", &channel.HTTPError{Status: 429, RetryAfter: 9 * time.Second}, 9 * time.Second},
	}
	for _, c := range cases {
		if v := discord.New().Judge(c.err); v.Action != channel.Retry || v.After != c.want {
			t.Errorf("%s: %v after %v, want retry after %v", c.name, v.Action, v.After, c.want)
		}
	}
	if v := discord.New().Judge(&channel.HTTPError{Status: 404, Body: []byte(`{"code": 10015}`)}); v.Action != channel.Gone {
		t.Errorf("unknown webhook: %v, want gone", v.Action)
	}
}
