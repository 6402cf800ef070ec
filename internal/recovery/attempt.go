package recovery

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/newitems"
)

// attempt is the state of one Attempt: the steps still to try, what was
// learned of hosts on the way, and the result so far.
type attempt struct {
	k       Known
	fetch   Fetch
	budget  int
	allowed domains
	queue   []step
	seq     int
	seen    map[string]bool
	dead    map[string]bool // hosts that do not resolve, fail TLS, or are parked
	refused map[string]bool // origins that refused or timed out
	hops    map[string]int  // redirect hops the last answer of each origin took
	done    bool            // a "same" candidate, or the old URL answers a feed
	offered bool            // a "probably" candidate: guesses are not worth more requests
	res     Result
}

// Attempt runs one bounded rediscovery for the old feed k: at most budget
// requests (0, or more than MaxRequests, means MaxRequests; redirect hops
// count, so the last fetch may go over by its hops), in the order plan
// gives, with the links pages advertise tried before the guesses. It stops
// early on a candidate that is the same feed, or when the old URL (not
// frozen) answers a feed without a redirect (Result.Old "feed": nothing to
// find). Hosts that fail DNS or TLS, or are parked, are not asked again.
func Attempt(ctx context.Context, k Known, fetch Fetch, budget int) Result {
	if budget <= 0 || budget > MaxRequests {
		budget = MaxRequests
	}
	a := &attempt{k: k, fetch: fetch, budget: budget, allowed: allowedDomains(k),
		seen: map[string]bool{}, dead: map[string]bool{}, refused: map[string]bool{}, hops: map[string]int{}}
	a.res.Candidates, a.res.Tried = []Candidate{}, []string{}
	a.seen[normURL(k.URL)] = true // never a candidate
	for _, s := range plan(k) {
		if s.probe {
			a.queue = append(a.queue, s) // the one step that asks the old URL
			continue
		}
		a.push(s)
	}
	for a.res.Requests < a.budget && !a.done && ctx.Err() == nil {
		st, ok := a.next()
		if !ok {
			break
		}
		a.run(ctx, st)
	}
	a.res.Verdict, a.res.To = decide(a.res.Candidates)
	return a.res
}

// push queues st unless its URL was seen; a URL still queued with a later
// tier moves up to st's tier and takes its label (a guess that a page
// turned out to advertise).
func (a *attempt) push(st step) {
	n := normURL(st.url)
	if n == "" {
		return
	}
	if a.seen[n] {
		for i := range a.queue {
			if q := &a.queue[i]; q.url == n && q.tier > st.tier {
				q.tier, q.foundBy, q.seq = st.tier, st.foundBy, a.seq
				a.seq++
			}
		}
		return
	}
	a.seen[n] = true
	st.url, st.seq = n, a.seq
	a.seq++
	a.queue = append(a.queue, st)
}

// next returns the first step by tier and order that is still worth a
// request and fits the budget (counting the redirect hops its origin took
// last time); a candidate on another site is listed as rejected unasked.
// Once a candidate is offered, parent and platform guesses are not.
func (a *attempt) next() (step, bool) {
	for len(a.queue) > 0 {
		best := 0
		for i, s := range a.queue {
			if s.tier < a.queue[best].tier || (s.tier == a.queue[best].tier && s.seq < a.queue[best].seq) {
				best = i
			}
		}
		st := a.queue[best]
		a.queue = append(a.queue[:best], a.queue[best+1:]...)
		switch {
		case a.dead[hostOf(st.url)], a.refused[origin(st.url)]:
			continue
		case a.offered && st.tier >= tierGuess:
			continue
		case a.res.Requests+1+a.hops[origin(st.url)] > a.budget:
			continue
		case !a.allowed.has(st.url):
			if !st.page {
				a.res.Candidates = append(a.res.Candidates, Candidate{URL: st.url, FoundBy: st.foundBy, Verdict: "rejected: another site"})
			}
			continue
		}
		return st, true
	}
	return step{}, false
}

// run makes one step's request and files what it answered.
func (a *attempt) run(ctx context.Context, st step) {
	resp, err := a.fetch(ctx, st.url)
	a.record(st.url, resp)
	if resp != nil {
		a.hops[origin(st.url)] = len(resp.Redirects)
	}
	if err != nil {
		a.failed(st, err)
		return
	}
	temporary := false
	for _, h := range resp.Redirects {
		if h.Status != http.StatusMovedPermanently && h.Status != http.StatusPermanentRedirect {
			temporary = true
		}
	}
	if st.trustRedirect && !temporary {
		for _, h := range resp.Redirects {
			a.trust(h.To)
		}
	}
	if resp.Status == http.StatusOK {
		if f, perr := newitems.Parse(resp.Body, resp.ContentType, resp.FinalURL); perr == nil {
			a.feed(st, resp, f, temporary)
			return
		}
	}
	why := a.page(st, resp, temporary)
	switch {
	case st.probe:
		a.res.Old = why
		if temporary {
			a.res.Old = fmt.Sprintf("redirected (%d) to %s: %s", resp.Redirects[0].Status, resp.FinalURL, why)
		}
	case !st.page:
		if temporary && why == "not a feed" {
			why = "reached through a temporary redirect"
		}
		a.res.Candidates = append(a.res.Candidates, Candidate{URL: st.url, FoundBy: st.foundBy, Verdict: "rejected: " + why, Resp: resp})
	}
}

// record adds the request and its redirect hops to Tried.
func (a *attempt) record(u string, resp *fetcher.Response) {
	a.res.Tried = append(a.res.Tried, u)
	if resp != nil {
		for _, h := range resp.Redirects {
			a.res.Tried = append(a.res.Tried, h.To)
		}
	}
	a.res.Requests = len(a.res.Tried)
}

// trust records a host the old host permanently redirected to.
func (a *attempt) trust(to string) {
	h := hostOf(to)
	if h == "" {
		return
	}
	a.allowed.add(to)
	if !containsHost(a.res.RedirectedTo, h) && h != hostOf(a.k.URL) {
		a.res.RedirectedTo = append(a.res.RedirectedTo, h)
	}
}

func containsHost(hosts []string, h string) bool {
	for _, x := range hosts {
		if x == h {
			return true
		}
	}
	return false
}

// failed files a request that got no answer: a host whose name does not
// resolve (or is refused by the guard) or whose TLS fails is not asked
// again; nor is an origin that refused or timed out.
func (a *attempt) failed(st step, err error) {
	kind := fetcher.KindOf(err)
	at := st.url
	var fe *fetcher.Error
	if errors.As(err, &fe) && fe.URL != "" {
		at = fe.URL
	}
	switch kind {
	case fetcher.KindDNS, fetcher.KindPrivateAddress, fetcher.KindTLS:
		a.dead[hostOf(at)] = true
	case fetcher.KindConnection, fetcher.KindTimeout:
		a.refused[origin(at)] = true
	}
	switch {
	case st.probe:
		a.res.Old = string(kind)
	case !st.page:
		a.res.Candidates = append(a.res.Candidates, Candidate{URL: st.url, FoundBy: st.foundBy,
			Verdict: "rejected: no answer (" + string(kind) + ")"})
	}
}
