package preview

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/poller"
)

// source is a feed's posts as a preview composes them: the feed and its
// items as stored (ID set: a feed feedmail polls, its stored items) or as
// one fetch found them (ID zero: nothing stored).
type source struct {
	feed  store.Feed
	items []store.Item
}

// source returns the posts of the feed at typed (addr normalized): a
// recent preview's, else what signup finds (subscribe.FindTyped: a feed
// polled lately is read from the store, any other fetched once through
// the fetcher and its guard; a site's first advertised feed is taken).
// Nothing is stored.
func (s *Service) source(ctx context.Context, typed, addr string) (*source, error) {
	if src, ok := s.feeds.get(addr, s.cfg.Subs.Clock.Now()); ok {
		return src, nil
	}
	// Previews of one address asked at once share one fetch; it outlives
	// a caller that goes away (the fetcher's timeout bounds it).
	v, err, _ := s.flight.Do(addr, func() (any, error) { return s.find(context.WithoutCancel(ctx), typed, addr) })
	if err != nil {
		return nil, err
	}
	return v.(*source), nil
}

// find is source without the reuse of a recent preview's posts.
func (s *Service) find(ctx context.Context, typed, addr string) (*source, error) {
	now := s.cfg.Subs.Clock.Now()
	if src, ok := s.feeds.get(addr, now); ok {
		return src, nil
	}
	// Previews have their own limits per client and per feed (Limits),
	// so they spend nothing of the new-feed budget.
	found, err := s.cfg.Subs.FindTyped(ctx, typed, nil)
	if err == nil && len(found.Candidates) > 0 {
		if src, ok := s.feeds.get(found.Candidates[0].URL, now); ok {
			s.feeds.put(addr, src, now)
			return src, nil
		}
		found, err = s.cfg.Subs.FindFeed(ctx, found.Candidates[0].URL, nil)
	}
	var fe subscribe.FieldError
	if errors.As(err, &fe) {
		return nil, &Problem{Field: "feed", Msg: fe.Msg, Detail: fe.Why()}
	}
	if err != nil {
		return nil, err
	}
	src, err := s.load(ctx, found)
	if err != nil {
		return nil, err
	}
	s.feeds.put(addr, src, now)
	s.feeds.put(found.URL, src, now)
	return src, nil
}

// load returns found's posts: the fetched document's items in the form a
// poll stores them, or, for a feed not fetched, its stored items.
func (s *Service) load(ctx context.Context, found subscribe.Found) (*source, error) {
	src := &source{feed: store.Feed{URL: found.URL, Title: found.Title, SiteURL: found.SiteURL}}
	if doc := found.Document(); doc != nil {
		seen := s.cfg.Subs.Clock.Now()
		for _, it := range doc.Feed.Items {
			n := poller.StoredForm(it)
			src.items = append(src.items, store.Item{Identity: n.Identity, GUID: n.GUID, Link: n.Link, Title: n.Title,
				Content: n.Content, Author: n.Author, PublishedAt: n.PublishedAt, SeenAt: seen, Media: n.Media})
		}
		return src, nil
	}
	f, err := s.cfg.Subs.Store.FeedByURL(ctx, found.URL)
	if err != nil {
		return nil, err
	}
	src.feed = *f
	if src.items, err = s.cfg.Subs.Store.ItemsOfFeed(ctx, f.ID, newitems.MaxItems); err != nil {
		return nil, err
	}
	return src, nil
}

// article returns the article of it for the "article" format: the one
// the poller read for a stored post, else its page read now as the
// article fetcher reads it (robots.txt, limits, guard), kept for reuse;
// nil when there is none (the email then says so, as the outbox's does
// after its wait).
func (s *Service) article(ctx context.Context, src *source, it *store.Item) (*store.ItemArticle, error) {
	if it.ID != 0 {
		arts, err := s.cfg.Subs.Store.ItemArticles(ctx, []int64{it.ID})
		if err != nil {
			return nil, err
		}
		if a, ok := arts[it.ID]; ok && a.State == store.ArticleReady {
			return &a, nil
		}
	}
	link := poller.PageURL(src.feed.URL, it.Link)
	if s.cfg.Articles == nil || link == "" {
		return nil, nil
	}
	now := s.cfg.Subs.Clock.Now()
	if a, ok := s.articles.get(link, now); ok {
		return a, nil
	}
	var out *store.ItemArticle
	if a, final, err := s.cfg.Articles.Read(ctx, link); err == nil {
		out = &store.ItemArticle{State: store.ArticleReady, URL: final, HTML: a.HTML, TextChars: a.TextChars}
	} else if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	s.articles.put(link, out, now)
	return out, nil
}

// maxCached bounds each cache; past it the oldest entry goes.
const maxCached = 1000

// cache keeps values for ttl, by key.
type cache[V any] struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]cached[V]
}

type cached[V any] struct {
	v  V
	at time.Time
}

func newCache[V any](ttl time.Duration) *cache[V] {
	return &cache[V]{ttl: ttl, m: map[string]cached[V]{}}
}

// get returns key's value when it was put less than ttl before now.
func (c *cache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || now.Sub(e.at) >= c.ttl || now.Before(e.at) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put keeps v under key from now.
func (c *cache[V]) put(key string, v V, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= maxCached {
		oldest := ""
		for k, e := range c.m {
			if oldest == "" || e.at.Before(c.m[oldest].at) {
				oldest = k
			}
		}
		delete(c.m, oldest)
	}
	c.m[key] = cached[V]{v: v, at: now}
}
