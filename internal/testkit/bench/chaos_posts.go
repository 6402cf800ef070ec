package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// farmFaults are the feed hosts' faults: each request's share reset,
// hung until the client gives up, or answered 500.
type farmFaults struct {
	seed                int64
	reset, timeout, err float64
}

func defaultFarmFaults(seed int64) farmFaults {
	return farmFaults{seed: seed, reset: 0.01, timeout: 0.01, err: 0.01}
}

// farmArgs are farm i's flags besides steady's: its faults and its
// publication log (farmFeatures says which this feedfarm has).
func (c *chaos) farmArgs(i int) []string {
	if !farmFeatures {
		return nil
	}
	f := c.farmOpts
	log := c.keepDir(fmt.Sprintf("published-%d.jsonl", i+1))
	c.pubLogs = append(c.pubLogs, log)
	return append([]string{"-fault-reset", fmt.Sprint(f.reset), "-fault-timeout", fmt.Sprint(f.timeout),
		"-fault-500", fmt.Sprint(f.err), "-fault-seed", fmt.Sprint(f.seed + int64(i)), "-publish-log", log, "-publish-paused"}, c.hubFarmArgs()...)
}

// published is one line of a farm's publication log.
type published struct {
	Feed      string    `json:"feed"`
	GUID      string    `json:"guid"`
	Link      string    `json:"link"`
	Published time.Time `json:"published"`
}

// posts returns the posts the farms published: every line of their
// publication logs (they publish only during the window), or, with a
// feedfarm that keeps none, the items of every feed's document as it
// stands now dated in the window [w0, w1).
func (c *chaos) posts(ctx context.Context) ([]post, error) {
	var all []post
	for _, name := range c.pubLogs {
		ps, err := readPubLog(name)
		if err != nil {
			return nil, err
		}
		all = append(all, ps...)
	}
	if len(c.pubLogs) > 0 {
		for i := range all {
			all[i].Pushed = c.pushed[all[i].Feed]
		}
		return all, nil
	}
	all, err := c.fetchPosts(ctx)
	if err != nil {
		return nil, err
	}
	var in []post
	for _, p := range all {
		if !p.Published.Before(c.w0) && p.Published.Before(c.w1) {
			in = append(in, p)
		}
	}
	return in, nil
}

// publishing turns every farm's publishing on or off.
func (c *chaos) publishing(ctx context.Context, on bool) error {
	if len(c.pubLogs) == 0 {
		return nil
	}
	for _, base := range c.s.farmURLs {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/_farm/publish?on="+map[bool]string{true: "1", false: "0"}[on], nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("farm publishing on=%v: %w", on, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("farm publishing on=%v: %s", on, resp.Status)
		}
	}
	return nil
}

// farmFaultCounts sums the farms' fault counts (GET /_farm/faults).
func (c *chaos) farmFaultCounts(ctx context.Context) (farm.FaultCounts, error) {
	var sum farm.FaultCounts
	for _, base := range c.s.farmURLs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+farm.FaultsPath, nil)
		if err != nil {
			return sum, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return sum, fmt.Errorf("farm fault counts: %w", err)
		}
		var fc farm.FaultCounts
		err = json.NewDecoder(resp.Body).Decode(&fc)
		_ = resp.Body.Close()
		if err != nil {
			return sum, fmt.Errorf("farm fault counts: %w", err)
		}
		sum.Requests += fc.Requests
		sum.Reset += fc.Reset
		sum.Timeout += fc.Timeout
		sum.Status500 += fc.Status500
	}
	return sum, nil
}

// readPubLog reads one publication log.
func readPubLog(name string) ([]post, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("publication log: %w", err)
	}
	defer f.Close()
	var out []post
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var p published
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("publication log %s: %w", name, err)
		}
		out = append(out, post{Feed: p.Feed, Link: p.Link, Published: p.Published})
	}
	return out, sc.Err()
}

// fetchPosts reads every feed's document and returns its dated items.
func (c *chaos) fetchPosts(ctx context.Context) ([]post, error) {
	urls := c.s.urls
	jobs := make(chan string)
	var mu sync.Mutex
	var out []post
	var firstErr error
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: time.Minute}
	for range 16 {
		wg.Go(func() {
			p := gofeed.NewParser()
			p.Client = hc
			for u := range jobs {
				ps, err := fetchFeedPosts(ctx, p, u)
				mu.Lock()
				out = append(out, ps...)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	for _, u := range urls {
		jobs <- u
	}
	close(jobs)
	wg.Wait()
	return out, firstErr
}

// fetchFeedPosts reads one feed, trying again past the farm's faults.
func fetchFeedPosts(ctx context.Context, p *gofeed.Parser, u string) ([]post, error) {
	var err error
	for range 10 {
		var f *gofeed.Feed
		if f, err = p.ParseURLWithContext(u, ctx); err == nil {
			var out []post
			for _, it := range f.Items {
				if it.PublishedParsed != nil {
					out = append(out, post{Feed: u, Link: it.Link, Published: *it.PublishedParsed})
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("read feed %s: %w", u, err)
}

// farmFeatures: this tree's feedfarm has the fault and publication-log
// flags.
const farmFeatures = true
