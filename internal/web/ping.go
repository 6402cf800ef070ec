package web

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// Limits of the ping endpoints.
const (
	// PingMinGap: at most one ping-triggered poll per feed per minute; a
	// second ping within the minute is accepted and changes nothing.
	PingMinGap = time.Minute
	// maxPingBody caps a ping's body (a form or an XML-RPC methodCall):
	// real pings are a few hundred bytes.
	maxPingBody = 64 << 10
	// maxPingFeeds caps how many feeds one ping may touch (a site URL can
	// name several feeds).
	maxPingFeeds = 10
	// pingRevivePollTimeout bounds the poll of a blacklisted feed that a
	// ping asks for (the fetch itself stops at 30 s).
	pingRevivePollTimeout = 45 * time.Second
)

// PollFunc polls one feed now, whatever its schedule or state
// (poller.Poller.PollFeed), and writes the result as any poll does.
type PollFunc func(ctx context.Context, feedID int64, reason string) error

// PingOptions configure the ping routes.
type PingOptions struct {
	// PollNow polls a blacklisted feed that a publisher pinged. Nil answers
	// such pings "cannot check now".
	PollNow PollFunc
	// PerIP is the per-client-IP token bucket over both ping endpoints;
	// zero means DefaultPingLimit.
	PerIP Limit
}

// DefaultPingLimit is light: 30 pings at once from one address, then one
// every 2 s. Publishers ping once per post.
var DefaultPingLimit = Limit{Every: 2 * time.Second, Burst: 30}

// MountPings adds the publishers' ping endpoints: GET or POST /ping?url=URL
// (plain text, one line per feed the URL names) and POST /RPC2 (XML-RPC
// weblogUpdates.ping and extendedPing). A ping makes a followed feed due
// now, at most once per feed per minute (while a poll of the feed is in
// progress it is queued, and one more poll follows that one: /ping answers
// 202), and polls a blacklisted one at once. The status codes and faults
// are in docs/design.md.
func (s *Server) MountPings(o PingOptions) {
	if o.PerIP.Every <= 0 {
		o.PerIP = DefaultPingLimit
	}
	p := &pinger{s: s, o: o, perIP: newBuckets(o.PerIP)}
	s.register(links.GroupPings, map[string]http.HandlerFunc{"ping": p.httpPing, "xmlrpcPing": p.xmlrpc})
}

type pinger struct {
	s     *Server
	o     PingOptions
	perIP *buckets
}

// pingOutcome is what one ping did, over the feeds its URL names.
type pingOutcome struct {
	status  int      // HTTP status of /ping
	ok      bool     // XML-RPC flerror = !ok
	lines   []string // one per feed, or one overall
	message string   // one sentence for XML-RPC
}

// limited applies the per-IP bucket; it returns the wait when over.
func (p *pinger) limited(r *http.Request) (bool, time.Duration) {
	ok, wait := p.perIP.allow(clientIP(r), p.s.Clock.Now())
	return !ok, wait
}

func (p *pinger) httpPing(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if over, wait := p.limited(r); over {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
		textAnswer(w, http.StatusTooManyRequests, "too many pings from your address; try again later\n")
		return
	}
	raw := r.URL.Query().Get("url")
	if raw == "" && r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxPingBody)
		if err := r.ParseForm(); err != nil {
			textAnswer(w, http.StatusBadRequest, "could not read the form\n")
			return
		}
		raw = r.PostForm.Get("url")
	}
	out := p.ping(r.Context(), []string{raw})
	textAnswer(w, out.status, strings.Join(out.lines, "\n")+"\n")
}

