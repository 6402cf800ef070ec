package article

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/temoto/robotstxt"

	"github.com/feedmail/feedmail/internal/fetcher"
)

// RobotsAgent is the name feedmail answers to in robots.txt groups.
const RobotsAgent = "feedmail"

// How long a host's robots.txt is trusted, and how many hosts are kept.
const (
	robotsTTL      = time.Hour
	robotsErrorTTL = 10 * time.Minute // when it could not be fetched
	robotsMaxHosts = 4096
	robotsMaxBytes = 512 << 10
)

// robotsEntry is one host's rules, nil when robots.txt could not be
// fetched (then nothing is fetched from the host until it expires).
type robotsEntry struct {
	data    *robotstxt.RobotsData
	expires time.Time
}

// robotsSlot is one host's place in the cache: its lock makes workers
// asking for the same host at once fetch robots.txt only once.
type robotsSlot struct {
	mu    sync.Mutex
	entry robotsEntry
}

// robotsCache keeps each host's robots.txt for robotsTTL. Safe for
// concurrent use.
type robotsCache struct {
	mu    sync.Mutex
	slots map[string]*robotsSlot
}

// slot returns the cache's place for key, made when missing.
func (c *robotsCache) slot(key string) *robotsSlot {
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := c.slots[key]
	if sl == nil {
		if len(c.slots) >= robotsMaxHosts {
			clear(c.slots)
		}
		sl = &robotsSlot{}
		c.slots[key] = sl
	}
	return sl
}

// allowed reports whether page may be fetched by RobotsAgent, fetching the
// host's robots.txt through get when it is not cached. A robots.txt that
// answers 4xx allows everything, 5xx or no answer at all nothing (as the
// robots.txt standard, RFC 9309, asks).
func (c *robotsCache) allowed(ctx context.Context, get Getter, page *url.URL, now time.Time) bool {
	sl := c.slot(page.Scheme + "://" + page.Host)
	sl.mu.Lock()
	e := sl.entry
	if e.expires.IsZero() || now.After(e.expires) {
		e = fetchRobots(ctx, get, page.Scheme+"://"+page.Host, now)
		if ctx.Err() == nil {
			sl.entry = e // a fetch the caller stopped says nothing of the host
		}
	}
	sl.mu.Unlock()
	if e.data == nil {
		return false
	}
	path := page.EscapedPath()
	if page.RawQuery != "" {
		path += "?" + page.RawQuery
	}
	return e.data.TestAgent(path, RobotsAgent)
}

// fetchRobots reads origin's robots.txt.
func fetchRobots(ctx context.Context, get Getter, origin string, now time.Time) robotsEntry {
	resp, err := get.Fetch(ctx, fetcher.Request{URL: origin + "/robots.txt", Accept: "text/plain, */*;q=0.1"})
	if err != nil || resp == nil {
		return robotsEntry{expires: now.Add(robotsErrorTTL)}
	}
	body := resp.Body
	if len(body) > robotsMaxBytes {
		body = body[:robotsMaxBytes]
	}
	data, err := robotstxt.FromStatusAndBytes(resp.Status, body)
	if err != nil {
		// Unparsable rules are taken as none, as crawlers do.
		data, _ = robotstxt.FromStatusAndBytes(404, nil)
	}
	return robotsEntry{data: data, expires: now.Add(robotsTTL)}
}
