package poller

import (
	"net/http"
	"testing"
	"time"

	"github.com/feedmail/feedmail/poller/fetcher"
	"github.com/feedmail/feedmail/store"
)

// repeatsLastLine decides which polls are folded, and a folded poll is
// written with only the columns store.PollRecord.Fold allows: every
// condition that keeps another column unchanged is checked here.
func TestRepeatsLastLine(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	hourAgo, dayAgo := now.Add(-time.Hour), now.Add(-LogRunMax)
	base := func() (store.Feed, OutcomeKind, string, *fetcher.Response, store.FeedState) {
		f := store.Feed{State: store.FeedActive, LastStatus: http.StatusNotModified, LoggedAt: &hourAgo}
		st := store.FeedState{State: store.FeedActive}
		return f, NotModified, "", &fetcher.Response{Status: http.StatusNotModified}, st
	}
	tests := []struct {
		name  string
		edit  func(f *store.Feed, kind *OutcomeKind, lastError *string, resp *fetcher.Response, st *store.FeedState)
		folds bool
	}{
		{"a 304 after a 304", func(*store.Feed, *OutcomeKind, *string, *fetcher.Response, *store.FeedState) {}, true},
		{"a 200 now", func(_ *store.Feed, k *OutcomeKind, _ *string, _ *fetcher.Response, _ *store.FeedState) {
			*k = Unchanged
		}, false},
		{"a 200 before", func(f *store.Feed, _ *OutcomeKind, _ *string, _ *fetcher.Response, _ *store.FeedState) {
			f.LastStatus = 200
		}, false},
		{"an error now", func(_ *store.Feed, _ *OutcomeKind, e *string, _ *fetcher.Response, _ *store.FeedState) { *e = "boom" }, false},
		{"an error before", func(f *store.Feed, _ *OutcomeKind, _ *string, _ *fetcher.Response, _ *store.FeedState) {
			f.LastError = "boom"
		}, false},
		{"an error streak before", func(f *store.Feed, _ *OutcomeKind, _ *string, _ *fetcher.Response, _ *store.FeedState) {
			f.ConsecutiveErrors = 1
		}, false},
		{"errors since before", func(f *store.Feed, _ *OutcomeKind, _ *string, _ *fetcher.Response, _ *store.FeedState) {
			f.ErrorsSince = &hourAgo
		}, false},
		{"an error streak now", func(_ *store.Feed, _ *OutcomeKind, _ *string, _ *fetcher.Response, st *store.FeedState) {
			st.ConsecutiveErrors = 1
		}, false},
		{"errors since now", func(_ *store.Feed, _ *OutcomeKind, _ *string, _ *fetcher.Response, st *store.FeedState) {
			st.ErrorsSince = &hourAgo
		}, false},
		{"a redirect", func(_ *store.Feed, _ *OutcomeKind, _ *string, r *fetcher.Response, _ *store.FeedState) {
			r.Redirects = []fetcher.Hop{{Status: 302}}
		}, false},
		{"a new URL", func(_ *store.Feed, _ *OutcomeKind, _ *string, _ *fetcher.Response, st *store.FeedState) {
			st.URL = "https://example.com/new"
		}, false},
		{"a change of state", func(_ *store.Feed, _ *OutcomeKind, _ *string, _ *fetcher.Response, st *store.FeedState) {
			st.State = store.FeedBlacklisted
		}, false},
		{"no line yet (pushed last)", func(f *store.Feed, _ *OutcomeKind, _ *string, _ *fetcher.Response, _ *store.FeedState) {
			f.LoggedAt = nil
		}, false},
		{"the line is a day old", func(f *store.Feed, _ *OutcomeKind, _ *string, _ *fetcher.Response, _ *store.FeedState) {
			f.LoggedAt = &dayAgo
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, kind, lastError, resp, st := base()
			tt.edit(&f, &kind, &lastError, resp, &st)
			if got := repeatsLastLine(f, kind, lastError, resp, st, now); got != tt.folds {
				t.Fatalf("repeatsLastLine = %v, want %v", got, tt.folds)
			}
		})
	}
}
