package poller

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// TestClassify runs Classify over each class of answer, with no store.
func TestClassify(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const url, moved = "https://example.com/feed", "https://example.com/new-feed"
	primed := now.Add(-48 * time.Hour)
	itemDate := now.Add(-10 * 24 * time.Hour)
	// feed is a feed primed two days ago, polled fine last time, with an ETag.
	feed := func() *store.Feed {
		return &store.Feed{ID: 7, URL: url, State: store.FeedActive, CreatedAt: now.Add(-24 * time.Hour),
			ValidatorURL: url, ETag: `"old"`, BodyHash: "h1", PrimedAt: &primed, LastStatus: http.StatusOK}
	}
	resp := func(status int) *fetcher.Response {
		return &fetcher.Response{RequestURL: url, FinalURL: url, Status: status, Header: http.Header{}}
	}
	parsed := &newitems.Feed{Title: "T", SiteURL: "https://example.com/",
		Items: []newitems.Item{{Identity: "a", Published: itemDate}}}
	dnsErr := &fetcher.Error{Kind: fetcher.KindDNS, URL: url, Err: errors.New("no such host")}

	tests := []struct {
		name   string
		feed   func(f *store.Feed)
		answer func() Answer
		check  func(t *testing.T, c Classification)
	}{
		{"304 with a new ETag", nil, func() Answer {
			r := resp(http.StatusNotModified)
			r.ETag = `"new"`
			return Answer{Resp: r}
		}, func(t *testing.T, c Classification) {
			want(t, c.Result.Kind, NotModified)
			want(t, c.State.ETag, `"new"`)
			want(t, c.State.BodyHash, "h1")
			want(t, *c.State.LastSuccessAt, now)
			want(t, c.Decision.Interval, 5*time.Minute)
			want(t, c.State.PollReason, "default 5 min: answered in 0 s with ETag")
		}},
		{"304 without validators keeps the stored ones", nil, func() Answer {
			r := resp(http.StatusNotModified)
			r.FinalURL = moved
			return Answer{Resp: r}
		}, func(t *testing.T, c Classification) {
			want(t, c.Result.Kind, NotModified)
			want(t, c.State.ETag, `"old"`)
			want(t, c.State.ValidatorURL, url)
		}},
		{"200 with the same body", nil, func() Answer {
			r := resp(http.StatusOK)
			r.BodyHash = "h1"
			return Answer{Resp: r}
		}, func(t *testing.T, c Classification) {
			want(t, c.Result.Kind, Unchanged)
			want(t, c.State.ETag, "") // validators as received
			want(t, c.State.PollReason, "default 15 min: answered in 0 s without ETag or Last-Modified")
			want(t, c.LastError, "")
		}},
		{"200 with new items", nil, func() Answer {
			r := resp(http.StatusOK)
			r.BodyHash, r.ETag = "h2", `"e2"`
			return Answer{Resp: r, Parsed: parsed, Delivered: 1}
		}, func(t *testing.T, c Classification) {
			want(t, c.Result.Kind, OK)
			want(t, c.Result.NewItems, true)
			want(t, c.State.BodyHash, "h2")
			want(t, c.State.Title, "T")
			want(t, *c.State.LastNewItemAt, now)
			want(t, *c.State.NewestItemDate, itemDate)
			want(t, c.Decision.Interval, 5*time.Minute)
		}},
		{"200 first parse", func(f *store.Feed) { f.PrimedAt, f.BodyHash = nil, "" }, func() Answer {
			r := resp(http.StatusOK)
			r.BodyHash = "h2"
			return Answer{Resp: r, Parsed: parsed}
		}, func(t *testing.T, c Classification) {
			want(t, c.Result.Kind, OK)
			want(t, *c.State.PrimedAt, now)
			want(t, *c.State.LastNewItemAt, itemDate)
		}},
		{"200 that is not a feed", nil, func() Answer {
			r := resp(http.StatusOK)
			r.BodyHash = "h3"
			return Answer{Resp: r, ParseErr: fmt.Errorf("html page: %w", newitems.ErrNotAFeed)}
		}, func(t *testing.T, c Classification) {
			want(t, c.Result.Kind, Failure)
			want(t, c.State.BodyHash, "h1")
			want(t, c.State.ETag, `"old"`)
			want(t, c.State.PollReason, "not a feed: penalty 1 h (1st consecutive error)")
			want(t, c.State.ConsecutiveErrors, 1)
			want(t, *c.State.ErrorsSince, now)
			want(t, c.LastError != "", true)
		}},
		{"301 to a feed", nil, func() Answer {
			r := resp(http.StatusOK)
			r.BodyHash, r.FinalURL, r.PermanentURL = "h1", moved, moved
			r.Redirects = []fetcher.Hop{{Status: http.StatusMovedPermanently, From: url, To: moved}}
			return Answer{Resp: r}
		}, func(t *testing.T, c Classification) {
			want(t, c.MovedTo, moved)
			want(t, c.State.ValidatorURL, moved)
			want(t, c.Fold, false)
		}},
		{"308 to an error", nil, func() Answer {
			r := resp(http.StatusNotFound)
			r.FinalURL, r.PermanentURL = moved, moved
			r.Redirects = []fetcher.Hop{{Status: http.StatusPermanentRedirect, From: url, To: moved}}
			return Answer{Resp: r}
		}, func(t *testing.T, c Classification) {
			want(t, c.MovedTo, "")
		}},
		{"302 keeps the URL", nil, func() Answer {
			r := resp(http.StatusOK)
			r.BodyHash, r.FinalURL = "h1", moved
			r.Redirects = []fetcher.Hop{{Status: http.StatusFound, From: url, To: moved}}
			return Answer{Resp: r}
		}, func(t *testing.T, c Classification) {
			want(t, c.MovedTo, "")
			want(t, c.State.ValidatorURL, moved)
		}},
		{"404", nil, func() Answer { return Answer{Resp: resp(http.StatusNotFound)} }, func(t *testing.T, c Classification) {
			want(t, c.Result.Kind, HTTPError)
			want(t, c.LastError, "404 Not Found")
			want(t, c.Decision.Interval, 24*time.Hour)
			want(t, c.State.PollReason, "404: penalty 24 h (1st consecutive error)")
			want(t, c.State.LastSuccessAt == nil, true)
		}},
		{"410", nil, func() Answer { return Answer{Resp: resp(http.StatusGone)} }, func(t *testing.T, c Classification) {
			want(t, c.State.State, StateGone)
			want(t, c.NewlyGone, true)
			want(t, strings.HasPrefix(c.State.PollReason, "410 Gone: polling stopped"), true)
		}},
		{"410 again", func(f *store.Feed) { f.State = store.FeedGone }, func() Answer {
			return Answer{Resp: resp(http.StatusGone)}
		}, func(t *testing.T, c Classification) {
			want(t, c.State.State, StateGone)
			want(t, c.NewlyGone, false)
		}},
		{"403", nil, func() Answer { return Answer{Resp: resp(http.StatusForbidden)} }, func(t *testing.T, c Classification) {
			want(t, c.Decision.Interval, 4*time.Hour)
			want(t, c.Decision.HostBackoffUntil.IsZero(), true)
		}},
		{"429 without Retry-After", nil, func() Answer { return Answer{Resp: resp(http.StatusTooManyRequests)} }, func(t *testing.T, c Classification) {
			want(t, c.Decision.Interval, 4*time.Hour)
			want(t, c.Decision.HostBackoffUntil, now.Add(4*time.Hour))
		}},
		{"503 with Retry-After", nil, func() Answer {
			r := resp(http.StatusServiceUnavailable)
			r.Header.Set("Retry-After", "120")
			return Answer{Resp: r}
		}, func(t *testing.T, c Classification) {
			want(t, c.Decision.HostBackoffUntil, now.Add(2*time.Minute))
			want(t, c.Decision.Interval, 15*time.Minute)
		}},
		{"500", nil, func() Answer { return Answer{Resp: resp(http.StatusInternalServerError)} }, func(t *testing.T, c Classification) {
			want(t, c.LastError, "500 Internal Server Error")
			want(t, c.Decision.Interval, 4*time.Hour)
		}},
		{"500 after 91 days of errors", func(f *store.Feed) {
			since := now.Add(-91 * 24 * time.Hour)
			f.ConsecutiveErrors, f.ErrorsSince = 60, &since
		}, func() Answer { return Answer{Resp: resp(http.StatusInternalServerError)} }, func(t *testing.T, c Classification) {
			want(t, c.State.State, StateBlacklisted)
			want(t, c.NewlyBlacklisted, true)
			want(t, c.State.ConsecutiveErrors, 61)
		}},
		{"DNS failure", nil, func() Answer { return Answer{Resp: resp(0), Err: dnsErr} }, func(t *testing.T, c Classification) {
			want(t, c.Result.Kind, Failure)
			want(t, c.Result.Failure, "DNS lookup failed")
			want(t, c.LastError, dnsErr.Error())
			want(t, c.State.PollReason, "DNS lookup failed: penalty 1 h (1st consecutive error)")
		}},
		{"200 cut short: a partial success with a warning", nil, func() Answer {
			r := resp(http.StatusOK)
			r.BodyHash = "h2"
			p := *parsed
			p.Warning = &newitems.Warning{Kind: newitems.WarnTruncated, Text: "the feed ends on line 9 after 1 complete item\nwithout its closing tags"}
			return Answer{Resp: r, Parsed: &p, Delivered: 1}
		}, func(t *testing.T, c Classification) {
			want(t, c.Result.Kind, OK)
			want(t, c.Partial, true)
			want(t, c.Warning, "the feed ends on line 9 after 1 complete item without its closing tags")
			want(t, c.LastError, "")
			want(t, c.State.LastError, c.Warning)
			want(t, c.State.BodyHash, "h2")
			want(t, c.State.ConsecutiveErrors, 0)
			want(t, c.Decision.Penalty, false)
			want(t, *c.State.LastSuccessAt, now)
			want(t, *c.State.LastNewItemAt, now)
		}},
		{"200 with unseen items: a success with a warning", nil, func() Answer {
			r := resp(http.StatusOK)
			r.BodyHash = "h2"
			return Answer{Resp: r, Parsed: &newitems.Feed{Title: "T", Warning: &newitems.Warning{Kind: newitems.WarnItemsUnseen, Text: "12 <item> elements"}}}
		}, func(t *testing.T, c Classification) {
			want(t, c.Result.Kind, OK)
			want(t, c.Partial, false)
			want(t, c.State.LastError, "12 <item> elements")
			want(t, c.Decision.Penalty, false)
		}},
		{"a sound 200 clears the warning", func(f *store.Feed) { f.LastError = "12 <item> elements" }, func() Answer {
			r := resp(http.StatusOK)
			r.BodyHash = "h2"
			return Answer{Resp: r, Parsed: parsed}
		}, func(t *testing.T, c Classification) {
			want(t, c.Warning, "")
			want(t, c.State.LastError, "")
		}},
		{"the same body keeps the warning", func(f *store.Feed) { f.LastError = "12 <item> elements" }, func() Answer {
			r := resp(http.StatusOK)
			r.BodyHash = "h1"
			return Answer{Resp: r}
		}, func(t *testing.T, c Classification) {
			want(t, c.Result.Kind, Unchanged)
			want(t, c.State.LastError, "12 <item> elements")
			want(t, c.Partial, false)
		}},
		{"a 304 keeps the warning", func(f *store.Feed) { f.LastError = "12 <item> elements" }, func() Answer {
			return Answer{Resp: resp(http.StatusNotModified)}
		}, func(t *testing.T, c Classification) {
			want(t, c.State.LastError, "12 <item> elements")
		}},
		{"a 304 after an error keeps no error", func(f *store.Feed) {
			f.LastError, f.ConsecutiveErrors = "500 Internal Server Error", 1
		}, func() Answer {
			return Answer{Resp: resp(http.StatusNotModified)}
		}, func(t *testing.T, c Classification) {
			want(t, c.State.LastError, "")
		}},
		{"an error replaces the warning", func(f *store.Feed) { f.LastError = "12 <item> elements" }, func() Answer {
			return Answer{Resp: resp(http.StatusInternalServerError)}
		}, func(t *testing.T, c Classification) {
			want(t, c.State.LastError, "500 Internal Server Error")
			want(t, c.Warning, "")
		}},
		{"304 after 304 folds", func(f *store.Feed) {
			logged := now.Add(-time.Hour)
			f.LastStatus, f.LoggedAt = http.StatusNotModified, &logged
		}, func() Answer { return Answer{Resp: resp(http.StatusNotModified)} }, func(t *testing.T, c Classification) {
			want(t, c.Fold, true)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := feed()
			if tt.feed != nil {
				tt.feed(f)
			}
			a := tt.answer()
			if got := needsParse(f, a.Resp, a.Err); got != (a.Parsed != nil || a.ParseErr != nil) {
				t.Errorf("needsParse = %v", got)
			}
			c := Classify(f, 0, a, now, 0)
			want(t, *c.State.LastPolledAt, now)
			want(t, c.State.LastStatus, a.Resp.Status)
			want(t, c.State.NextPollAt, c.Decision.NextPoll)
			tt.check(t, c)
		})
	}
}

func want[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}
