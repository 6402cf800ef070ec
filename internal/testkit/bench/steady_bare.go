package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
)

// bareLoop makes, with serve stopped, the requests serve would make next —
// each feed's URL with the validators serve stored, in next_poll_at order —
// at the rate serve needed (Feeds / Cadence) for cfg.Bare, from Concurrency
// workers of a plain net/http client in this process, and reports the CPU
// this process spent per request. The farms keep publishing meanwhile, so
// about as many answers are 200 as in the window.
func (s *steady) bareLoop(ctx context.Context, rep *SteadyReport) error {
	reqs, err := s.bareRequests(ctx)
	if err != nil {
		return err
	}
	rate := float64(s.cfg.Feeds) / s.cfg.Cadence.Seconds()
	total := max(1, int(rate*s.cfg.Bare.Seconds()))
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxIdleConnsPerHost = Concurrency
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	ua := fetcher.UserAgent(s.base, 1)

	jobs := make(chan bareReq, Concurrency)
	var mu sync.Mutex
	statuses := map[int]int{}
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range Concurrency {
		wg.Go(func() {
			for r := range jobs {
				code, err := bareGet(ctx, hc, ua, r)
				if err != nil {
					failed.Add(1)
					continue
				}
				mu.Lock()
				statuses[code]++
				mu.Unlock()
			}
		})
	}
	self := os.Getpid()
	cpu0, _ := procCPU(self)
	start := time.Now()
	err = pace(ctx, rate, total, func(k int) {
		jobs <- reqs[k%len(reqs)]
		if k%100 == 0 {
			s.cfg.Progress(fmt.Sprintf("bare loop: %d/%d requests", k, total))
		}
	})
	close(jobs)
	wg.Wait()
	el := time.Since(start)
	cpu1, _ := procCPU(self)
	if err != nil {
		return err
	}
	if n := failed.Load(); n > 0 && (!s.bareFaults || float64(n) > 0.1*float64(total)) {
		return checkf("%d of %d bare requests failed", n, total)
	}
	rep.Bare = &Bare{Requests: total, Rate: float64(total) / el.Seconds(), Statuses: statuses,
		CPU: float64(cpu1-cpu0) / float64(time.Millisecond) / float64(total)}
	return nil
}

// bareRequests lists every feed's URL and stored validators in the order
// the feeds come due.
func (s *steady) bareRequests(ctx context.Context) ([]bareReq, error) {
	var rows []store.Feed
	err := s.st.DB.WithContext(ctx).Select("url", "etag", "last_modified").Order("next_poll_at, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read the feeds' validators: %w", err)
	}
	if len(rows) == 0 {
		return nil, checkf("no feeds to request")
	}
	out := make([]bareReq, len(rows))
	for i, r := range rows {
		out[i] = bareReq{url: r.URL, etag: r.ETag, lastModified: r.LastModified}
	}
	return out, nil
}

// pace calls fn(k) for k = 0 … total-1, the k-th at start + k/rate (or as
// soon as fn returns when it falls behind), until ctx ends.
func pace(ctx context.Context, rate float64, total int, fn func(k int)) error {
	start := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for k := range total {
		if d := time.Until(start.Add(time.Duration(float64(k) / rate * float64(time.Second)))); d > 0 {
			t.Reset(d)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
		fn(k)
	}
	return nil
}

// bareGet makes one conditional GET with the poller's headers (but
// Accept-Encoding, which net/http adds and undoes itself) and reads the
// body; it returns the status.
func bareGet(ctx context.Context, hc *http.Client, ua string, r bareReq) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", ua)
	req.Header.Set("Accept", fetcher.Accept)
	if r.etag != "" {
		req.Header.Set("If-None-Match", r.etag)
	}
	if r.lastModified != "" {
		req.Header.Set("If-Modified-Since", r.lastModified)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
