package matrix_test

import (
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/matrix"
)

func TestRenderPath(t *testing.T) {
	r, err := matrix.New().Render(channel.Delivery{ID: "feedmail-7", Target: channel.Target{URL: "https://m.example.org/#!abc:example.org", Secret: "syt_t"},
		Post: &channel.Post{Title: "A <b> post", Link: "https://a.example.org/1"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://m.example.org/_matrix/client/v3/rooms/%21abc:example.org/send/m.room.message/feedmail-7"; r.URL != want || r.Method != "PUT" {
		t.Errorf("%s %s, want PUT %s", r.Method, r.URL, want)
	}
	if r.Header.Get("Authorization") != "Bearer syt_t" {
		t.Errorf("authorization %q", r.Header.Get("Authorization"))
	}
}

func TestJudgeRateLimit(t *testing.T) {
	v := matrix.New().Judge(&channel.HTTPError{Status: 429, Body: []byte(`{"errcode":"M_LIMIT_EXCEEDED","retry_after_ms":2500}`)})
	if v.Action != channel.Retry || v.After != 2500*time.Millisecond {
		t.Errorf("%v after %v", v.Action, v.After)
	}
}
