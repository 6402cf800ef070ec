package channeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Ntfy is an ntfy server's publish endpoint: a POST or PUT to /{topic}
// with the message as the body and Title, Click, Tags, Markdown headers.
// With token set, a request without "Authorization: Bearer token" gets 401
// (code 40101) and a wrong token 403 (40301), as ntfy answers; a topic
// name ntfy refuses 404. Its rate limit answers 429 (42901).
func Ntfy(t testing.TB, token string) *Receiver {
	return start(t, func(w http.ResponseWriter, r *Request) bool {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			return fail(w, http.StatusMethodNotAllowed, map[string]any{"code": 40501, "http": 405, "error": "method not allowed"})
		}
		topic := strings.TrimPrefix(r.Path, "/")
		if topic == "" || strings.Contains(topic, "/") || len(topic) > 64 {
			return fail(w, http.StatusNotFound, map[string]any{"code": 40401, "http": 404, "error": "page not found"})
		}
		if token != "" {
			auth := r.Header.Get("Authorization")
			if auth == "" {
				return fail(w, http.StatusUnauthorized, map[string]any{"code": 40101, "http": 401, "error": "unauthorized"})
			}
			if auth != "Bearer "+token {
				return fail(w, http.StatusForbidden, map[string]any{"code": 40301, "http": 403, "error": "forbidden"})
			}
		}
		return true
	}, func(w http.ResponseWriter, r *Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "abc", "event": "message",
			"topic": strings.TrimPrefix(r.Path, "/"), "message": string(r.Body), "title": r.Header.Get("Title")})
	})
}

// NtfyRateLimited is ntfy's 429.
func NtfyRateLimited() Answer {
	return Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"Content-Type": "application/json"},
		Body: `{"code":42901,"http":429,"error":"limit reached: too many requests"}`}
}

// Matrix stands in for a homeserver's client-server API send endpoint
// (PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}):
// it checks the access token (401 M_MISSING_TOKEN / M_UNKNOWN_TOKEN), the
// room (403 M_FORBIDDEN for one it does not know, as for a room the user
// is not in), the event's msgtype and body (400 M_BAD_JSON), and answers
// {"event_id"} — the same id again for a transaction id it has seen.
func Matrix(t testing.TB, token, room string) *Receiver {
	var mu sync.Mutex
	events := map[string]string{}
	prefix := "/_matrix/client/v3/rooms/"
	return start(t, func(w http.ResponseWriter, r *Request) bool {
		auth := r.Header.Get("Authorization")
		switch {
		case auth == "":
			return fail(w, http.StatusUnauthorized, map[string]string{"errcode": "M_MISSING_TOKEN", "error": "Missing access token"})
		case auth != "Bearer "+token:
			return fail(w, http.StatusUnauthorized, map[string]string{"errcode": "M_UNKNOWN_TOKEN", "error": "Unknown access token"})
		}
		rest, ok := strings.CutPrefix(r.Path, prefix)
		parts := strings.Split(rest, "/")
		if !ok || r.Method != http.MethodPut || len(parts) != 4 || parts[1] != "send" || parts[2] != "m.room.message" {
			return fail(w, http.StatusNotFound, map[string]string{"errcode": "M_UNRECOGNIZED", "error": "Unrecognized request"})
		}
		if unescape(parts[0]) != room {
			return fail(w, http.StatusForbidden, map[string]string{"errcode": "M_FORBIDDEN", "error": "User not in room"})
		}
		var ev struct {
			MsgType string `json:"msgtype"`
			Body    string `json:"body"`
		}
		if json.Unmarshal(r.Body, &ev) != nil || ev.MsgType == "" || ev.Body == "" {
			return fail(w, http.StatusBadRequest, map[string]string{"errcode": "M_BAD_JSON", "error": "msgtype and body required"})
		}
		return true
	}, func(w http.ResponseWriter, r *Request) {
		txn := r.Path[strings.LastIndexByte(r.Path, '/')+1:]
		mu.Lock()
		id, seen := events[txn]
		if !seen {
			id = fmt.Sprintf("$event%d", len(events)+1)
			events[txn] = id
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"event_id": id})
	})
}

// MatrixRateLimited is a homeserver's 429 M_LIMIT_EXCEEDED with
// retry_after_ms.
func MatrixRateLimited(ms int) Answer {
	return Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"Content-Type": "application/json"},
		Body: fmt.Sprintf(`{"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests","retry_after_ms":%d}`, ms)}
}

// unescape undoes the path escaping of a room id ("!abc%3Aexample.org").
func unescape(s string) string {
	r := strings.NewReplacer("%21", "!", "%3A", ":", "%3a", ":", "%23", "#")
	return r.Replace(s)
}
