package recovery

import (
	"net/url"
	"regexp"
	"strings"
)

// step is one request the attempt may make.
type step struct {
	url     string
	foundBy string
	// tier orders steps: lower first; within a tier, the order they were
	// added. Links found on a page enter at tierFound, ahead of the guesses.
	tier int
	// page: fetched for the links it holds (a homepage); a feed found there
	// is still judged, but an HTML answer is not listed as a candidate.
	page bool
	// probe: the old URL asked again, never a candidate itself.
	probe bool
	// trustRedirect: a permanent redirect of this request is the old host
	// redirecting (the old URL, its origin, the site's homepage).
	trustRedirect bool
	seq           int
}

// The tiers, in the order they are tried.
const (
	tierProbe  = iota // the old URL itself
	tierFound         // the feed's own pointers and what pages advertise
	tierHome          // homepages and the https/www variants
	tierAnchor        // feed-looking <a> links
	tierGuess         // parent paths and platform paths
)

// platformPaths are the feed paths of common platforms, most common first,
// tried under the feed's folder and at the root of its site.
var platformPaths = []struct{ path, by string }{
	{"feed/", "WordPress path /feed/"},
	{"rss/", "Ghost path /rss/"},
	{"feed", "Substack path /feed"},
	{"index.xml", "Hugo path /index.xml"},
	{"feed.xml", "Jekyll path /feed.xml"},
	{"atom.xml", "path /atom.xml"},
	{"rss.xml", "path /rss.xml"},
}

// rootOnlyPaths are platform paths that only exist at a site's root.
var rootOnlyPaths = []struct{ path, by string }{
	{"?feed=rss2", "WordPress path /?feed=rss2"},
	{"feeds/posts/default", "Blogger path /feeds/posts/default"},
}

// plan returns the first steps of an attempt for k, in priority order:
// the old URL (unless frozen), the feed's own pointers (last permanent
// redirect, self link, platform-specific addresses), the homepages of the
// site and of the URL's origin, the https and www variants, then parent
// and platform paths. Duplicates are removed by the attempt.
func plan(k Known) []step {
	var out []step
	add := func(tier int, u, by string, page, trust bool) {
		if u != "" {
			out = append(out, step{url: u, foundBy: by, tier: tier, page: page, trustRedirect: trust})
		}
	}
	if !k.Frozen {
		out = append(out, step{url: k.URL, foundBy: "feed URL's page", tier: tierProbe, probe: true, page: true, trustRedirect: true})
	}
	add(tierFound, k.PermanentURL, "last permanent redirect", false, false)
	add(tierFound, k.SelfURL, "self link", false, false)
	for _, s := range platformSteps(k) {
		add(s.tier, s.url, s.foundBy, s.page, false)
	}
	if sharedHosts[hostOf(k.URL)] {
		return out // a platform's homepage and paths are not the publisher's
	}
	add(tierHome, normURL(k.SiteURL), "site homepage", true, true)
	add(tierHome, origin(k.URL), "homepage", true, true)
	if strings.HasPrefix(k.URL, "http:") {
		add(tierHome, withScheme(k.URL, "https"), "https variant", false, false)
	}
	www := toggleWWW(k.URL)
	add(tierHome, www, "www variant", false, false)
	if strings.HasPrefix(www, "http:") {
		add(tierHome, withScheme(www, "https"), "https www variant", false, false)
	}
	if strings.HasPrefix(k.URL, "http:") {
		add(tierGuess, origin(withScheme(k.URL, "https")), "https homepage", true, false)
	}
	add(tierGuess, origin(www), "www homepage", true, false)
	for _, d := range dirs(k.URL) {
		add(tierGuess, resolve(k.URL, d), "parent path", true, false)
	}
	for _, base := range guessBases(k) {
		for _, p := range platformPaths {
			add(tierGuess, resolve(base, p.path), p.by, false, false)
		}
	}
	for _, p := range rootOnlyPaths {
		add(tierGuess, resolve(origin(k.URL), "/"+p.path), p.by, false, false)
	}
	return out
}

