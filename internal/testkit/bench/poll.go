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
	"github.com/feedmail/feedmail/poller"
)

// benchBaseURL goes into the poller's User-Agent.
const benchBaseURL = "http://127.0.0.1:8080"

// pollStats are what the poller's AfterPoll hook counted.
type pollStats struct {
	polls, newItems, emails atomic.Int64
}

// poller returns the run's poller, made on first use: one per run, as one
// process has one, so kept-alive connections carry over between passes.
func (e *env) poller() (*poller.Poller, error) {
	if e.pl != nil {
		return e.pl, nil
	}
	p, err := poller.New(poller.Config{
		Store:       e.st,
		Fetch:       fetcher.Config{BaseURL: benchBaseURL, AllowPrivate: true},
		Clock:       e.clk,
		Log:         e.cfg.Log.With("role", "poller"),
		Owner:       fmt.Sprintf("bench-%d-poller", os.Getpid()),
		Concurrency: Concurrency,
		AfterPoll: func(_ context.Context, ev poller.PollEvent) {
			e.ps.polls.Add(1)
			e.ps.newItems.Add(int64(len(ev.Report.NewItems)))
			e.ps.emails.Add(ev.Report.Emails)
		},
	})
	if err != nil {
		return nil, err
	}
	e.pl = p
	e.cleanup = append(e.cleanup, p.Close)
	return p, nil
}

func (e *env) pollStatus() string {
	return fmt.Sprintf("%d/%d feeds polled", e.ps.polls.Load(), len(e.fleet))
}

// pass runs one timed PollDue over the whole fleet and checks that every
// feed was polled.
func (e *env) pass(ctx context.Context, label string, row *Row) error {
	p, err := e.poller()
	if err != nil {
		return err
	}
	for _, fm := range e.farms {
		fm.Reset()
	}
	e.ps.polls.Store(0)
	e.ps.newItems.Store(0)
	e.ps.emails.Store(0)
	stop := e.progress(label, e.pollStatus)
	var n int
	err = e.measure(ctx, row, func(ctx context.Context) error {
		var err error
		n, err = p.PollDue(ctx)
		return err
	})
	stop()
	if err != nil {
		return fmt.Errorf("poll pass: %w", err)
	}
	if n != len(e.fleet) {
		return checkf("the pass claimed %d feeds, want %d", n, len(e.fleet))
	}
	if got := e.ps.polls.Load(); got != int64(len(e.fleet)) {
		return checkf("%d polls recorded, want %d", got, len(e.fleet))
	}
	return nil
}

// statuses counts the farms' answers to the last pass, by status.
func (e *env) statuses() map[int]int {
	out := map[int]int{}
	for _, fm := range e.farms {
		for _, r := range fm.Requests() {
			out[r.Status]++
		}
	}
	return out
}

// cold: the first poll of every fleet feed.
func (e *env) cold(ctx context.Context) (Row, error) {
	row := Row{Unit: "feeds", Work: fmt.Sprintf("first poll: fetch, parse and store %d items per feed, write state", e.cfg.Items)}
	if e.primed {
		return row, checkf("the fleet was polled before the cold pass")
	}
	if err := e.ensureFleet(ctx); err != nil {
		return row, err
	}
	reqs := e.fleetRequests(nil)
	// An untimed pass first: connections up, and the farms' gzip bodies
	// made (the farm compresses a body on its first request: harness cost).
	if _, err := e.bare(ctx, "bare warm-up", reqs); err != nil {
		return row, err
	}
	base, err := e.bareTimed(ctx, reqs, "net/http GET, 16 workers, bodies read", map[int]int{200: len(reqs)})
	if err != nil {
		return row, err
	}
	row.Baseline = base
	e.clk.Advance(time.Second)
	if err := e.pass(ctx, "cold pass", &row); err != nil {
		return row, err
	}
	e.primed = true
	row.Count = len(e.fleet)
	var items int64
	lo, hi := e.fleet[0].id, e.fleet[len(e.fleet)-1].id
	if err := e.st.DB.WithContext(ctx).Raw("SELECT COUNT(*) FROM items WHERE feed_id BETWEEN ? AND ?", lo, hi).Scan(&items).Error; err != nil {
		return row, err
	}
	if want := int64(len(e.fleet) * e.cfg.Items); items != want {
		return row, checkf("%d items stored, want %d", items, want)
	}
	st := e.statuses()
	if st[200] != len(e.fleet) {
		return row, checkf("farm answered %v, want %d × 200", st, len(e.fleet))
	}
	row.Note = fmt.Sprintf("%d × 200, %d items stored", st[200], items)
	return row, nil
}

