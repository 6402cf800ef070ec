package channeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Slack is a Slack incoming webhook (Mattermost and Rocket.Chat take the
// same): a POST of JSON with "text" or "blocks" answers 200 "ok"; a body
// without them 400 "invalid_payload" (no_text); a wrong path 404
// "no_service". Its rate limit is SlackRateLimited.
func Slack(t testing.TB) *Receiver {
	rc := start(t, func(w http.ResponseWriter, r *Request) bool {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.Path, "/services/") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "no_service")
			return false
		}
		var m map[string]any
		if json.Unmarshal(r.Body, &m) != nil || (m["text"] == nil && m["blocks"] == nil) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, "invalid_payload")
			return false
		}
		return true
	}, func(w http.ResponseWriter, _ *Request) { _, _ = io.WriteString(w, "ok") })
	return rc
}

// SlackRateLimited is Slack's answer past its rate limit: 429 with
// Retry-After in seconds.
func SlackRateLimited(seconds int) Answer {
	return Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": fmt.Sprint(seconds)}, Body: "rate_limited"}
}

// Discord is a Discord webhook (POST /api/webhooks/{id}/{token}): JSON with
// "content" (at most 2000 characters) or "embeds" (at most 10) answers 204;
// a body breaking that 400 with Discord's error JSON; another path 404
// "Unknown Webhook" (code 10015). Its rate limit is DiscordRateLimited.
func Discord(t testing.TB) *Receiver {
	return start(t, func(w http.ResponseWriter, r *Request) bool {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.Path, "/api/webhooks/") {
			return fail(w, http.StatusNotFound, map[string]any{"message": "Unknown Webhook", "code": 10015})
		}
		var m struct {
			Content string           `json:"content"`
			Embeds  []map[string]any `json:"embeds"`
		}
		if json.Unmarshal(r.Body, &m) != nil || (m.Content == "" && len(m.Embeds) == 0) ||
			len([]rune(m.Content)) > 2000 || len(m.Embeds) > 10 {
			return fail(w, http.StatusBadRequest, map[string]any{"message": "Cannot send an empty message", "code": 50006})
		}
		return true
	}, func(w http.ResponseWriter, _ *Request) { w.WriteHeader(http.StatusNoContent) })
}

// DiscordRateLimited is Discord's 429: retry_after in seconds (a float) in
// the JSON, with the Retry-After and X-RateLimit-* headers.
func DiscordRateLimited(seconds float64) Answer {
	return Answer{Status: http.StatusTooManyRequests, Header: map[string]string{
		"Content-Type": "application/json", "Retry-After": fmt.Sprint(int(seconds + 0.999)),
		"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": fmt.Sprint(seconds),
		"X-RateLimit-Scope": "user"},
		Body: fmt.Sprintf(`{"message": "You are being rate limited.", "retry_after": %v, "global": false}`, seconds)}
}
