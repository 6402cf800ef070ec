package recovery

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/newitems"
)

// feed judges an answer that parsed as a feed. The old URL answering a
// feed without a redirect ends the attempt: it is not gone.
func (a *attempt) feed(st step, resp *fetcher.Response, f *newitems.Feed, temporary bool) {
	target := st.url
	if !temporary && len(resp.Redirects) > 0 {
		target = normURL(resp.FinalURL)
	}
	by := st.foundBy
	if st.probe {
		if len(resp.Redirects) == 0 || target == normURL(a.k.URL) {
			a.res.Old, a.done = "feed", true
			return
		}
		a.res.Old = "a feed at " + resp.FinalURL
		by = "redirect of the feed URL"
	}
	if target == normURL(a.k.URL) {
		return
	}
	a.seen[target] = true
	c := Candidate{URL: target, FoundBy: by, Resp: resp, Parsed: f,
		PostsInCommon: postsInCommon(a.k.Items, f.Items),
		SameTitle:     normTitle(f.Title) != "" && normTitle(f.Title) == normTitle(a.k.Title),
		SameSite:      a.allowed.has(target)}
	if n := newest(f.Items); !n.IsZero() {
		c.Newest = &n
	}
	c.Verdict = verdict(evidence{
		temporary:     temporary,
		otherSite:     !c.SameSite,
		siteElsewhere: f.SiteURL != "" && !a.allowed.has(f.SiteURL),
		selfLink:      by == "self link",
		downgrade:     strings.HasPrefix(target, "http:") && strings.HasPrefix(a.k.URL, "https:"),
		items:         len(f.Items),
		postsInCommon: c.PostsInCommon,
		sameTitle:     c.SameTitle,
		sharedHost:    isSharedPlatform(hostOf(target)),
		frozen:        a.k.Frozen,
		newer:         c.Newest != nil && c.Newest.After(a.k.NewestItemDate),
	})
	a.res.Candidates = append(a.res.Candidates, c)
	switch c.Verdict {
	case Same:
		a.done = true
	case Probably:
		a.offered = true
	}
}

// page files an answer that is not a feed and returns why, in the words of
// a rejection: a login wall, a parked domain (the host is not asked
// again), a status, or "not a feed". An ordinary HTML page's feed links
// join the steps, labelled with where they were found.
func (a *attempt) page(st step, resp *fetcher.Response, temporary bool) string {
	if loginPage(resp.Status, resp.Body) {
		return "login page"
	}
	if resp.Status != http.StatusOK {
		return "status " + strconv.Itoa(resp.Status)
	}
	if parkedPage(resp.Body) {
		a.dead[hostOf(resp.FinalURL)] = true
		a.dead[hostOf(st.url)] = true
		return "parked domain"
	}
	label := st.foundBy
	switch {
	case st.page && !temporary && len(resp.Redirects) > 0 && hostOf(resp.FinalURL) != hostOf(st.url):
		label += " redirect"
	case !st.page:
		label += " page"
	}
	pl := readPage(resp.Body, resp.FinalURL)
	for _, u := range pl.alternates {
		a.push(step{url: u, foundBy: label + " <link rel=alternate>", tier: tierFound})
	}
	if pl.channelID != "" && domainOf(hostOf(resp.FinalURL)) == "youtube.com" {
		a.push(step{url: youTubeFeed(pl.channelID), foundBy: "YouTube channel feed", tier: tierFound})
	}
	for _, u := range pl.anchors {
		a.push(step{url: u, foundBy: label + " <a> link", tier: tierAnchor})
	}
	if st.probe {
		return "an HTML page"
	}
	return "not a feed"
}
