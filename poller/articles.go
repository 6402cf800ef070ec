package poller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/store"
)

// Article fetches (format "article", see package article) run beside the
// polls, in their own goroutines, so a slow page never delays a feed. They
// obey the same host politeness: this process's per-host limit (a page
// takes a slot only when one is free, never waiting for it), the host
// back-offs every process shares (hosts table), and a 429 or 503 with
// Retry-After backs the host off for its feeds too.
const (
	// ArticleConcurrency is how many pages are fetched at once.
	ArticleConcurrency = 2
	// articleIdle is how long RunArticles sleeps when nothing is due.
	articleIdle = 2 * time.Second
	// articleBusyWait is how long an article waits for a busy host.
	articleBusyWait = 5 * time.Second
	// articleBatch is how many articles a pass claims.
	articleBatch = 8
)

// articleLease is how long a claimed article is this worker's: a fetch and
// the robots.txt before it, with room to record.
const articleLease = 3*article.PageTimeout + 10*time.Second

// RunArticles fetches the articles emails wait for, through r, until ctx
// ends.
func (p *Poller) RunArticles(ctx context.Context, r *article.Reader) error {
	for {
		n, err := p.FetchArticles(ctx, r)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			p.log.Warn("article pass failed", "err", err)
		}
		if n > 0 && err == nil {
			continue
		}
		t := time.NewTimer(articleIdle)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// FetchArticles runs one pass: it claims the articles due and settles
// each (fetched, failed, or given back to wait for its host). It returns
// how many it claimed.
func (p *Poller) FetchArticles(ctx context.Context, r *article.Reader) (int, error) {
	jobs, err := p.st.ClaimArticles(ctx, p.cfg.Owner, articleLease, p.clk.Now(), articleBatch)
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	sem := make(chan struct{}, ArticleConcurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := p.fetchArticle(ctx, r, j); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return len(jobs), errors.Join(errs...)
}

// fetchArticle settles one claimed article.
func (p *Poller) fetchArticle(ctx context.Context, r *article.Reader, j store.ArticleJob) error {
	now := p.clk.Now()
	deadline := j.CreatedAt.Add(article.Wait)
	if !now.Before(deadline) {
		return p.saveArticle(ctx, store.ItemArticle{ItemID: j.ItemID, Reason: "the page was not fetched in time"})
	}
	link := PageURL(j.FeedURL, j.Link)
	host := store.HostOf(link)
	if until, ok, err := p.hostBackedOff(ctx, host); err != nil {
		return p.deferArticle(ctx, j.ItemID, now.Add(articleBusyWait), err)
	} else if ok {
		if !until.Before(deadline) {
			return p.saveArticle(ctx, store.ItemArticle{ItemID: j.ItemID, Reason: "the site asked feedmail to wait"})
		}
		return p.deferArticle(ctx, j.ItemID, until, nil)
	}
	release, ok := p.limiter.TryAcquire(host)
	if !ok {
		return p.deferArticle(ctx, j.ItemID, now.Add(articleBusyWait), nil)
	}
	a, final, err := r.Read(ctx, link)
	release()
	var f *article.Failure
	if errors.As(err, &f) {
		if f.Canceled {
			return p.deferArticle(context.WithoutCancel(ctx), j.ItemID, now, nil)
		}
		p.backOffArticleHost(ctx, host, f, now)
		p.log.Info("article not fetched", "item", j.ItemID, "url", link, "reason", f.Reason)
		return p.saveArticle(ctx, store.ItemArticle{ItemID: j.ItemID, Reason: f.Reason})
	}
	if err != nil {
		return p.saveArticle(ctx, store.ItemArticle{ItemID: j.ItemID, Reason: err.Error()})
	}
	return p.saveArticle(ctx, store.ItemArticle{ItemID: j.ItemID, URL: final, HTML: a.HTML, TextChars: a.TextChars})
}

// PageURL is an item's link resolved against its feed's address (feeds
// may give relative links), "" when there is none.
func PageURL(feedURL, link string) string {
	link = strings.TrimSpace(link)
	l, err := url.Parse(link)
	if link == "" || err != nil {
		return ""
	}
	f, err := url.Parse(strings.TrimSpace(feedURL))
	if err != nil || l.IsAbs() {
		return l.String()
	}
	return f.ResolveReference(l).String()
}

// hostBackedOff reports whether host must not be asked now (this process's
// limiter or the back-off every process shares), and until when.
func (p *Poller) hostBackedOff(ctx context.Context, host string) (time.Time, bool, error) {
	if until, _, ok := p.limiter.BackedOff(host); ok {
		return until, true, nil
	}
	hs, err := p.st.Hosts(ctx, []string{host})
	if err != nil {
		return time.Time{}, false, err
	}
	if h, ok := hs[host]; ok && h.BackoffUntil != nil && h.BackoffUntil.After(p.clk.Now()) {
		return *h.BackoffUntil, true, nil
	}
	return time.Time{}, false, nil
}

// backOffArticleHost backs host off, for its feeds too, when the page
// answered 429, or 503 with a Retry-After: the same rule as a feed's
// answer (statusPlan), so a site that asks for quiet gets it from all of
// feedmail.
func (p *Poller) backOffArticleHost(ctx context.Context, host string, f *article.Failure, now time.Time) {
	if f.Status != http.StatusTooManyRequests && f.Status != http.StatusServiceUnavailable {
		return
	}
	ra, ok, words := retryAfter(f.Header, now)
	if !ok {
		if f.Status == http.StatusServiceUnavailable {
			return
		}
		ra, words = growingPenalty(1), "no Retry-After"
	}
	until := now.Add(ra)
	reason := fmt.Sprintf("%d on an article page: %s", f.Status, words)
	p.limiter.BackOff(host, until, reason)
	if err := p.st.BackOffHost(ctx, host, until, reason); err != nil {
		p.log.Warn("recording host back-off", "host", host, "err", err)
	}
}

// saveArticle records a settled article.
func (p *Poller) saveArticle(ctx context.Context, a store.ItemArticle) error {
	if _, err := p.st.SaveArticle(ctx, p.cfg.Owner, a); err != nil {
		return err
	}
	return nil
}

// deferArticle gives an article back unfetched, due at next; cause, when
// not nil, is returned after.
func (p *Poller) deferArticle(ctx context.Context, itemID int64, next time.Time, cause error) error {
	if _, err := p.st.DeferArticle(ctx, p.cfg.Owner, itemID, next); err != nil {
		return err
	}
	return cause
}