// warm: every fleet feed polled again, all unchanged (304).
func (e *env) warm(ctx context.Context) (Row, error) {
	row := Row{Unit: "feeds", Work: "conditional GET answered 304, state written"}
	if err := e.ensurePrimed(ctx); err != nil {
		return row, err
	}
	e.clk.Advance(time.Hour) // every feed is due again
	reqs := e.fleetRequests(nil)
	base, err := e.bareTimed(ctx, reqs, "net/http conditional GET, 16 workers", map[int]int{304: len(reqs)})
	if err != nil {
		return row, err
	}
	row.Baseline = base
	if err := e.pass(ctx, "warm pass", &row); err != nil {
		return row, err
	}
	row.Count = len(e.fleet)
	st := e.statuses()
	if st[304] != len(e.fleet) || len(st) != 1 {
		return row, checkf("farm answered %v, want %d × 304", st, len(e.fleet))
	}
	row.Note = fmt.Sprintf("%d × 304", st[304])
	return row, nil
}

// changed: every tenth feed published one new item since the last pass.
func (e *env) changed(ctx context.Context) (Row, error) {
	row := Row{Unit: "feeds", Work: "10 % of feeds with one new item: 304s, 200s parsed, new items stored, one instant email each queued"}
	if err := e.ensurePrimed(ctx); err != nil {
		return row, err
	}
	e.clk.Advance(time.Hour)
	// The validators feedmail holds are the ones from before the publish.
	reqs := e.fleetRequests(nil)
	nChanged := 0
	for i, f := range e.fleet {
		if i%10 == 0 {
			f.farm.Publish()
			nChanged++
		}
	}
	// The farm gzips a changed body on its first request (harness cost):
	// one untimed request per changed feed, so neither side pays it.
	var fresh []bareReq
	for i, f := range e.fleet {
		if i%10 == 0 {
			fresh = append(fresh, bareReq{url: f.farm.URL()})
		}
	}
	if _, err := e.bare(ctx, "bare warm-up", fresh); err != nil {
		return row, err
	}
	base, err := e.bareTimed(ctx, reqs, "net/http conditional GET, 16 workers, bodies read",
		map[int]int{200: nChanged, 304: len(reqs) - nChanged})
	if err != nil {
		return row, err
	}
	row.Baseline = base
	if err := e.pass(ctx, "10 % changed pass", &row); err != nil {
		return row, err
	}
	row.Count = len(e.fleet)
	st := e.statuses()
	if st[200] != nChanged || st[304] != len(e.fleet)-nChanged {
		return row, checkf("farm answered %v, want %d × 200 and %d × 304", st, nChanged, len(e.fleet)-nChanged)
	}
	if got := e.ps.newItems.Load(); got != int64(nChanged) {
		return row, checkf("%d new items, want %d", got, nChanged)
	}
	if got := e.ps.emails.Load(); got != int64(nChanged) {
		return row, checkf("%d emails queued, want %d", got, nChanged)
	}
	row.Note = fmt.Sprintf("%d × 200, %d × 304, %d new items, %d emails queued", st[200], st[304], nChanged, nChanged)
	return row, nil
}