// ping does the work for the first of urls that names a feed (later ones
// are fallbacks, for extendedPing).
func (p *pinger) ping(ctx context.Context, urls []string) pingOutcome {
	var feeds []store.Feed
	valid := false
	for _, raw := range urls {
		cands, ok := pingCandidates(raw)
		if !ok {
			continue
		}
		valid = true
		fs, err := p.s.Store.FeedsForPing(ctx, cands, maxPingFeeds)
		if err != nil {
			p.s.Log.Error("ping: look up feeds", "url", raw, "err", err)
			return pingOutcome{status: http.StatusInternalServerError, lines: []string{"try again later"}, message: "Internal error; try again later."}
		}
		if len(fs) > 0 {
			feeds = fs
			break
		}
	}
	if !valid {
		return pingOutcome{status: http.StatusBadRequest, lines: []string{"give the URL of your feed or site as url=http(s)://…"},
			message: "No usable URL: give the http(s) URL of your feed or site."}
	}
	if len(feeds) == 0 {
		return pingOutcome{status: http.StatusNotFound, lines: []string{"feedmail does not poll this URL"},
			message: "feedmail does not poll this URL."}
	}
	now := p.s.Clock.Now()
	out := pingOutcome{status: http.StatusNotFound}
	gone := 0
	queued := false
	var msgs []string
	for i := range feeds {
		f := &feeds[i]
		res, err := p.s.Store.PingFeed(ctx, f, now, PingMinGap)
		if err != nil {
			p.s.Log.Error("ping: record", "feed", f.ID, "err", err)
			out.lines = append(out.lines, f.URL+": internal error; try again later")
			out.status = http.StatusInternalServerError
			continue
		}
		msg := p.pingWords(ctx, f, res, now)
		queued = queued || res == store.PingQueued
		if res == store.PingGone {
			gone++
		}
		p.s.Log.Info("ping", "feed", f.ID, "url", f.URL, "result", res.String())
		out.lines = append(out.lines, f.URL+": "+msg)
		if res != store.PingNotFollowed && res != store.PingGone {
			out.ok = true
			msgs = append(msgs, msg)
		}
	}
	switch {
	case out.status == http.StatusInternalServerError:
	case out.ok && queued:
		out.status = http.StatusAccepted // the poll the ping asks for waits for the one in progress
	case out.ok:
		out.status = http.StatusOK
	case gone == len(feeds):
		out.status = http.StatusGone
	}
	if out.ok {
		out.message = "Thanks for the ping: " + strings.Join(pingDedupe(msgs), "; ") + "."
	} else if gone == len(feeds) {
		out.message = "This feed answered 410 Gone and is no longer polled."
	} else {
		out.message = "feedmail does not poll this URL."
	}
	return out
}

// pingWords returns what a ping did to feed f, whose ping came out as res,
// in words; a blacklisted feed is polled on the way (revive).
func (p *pinger) pingWords(ctx context.Context, f *store.Feed, res store.PingResult, now time.Time) string {
	switch res {
	case store.PingScheduled:
		return "poll scheduled now"
	case store.PingQueued:
		return "a poll is in progress right now; this ping is queued: a poll that starts after it follows at once"
	case store.PingTooSoon:
		return "already pinged within the last minute; this ping changes nothing"
	case store.PingRevive:
		return p.revive(ctx, f, now)
	case store.PingNotFollowed:
		return "nobody follows this feed here, so it is not polled"
	case store.PingGone:
		return "this feed answered 410 Gone and is no longer polled"
	}
	return ""
}

// revive polls a blacklisted feed now and lifts the blacklist if the poll
// fetched it fine.
func (p *pinger) revive(ctx context.Context, f *store.Feed, now time.Time) string {
	if p.o.PollNow == nil {
		return "this feed is blacklisted and cannot be checked right now; ping again later"
	}
	pctx, cancel := context.WithTimeout(ctx, pingRevivePollTimeout)
	defer cancel()
	// The poll writes last_success_at from the same clock; compare from a
	// second before, as stored times may be truncated.
	since := now.Add(-time.Second)
	if err := p.o.PollNow(pctx, f.ID, "publisher ping of a blacklisted feed"); err != nil {
		p.s.Log.Info("ping: poll of blacklisted feed failed", "feed", f.ID, "err", err)
	}
	after, err := p.s.Store.FeedByID(ctx, f.ID)
	if err != nil {
		p.s.Log.Error("ping: reload feed", "feed", f.ID, "err", err)
		return "internal error; try again later"
	}
	fetchedFine := after.LastSuccessAt != nil && !after.LastSuccessAt.Before(since) && after.ConsecutiveErrors == 0
	switch {
	case after.State == store.FeedActive && fetchedFine:
	case after.State == store.FeedBlacklisted && fetchedFine:
		lifted, err := p.s.Store.LiftBlacklist(ctx, f.ID, since, "publisher ping: fetched fine, taken off the blacklist")
		if err != nil {
			p.s.Log.Error("ping: lift blacklist", "feed", f.ID, "err", err)
			return "internal error; try again later"
		}
		if !lifted {
			return "this feed stays blacklisted"
		}
	default:
		reason := after.LastError
		if reason == "" {
			reason = after.PollReason
		}
		return fmt.Sprintf("this feed is blacklisted and still does not fetch fine (%s); it stays blacklisted", reason)
	}
	p.s.Log.Info("ping: feed taken off the blacklist", "feed", f.ID, "url", f.URL)
	return "fetched fine: taken off the blacklist and polled as usual again"
}

// pingCandidates checks raw and returns the URLs to look it up under: the
// URL itself and, for a home page, the variant with or without the "/".
func pingCandidates(raw string) ([]string, bool) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(raw) > 2048 {
		return nil, false
	}
	out := []string{raw}
	if u.RawQuery == "" && u.Fragment == "" {
		switch u.Path {
		case "":
			out = append(out, raw+"/")
		case "/":
			out = append(out, strings.TrimSuffix(raw, "/"))
		}
	}
	return out, true
}

func pingDedupe(list []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
