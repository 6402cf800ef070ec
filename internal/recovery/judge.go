package recovery

import (
	"strings"
	"time"
	"unicode"

	"github.com/feedmail/feedmail/internal/newitems"
)

// postsInCommon returns how many of items are posts the old feed had: the
// same GUID, the same link (ignoring scheme, "www.", a trailing slash), or
// the same normalised title on the same day.
func postsInCommon(old []KnownItem, items []newitems.Item) int {
	guids, links, titled := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, it := range old {
		if g := strings.TrimSpace(it.GUID); g != "" {
			guids[g] = true
			if k := linkKey(g); k != "" {
				links[k] = true
			}
		}
		if k := linkKey(it.Link); k != "" {
			links[k] = true
		}
		if k := titleDay(it.Title, it.Published); k != "" {
			titled[k] = true
		}
	}
	n := 0
	for _, it := range items {
		g := strings.TrimSpace(it.GUID)
		switch {
		case g != "" && guids[g],
			g != "" && links[linkKey(g)] && linkKey(g) != "",
			linkKey(it.Link) != "" && links[linkKey(it.Link)],
			titleDay(it.Title, it.Published) != "" && titled[titleDay(it.Title, it.Published)]:
			n++
		}
	}
	return n
}

// titleDay is the key of a post by title and day; "" without either.
func titleDay(title string, published time.Time) string {
	t := normTitle(title)
	if t == "" || published.IsZero() {
		return ""
	}
	return published.UTC().Format(time.DateOnly) + " " + t
}

// normTitle lowercases a title and keeps its letters and digits, one space
// between words.
func normTitle(s string) string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	return strings.Join(f, " ")
}

// newest returns the latest item date, or zero.
func newest(items []newitems.Item) time.Time {
	var n time.Time
	for _, it := range items {
		if it.Published.After(n) {
			n = it.Published
		}
	}
	return n
}

// evidence is what the verdict on one candidate rests on.
type evidence struct {
	temporary     bool // reached through a 302, 303 or 307
	otherSite     bool // its URL is on a registrable domain the old feed never had
	siteElsewhere bool // its own site link is on such a domain
	selfLink      bool // found as the old feed's self link
	downgrade     bool // http where the old feed was https
	items         int
	postsInCommon int
	sameTitle     bool
	sharedHost    bool // on a platform where publishers share a domain
	frozen        bool // the old feed froze: only a newer feed will do
	newer         bool // its newest post is newer than the old feed's
}

// verdict returns "same", "probably" or "rejected: <why>" for a candidate
// that parsed as a feed. The refusals come first: a temporary redirect,
// another site, an http self link without posts in common. Then posts in
// common make it the same feed (for a frozen feed, only with newer posts);
// without them the same site makes it probably the new feed, provided it
// has posts, is not another publisher's on a shared platform (same title
// required there) and, for a frozen feed, is newer.
func verdict(e evidence) string {
	switch {
	case e.temporary:
		return "rejected: reached through a temporary redirect"
	case e.otherSite:
		return "rejected: another site"
	case e.selfLink && e.downgrade && e.postsInCommon == 0:
		return "rejected: self link to http without posts in common"
	case e.postsInCommon > 0 && e.frozen && !e.newer:
		return "rejected: no newer posts"
	case e.postsInCommon > 0:
		return Same
	case e.siteElsewhere:
		return "rejected: another site"
	case e.items == 0:
		return "rejected: no posts"
	case e.frozen && !e.newer:
		return "rejected: no newer posts"
	case e.sharedHost && !e.sameTitle:
		return "rejected: another publisher on a shared platform"
	}
	return Probably
}

// domains is the set of registrable domains a candidate may live on: the
// old URL's, the old site's, and those the old host permanently
// redirected to.
type domains map[string]bool

func allowedDomains(k Known) domains {
	d := domains{}
	for _, u := range append([]string{k.URL, k.SiteURL, k.PermanentURL}, k.RedirectedTo...) {
		d.add(u)
	}
	return d
}

func (d domains) add(u string) {
	if dom := domainOf(hostOf(u)); dom != "" {
		d[dom] = true
	}
}

func (d domains) has(u string) bool { return d[domainOf(hostOf(u))] }

// better reports whether candidate a beats b for the result: the most
// posts in common, then the same title, then the newest post; the earlier
// found wins ties (b, when called in order).
func better(a, b *Candidate) bool {
	if a.PostsInCommon != b.PostsInCommon {
		return a.PostsInCommon > b.PostsInCommon
	}
	if a.SameTitle != b.SameTitle {
		return a.SameTitle
	}
	an, bn := time.Time{}, time.Time{}
	if a.Newest != nil {
		an = *a.Newest
	}
	if b.Newest != nil {
		bn = *b.Newest
	}
	return an.After(bn)
}

// decide returns the Result verdict and target from the candidates: the
// best "same" one is a move, else the best "probably" one is offered.
func decide(cs []Candidate) (string, string) {
	for _, want := range []string{Same, Probably} {
		var best *Candidate
		for i := range cs {
			if cs[i].Verdict == want && (best == nil || better(&cs[i], best)) {
				best = &cs[i]
			}
		}
		if best != nil {
			if want == Same {
				return Moved, best.URL
			}
			return Offered, best.URL
		}
	}
	return None, ""
}
