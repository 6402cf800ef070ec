package web

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
)

// The load benchmarks run the real handler stack behind a loopback HTTP
// server on Postgres (FEEDMAIL_TEST_POSTGRES_URL) and report requests per
// second and the 99th percentile latency seen by the clients:
//
//	go test -run '^$' -bench 'Load' -benchtime 4000x ./web
//
// The goal is p99 under 50 ms for 200 concurrent status-page clients.

// benchServer starts the web server on Postgres with nFeeds feeds, each with
// a full status page (20 polls), and returns its URL and the feed URLs.
func benchServer(b *testing.B, nFeeds int) (*Server, string, []string) {
	b.Helper()
	st := storetest.OpenPostgres(b, storetest.Options{MaxOpenConns: 20})
	sign, err := token.NewSigner([]byte("bench-secret-bench-secret"))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	var urls []string
	var polls []store.PollLog
	for i := range nFeeds {
		u := fmt.Sprintf("https://publisher%d.example/feed.xml", i)
		f, _, err := st.EnsureFeed(b.Context(), u)
		if err != nil {
			b.Fatal(err)
		}
		if err := st.DB.Model(&store.Feed{}).Where("id = ?", f.ID).Updates(map[string]any{
			"title": fmt.Sprintf("Publisher %d", i), "subscriber_count": 3, "poll_reason": "Cache-Control max-age=900",
			"etag": `"x"`, "last_polled_at": now, "last_status": 200, "last_elapsed_ms": 80,
			"next_poll_at": now.Add(15 * time.Minute)}).Error; err != nil {
			b.Fatal(err)
		}
		for k := range 20 {
			polls = append(polls, store.PollLog{FeedID: f.ID, PolledAt: now.Add(-time.Duration(k) * 15 * time.Minute),
				Status: 304, Outcome: "not-modified", Conditional: true, ElapsedMS: 80, Reason: "Cache-Control max-age=900"})
		}
		urls = append(urls, u)
	}
	if err := st.DB.CreateInBatches(polls, 1000).Error; err != nil {
		b.Fatal(err)
	}
	lim := NoLimits()
	srv := New(Deps{Store: st, Clock: clock.Real{}, Tokens: sign, Limits: &lim,
		Config:  config.Config{BaseURL: "http://feedmail.test", From: "feedmail@feedmail.test", TrialCredits: 500, AllowPrivateNetworks: true},
		Fetcher: fetcher.New(fetcher.Config{AllowPrivate: true, MaxConnsPerHost: 64})})
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(ts.Close)
	return srv, ts.URL, urls
}

// load runs b.N requests from conc concurrent clients and reports req/s and
// latency percentiles. next builds request i; ok checks the status.
func load(b *testing.B, conc int, next func(i int) *http.Request, wantStatus int) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	lat := make([]time.Duration, b.N)
	var idx atomic.Int64
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(idx.Add(1)) - 1
				if i >= b.N {
					return
				}
				t0 := time.Now()
				resp, err := client.Do(next(i))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != wantStatus {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				lat[i] = time.Since(t0)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests failed, first: %v", n, b.N, firstErr.Load())
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))]) / float64(time.Millisecond)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op") // the per-op time of a concurrent run means nothing
}

// BenchmarkLoadStatusPage asks for the status pages of 500 feeds in turn,
// with the page cache off (every request reads the database and renders)
// and on (starting empty, so the first request of each page is a miss).
func BenchmarkLoadStatusPage(b *testing.B) {
	srv, base, urls := benchServer(b, 500)
	for _, c := range []struct {
		cache string // off, cold (empty at the start) or warm (every page cached)
		conc  int
	}{{"off", 50}, {"off", 200}, {"cold", 200}, {"warm", 200}} {
		b.Run(fmt.Sprintf("cache=%s/clients=%d", c.cache, c.conc), func(b *testing.B) {
			if c.cache == "off" {
				srv.status = newPageCache(0, 0)
			} else {
				srv.status = newPageCache(statusCacheTTL, statusCacheMax)
			}
			if c.cache == "warm" {
				for _, u := range urls {
					resp, err := http.Get(base + "/feeds/status?url=" + url.QueryEscape(u))
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			conc := c.conc
			load(b, conc, func(i int) *http.Request {
				r, _ := http.NewRequest("GET", base+"/feeds/status?url="+url.QueryEscape(urls[i%len(urls)]), nil)
				return r
			}, http.StatusOK)
		})
	}
}

func BenchmarkLoadSignup(b *testing.B) {
	fm := farm.New(clock.Real{})
	b.Cleanup(fm.Close)
	var feeds []string
	for i := range 50 {
		feeds = append(feeds, fm.AddFeed(farm.Spec{Title: fmt.Sprintf("Farm %d", i), ItemCount: 10, ETag: farm.ETagStrong}).URL())
	}
	_, base, _ := benchServer(b, 1)
	var run atomic.Int64
	for _, conc := range []int{20, 50} {
		b.Run(fmt.Sprintf("clients=%d", conc), func(b *testing.B) {
			r := run.Add(1)
			load(b, conc, func(i int) *http.Request {
				form := url.Values{"email": {fmt.Sprintf("reader%d-%d@example.com", r, i)}, "url": {feeds[i%len(feeds)]},
					"delivery": {"instant"}, "zone": {"UTC"}}
				req, _ := http.NewRequest("POST", base+"/subscriptions", strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				return req
			}, http.StatusOK)
		})
	}
}
