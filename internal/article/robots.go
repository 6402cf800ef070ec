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

// robotsCache keeps each host's robots.txt for robotsTTL. Safe for
// concurrent use; two workers asking at once may both fetch it.
type robotsCache struct {
	mu      sync.Mutex
	entries map[string]robotsEntry
}

// allowed reports whether page may be fetched by RobotsAgent, fetching the
// host's robots.txt through get when it is not cached. A robots.txt that
// answers 4xx allows everything, 5xx or no answer at all nothing (as the
// robots.txt standard, RFC 9309, asks).
func (c *robotsCache) allowed(ctx context.Context, get Getter, page *url.URL, now time.Time) bool {
	key := page.Scheme + "://" + page.Host
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if !ok || now.After(e.expires) {
		e = fetchRobots(ctx, get, key, now)
		c.mu.Lock()
		if len(c.entries) >= robotsMaxHosts {
			clear(c.entries)
		}
		c.entries[key] = e
		c.mu.Unlock()
	}
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