// fanout: one new item of a feed with cfg.Subscribers instant subscribers.
func (e *env) fanout(ctx context.Context) (Row, error) {
	row := Row{Unit: "emails", TripUnit: "poll", tripCount: 1,
		Work: fmt.Sprintf("one poll of one feed with 1 new item and %d instant subscribers: item + %d outbox rows in one transaction (fetch included)",
			e.cfg.Subscribers, e.cfg.Subscribers)}
	if err := e.ensureFan(ctx); err != nil {
		return row, err
	}
	p, err := e.poller()
	if err != nil {
		return row, err
	}
	e.clk.Advance(time.Minute)
	e.fan.farm.Publish()
	var emails int64
	err = e.measure(ctx, &row, func(ctx context.Context) error {
		rep, err := p.PollFeed(ctx, e.fan.id, "bench")
		if err != nil {
			return err
		}
		emails = rep.Emails
		return nil
	})
	if err != nil {
		return row, fmt.Errorf("fan-out poll: %w", err)
	}
	if emails != int64(e.cfg.Subscribers) {
		return row, checkf("%d emails queued, want %d", emails, e.cfg.Subscribers)
	}
	row.Count = int(emails)
	row.Note = fmt.Sprintf("%d emails queued in one commit", emails)
	return row, nil
}

// bareReq is one request of a bare loop.
type bareReq struct{ url, etag, lastModified string }

// fleetRequests lists the fleet's requests with the validators the farm
// serves now (what feedmail stored at its last poll) — or none for a cold
// pass, when e.primed is false. keep, if set, filters.
func (e *env) fleetRequests(keep func(i int) bool) []bareReq {
	out := make([]bareReq, 0, len(e.fleet))
	for i, f := range e.fleet {
		if keep != nil && !keep(i) {
			continue
		}
		r := bareReq{url: f.farm.URL()}
		if e.primed {
			r.etag, r.lastModified = f.farm.ETag(), f.farm.LastModified()
		}
		out = append(out, r)
	}
	return out
}

// bareTimed times one bare pass over reqs and checks the statuses.
func (e *env) bareTimed(ctx context.Context, reqs []bareReq, name string, want map[int]int) (*Baseline, error) {
	start := time.Now()
	got, err := e.bare(ctx, "bare loop", reqs)
	if err != nil {
		return nil, err
	}
	el := time.Since(start)
	for code, n := range want {
		if got[code] != n {
			return nil, checkf("bare loop got %v, want %v", got, want)
		}
	}
	return &Baseline{Name: name, Elapsed: el}, nil
}

// bare makes reqs with a plain net/http client (the default transport's
// settings, keep-alive, no proxy, up to Concurrency idle connections per
// host) from Concurrency workers, reads every body and counts statuses.
// The client lives for the whole run, like the poller's.
func (e *env) bare(ctx context.Context, label string, reqs []bareReq) (map[int]int, error) {
	if e.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		tr.MaxIdleConnsPerHost = Concurrency
		e.hc = &http.Client{Transport: tr}
		e.cleanup = append(e.cleanup, tr.CloseIdleConnections)
	}
	ua := fetcher.UserAgent(benchBaseURL, 1)
	var next, done atomic.Int64
	stop := e.progress(label, func() string { return fmt.Sprintf("%d/%d requests", done.Load(), len(reqs)) })
	defer stop()
	var mu sync.Mutex
	counts := map[int]int{}
	var firstErr error
	var wg sync.WaitGroup
	for range Concurrency {
		wg.Go(func() {
			local := map[int]int{}
			defer func() {
				mu.Lock()
				for k, v := range local {
					counts[k] += v
				}
				mu.Unlock()
			}()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) {
					return
				}
				r, err := http.NewRequestWithContext(ctx, http.MethodGet, reqs[i].url, nil)
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				// The poller's request headers, but Accept-Encoding: net/http
				// asks for gzip itself and decompresses, as the poller does.
				r.Header.Set("User-Agent", ua)
				r.Header.Set("Accept", fetcher.Accept)
				if reqs[i].etag != "" {
					r.Header.Set("If-None-Match", reqs[i].etag)
				}
				if reqs[i].lastModified != "" {
					r.Header.Set("If-Modified-Since", reqs[i].lastModified)
				}
				resp, err := e.hc.Do(r)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				local[resp.StatusCode]++
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return nil, fmt.Errorf("bare loop: %w", firstErr)
	}
	return counts, nil
}
