package fetcher

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// The warm pass: every feed has been fetched before and answers 304 to the
// stored validators, which is what almost every poll of a healthy install
// looks like.
const (
	benchFeeds       = 2000
	benchConcurrency = 16
)

func warmFarm(b *testing.B) (*farm.Farm, []Request) {
	b.Helper()
	fm := farm.New(clock.Real{})
	b.Cleanup(fm.Close)
	reqs := make([]Request, benchFeeds)
	for i := range reqs {
		f := fm.AddFeed(farm.Spec{
			Format: farm.Format(i % 3), ItemCount: 10, ETag: farm.ETagStrong, LastModified: true,
			CacheControl: "max-age=300", Gzip: true,
		})
		reqs[i] = Request{URL: f.URL(), ETag: f.ETag(), LastModified: f.LastModified(), Subscribers: 1 + i%50}
	}
	return fm, reqs
}

// pass fetches every request once with conc workers; fetch returns the status.
func pass(b *testing.B, reqs []Request, conc int, fetch func(context.Context, Request) (int, error)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	ctx := b.Context()
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) {
					return
				}
				status, err := fetch(ctx, reqs[i])
				if err != nil || status != http.StatusNotModified {
					b.Errorf("%s: %d %v", reqs[i].URL, status, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func benchPasses(b *testing.B, fetch func(context.Context, Request) (int, error)) {
	fm, reqs := warmFarm(b)
	pass(b, reqs, benchConcurrency, fetch) // connections up, code paths warm
	fm.Reset()
	passes := 0
	for b.Loop() {
		pass(b, reqs, benchConcurrency, fetch)
		passes++
	}
	b.ReportMetric(float64(passes*len(reqs))/b.Elapsed().Seconds(), "feeds/s")
	b.ReportMetric(0, "ns/op") // one op is a whole pass; feeds/s is the number
	// What the publisher sees: how many TCP connections the passes used.
	conns := map[string]bool{}
	for _, r := range fm.Requests() {
		conns[r.RemoteAddr] = true
	}
	b.ReportMetric(float64(len(conns)), "conns")
}

// BenchmarkWarmPass fetches 2,000 farm feeds that all answer 304 with the
// Client (defaults: at most 2 connections to the one farm host), 16 at a time.
func BenchmarkWarmPass(b *testing.B) {
	c := New(Config{BaseURL: base, AllowPrivate: true})
	b.Cleanup(c.CloseIdleConnections)
	benchPasses(b, func(ctx context.Context, r Request) (int, error) {
		resp, err := c.Fetch(ctx, r)
		if err != nil {
			return 0, err
		}
		return resp.Status, nil
	})
}

// BenchmarkWarmPassConns16 is BenchmarkWarmPass with the per-host limit
// raised to the concurrency, to show the cost of the Client itself apart
// from the politeness limit.
func BenchmarkWarmPassConns16(b *testing.B) {
	c := New(Config{BaseURL: base, AllowPrivate: true, MaxConnsPerHost: benchConcurrency})
	b.Cleanup(c.CloseIdleConnections)
	benchPasses(b, func(ctx context.Context, r Request) (int, error) {
		resp, err := c.Fetch(ctx, r)
		if err != nil {
			return 0, err
		}
		return resp.Status, nil
	})
}

// BenchmarkBareLoop makes the same conditional requests at the same
// concurrency with a plain net/http client (a clone of the default
// Transport: no limit per host, 2 idle connections kept per host).
func BenchmarkBareLoop(b *testing.B) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	hc := &http.Client{Transport: tr}
	b.Cleanup(tr.CloseIdleConnections)
	ua := UserAgent(base, 1)
	benchPasses(b, func(ctx context.Context, r Request) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("User-Agent", ua)
		req.Header.Set("If-None-Match", r.ETag)
		req.Header.Set("If-Modified-Since", r.LastModified)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	})
}