// guessBases are the folders platform paths are tried under: the feed's
// own folder, the site link's folder, the root of the URL's origin.
func guessBases(k Known) []string {
	var out []string
	if ds := dirs(k.URL); len(ds) > 0 {
		out = append(out, resolve(k.URL, ds[0]))
	}
	if p := parse(k.SiteURL); p != nil && p.Path != "" && p.Path != "/" {
		dir := p.Path
		if !strings.HasSuffix(dir, "/") {
			dir += "/"
		}
		out = append(out, resolve(k.SiteURL, dir))
	}
	return append(out, origin(k.URL))
}

// sharedPlatforms are hosts where many publishers share one host name, so
// the same registrable domain says nothing about who published a feed.
var sharedPlatforms = map[string]bool{
	"youtube.com": true, "medium.com": true, "feedburner.com": true, "substack.com": true,
	"blogger.com": true, "wordpress.com": true, "tumblr.com": true, "google.com": true,
}

func isSharedPlatform(host string) bool { return sharedPlatforms[domainOf(host)] }

// sharedHosts are the host names whose every path belongs to a different
// publisher: their homepage and generic feed paths are never tried.
var sharedHosts = map[string]bool{
	"youtube.com": true, "www.youtube.com": true, "m.youtube.com": true, "medium.com": true,
	"feeds.feedburner.com": true, "feeds2.feedburner.com": true, "feedproxy.google.com": true,
}

var (
	ytChannelPath = regexp.MustCompile(`^/channel/(UC[0-9A-Za-z_-]{22})/?$`)
	mediumUser    = regexp.MustCompile(`^/(?:feed/)?(@[^/]+)/?$`)
)

// platformSteps are the addresses a platform gives the same publisher's
// feed under another form: YouTube's ?user= and ?channel_id= feeds (the
// channel page names the id), Medium's medium.com/feed/@user and
// user.medium.com/feed.
func platformSteps(k Known) []step {
	var out []step
	for _, u := range []string{k.SiteURL, k.URL} {
		p := parse(u)
		if p == nil {
			continue
		}
		switch dom := domainOf(p.Hostname()); {
		case dom == "youtube.com":
			if m := ytChannelPath.FindStringSubmatch(p.Path); m != nil {
				out = append(out, step{url: youTubeFeed(m[1]), foundBy: "YouTube channel feed", tier: tierFound})
			}
			if user := p.Query().Get("user"); user != "" && strings.HasSuffix(p.Path, "/feeds/videos.xml") {
				out = append(out, step{url: "https://www.youtube.com/user/" + url.PathEscape(user),
					foundBy: "YouTube channel page", tier: tierFound, page: true})
			}
			if strings.HasPrefix(p.Path, "/user/") || strings.HasPrefix(p.Path, "/c/") || strings.HasPrefix(p.Path, "/@") {
				out = append(out, step{url: normURL(u), foundBy: "YouTube channel page", tier: tierFound, page: true})
			}
		case dom == "medium.com":
			out = append(out, mediumSteps(p)...)
		}
	}
	return out
}

func youTubeFeed(channelID string) string {
	return "https://www.youtube.com/feeds/videos.xml?channel_id=" + channelID
}

func mediumSteps(p *url.URL) []step {
	by := "Medium path /feed/@user"
	if m := mediumUser.FindStringSubmatch(p.Path); m != nil && p.Hostname() == "medium.com" {
		user := strings.TrimPrefix(m[1], "@")
		return []step{
			{url: "https://medium.com/feed/@" + user, foundBy: by, tier: tierHome},
			{url: "https://" + strings.ToLower(user) + ".medium.com/feed", foundBy: "Medium path user.medium.com/feed", tier: tierHome},
		}
	}
	if sub, ok := strings.CutSuffix(p.Hostname(), ".medium.com"); ok && sub != "www" {
		return []step{{url: "https://medium.com/feed/@" + sub, foundBy: by, tier: tierHome}}
	}
	return nil
}
