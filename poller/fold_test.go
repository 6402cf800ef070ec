package poller

import (
	"net/http"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
)

// repeatsLastLine decides which polls are folded, and a folded poll is
// written with only the columns store.PollRecord.Fold allows: every
// condition that keeps another column unchanged is checked here.
func TestRepeatsLastLine(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	hourAgo, dayAgo := now.Add(-time.Hour), now.Add(-LogRunMax)
	// poll is what repeatsLastLine looks at; base is a 304 after a 304.
	type poll struct {
		f         store.Feed
		kind      OutcomeKind
		lastError string
		resp      fetcher.Response
		st        store.FeedState
	}
	base := func() poll {
		return poll{
			f:    store.Feed{State: store.FeedActive, LastStatus: http.StatusNotModified, LoggedAt: &hourAgo},
			kind: NotModified, resp: fetcher.Response{Status: http.StatusNotModified},
			st: store.FeedState{State: store.FeedActive},
		}
	}
	tests := []struct {
		name  string
		edit  func(p *poll)
		folds bool
	}{
		{"a 304 after a 304", func(*poll) {}, true},
		{"a 200 now", func(p *poll) { p.kind = Unchanged }, false},
		{"a 200 before", func(p *poll) { p.f.LastStatus = 200 }, false},
		{"an error now", func(p *poll) { p.lastError = "boom" }, false},
		{"an error before", func(p *poll) { p.f.LastError = "boom" }, false},
		{"an error streak before", func(p *poll) { p.f.ConsecutiveErrors = 1 }, false},
		{"errors since before", func(p *poll) { p.f.ErrorsSince = &hourAgo }, false},
		{"an error streak now", func(p *poll) { p.st.ConsecutiveErrors = 1 }, false},
		{"errors since now", func(p *poll) { p.st.ErrorsSince = &hourAgo }, false},
		{"a redirect", func(p *poll) { p.resp.Redirects = []fetcher.Hop{{Status: 302}} }, false},
		{"a new URL", func(p *poll) { p.st.URL = "https://example.com/new" }, false},
		{"a change of state", func(p *poll) { p.st.State = store.FeedBlacklisted }, false},
		{"no line yet (pushed last)", func(p *poll) { p.f.LoggedAt = nil }, false},
		{"the line is a day old", func(p *poll) { p.f.LoggedAt = &dayAgo }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			tt.edit(&p)
			if got := repeatsLastLine(&p.f, p.kind, p.lastError, &p.resp, &p.st, now); got != tt.folds {
				t.Fatalf("repeatsLastLine = %v, want %v", got, tt.folds)
			}
		})
	}
}
