package sites

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/recovery"
)

// Scenario is one way a feed moves or dies, as a web before and after,
// with the outcome one rediscovery attempt must reach. A test serves
// Before, takes a good poll of OldURL (or uses Known), then serves After
// and runs the attempt.
type Scenario struct {
	Name string
	// Recoverable rows must end "moved" or "offered" (WantTo) on the first
	// attempt; the others "none", with nothing moved and nothing offered.
	Recoverable bool
	OldURL      string
	OldType     string // Content-Type the old feed was served with
	Old         []byte // the old feed as its last good poll fetched it
	// Frozen: the old feed still answers (Old, unchanged) while its site
	// advertises a newer one.
	Frozen      bool
	WantVerdict string // recovery.Moved, recovery.Offered or recovery.None
	WantTo      string

	after func(*Sites)
}

// Before serves the web as it was: the old feed at OldURL.
func (sc Scenario) Before(s *Sites) { serve(s, sc.OldURL, sc.OldType, sc.Old) }

// After serves the web as it is now (hosts not set up do not resolve).
// Call it after Sites.Reset, with the client's idle connections closed (a
// feed dies days after its last good poll; a connection kept from Before
// would skip the new names, ports and certificates, or fail when Reset
// closes it).
func (sc Scenario) After(s *Sites) { sc.after(s) }

// Known returns what feedmail knows of the old feed after a good poll of
// Before: KnownFromFeed of Old, and Frozen.
func (sc Scenario) Known() (recovery.Known, error) {
	f, err := newitems.Parse(sc.Old, sc.OldType, sc.OldURL)
	if err != nil {
		return recovery.Known{}, fmt.Errorf("sites: scenario %q: old feed: %w", sc.Name, err)
	}
	k := recovery.KnownFromFeed(sc.OldURL, f)
	k.Frozen = sc.Frozen
	return k, nil
}

// serve registers body at rawURL's host and path (with its query, if any).
func serve(s *Sites, rawURL, typ string, body []byte) {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(fmt.Sprintf("sites: bad scenario URL %q: %v", rawURL, err))
	}
	s.Host(u.Hostname()).File(u.RequestURI(), typ, body)
}

// Scenarios returns the table, built from the real feed files under
// corpusDir (the third-party corpus), or an error when one is missing.
func Scenarios(corpusDir string) ([]Scenario, error) {
	c := &corpus{dir: corpusDir, files: map[string][]byte{}}
	rows := append(recoverable(c), mustNotMove(c)...)
	frozen, err := frozenRows(c)
	if err != nil {
		return nil, err
	}
	rows = append(rows, frozen...)
	if c.err != nil {
		return nil, c.err
	}
	return rows, nil
}

// recoverable are the rows where the feed went somewhere findable.
func recoverable(c *corpus) []Scenario {
	ines := rewrite(c.read(inessentialJSN), "http://inessential.com/", "https://inessential.test/")
	scriptingHTTP := rewrite(c.read(scriptingRSS), "http://www.scripting.com/", "http://scripting.test/")
	scripting := rewrite(c.read(scriptingRSS), "http://www.scripting.com/", "https://scripting.test/")
	nokia := rewrite(c.read(nokiaAtom), "http://touchnokia.ru/", "https://touchnokia.test/")
	wwwNokia := rewrite(c.read(nokiaAtom), "http://touchnokia.ru/", "https://www.touchnokia.test/")
	wordpress := rewrite(c.read(rssWorldRSS),
		"http://feeds.feedburner.com/rssworld/news?m=", "https://rssworld.test/?p=",
		"http://feeds.feedburner.com/rssworld/news", "https://rssworld.test/feed/",
		"http://www.rss-world.info/", "https://rssworld.test/")
	const channel = "UCtouchnokia0123456789ab"
	ytOld := "https://www.youtube.com/feeds/videos.xml?user=touchnokia"
	ytNew := "https://www.youtube.com/feeds/videos.xml?channel_id=" + channel
	rows := []Scenario{{
		Name: "moved without a redirect, found on the homepage", OldURL: "https://inessential.test/feed.json",
		OldType: TypeJSON, Old: ines, WantVerdict: recovery.Moved, WantTo: "https://inessential.test/2024/feed.json",
		after: func(s *Sites) {
			s.Host("inessential.test").HTML("/", page("inessential", alternate(TypeJSON, "/2024/feed.json"), "<h1>inessential</h1>"))
			serve(s, "https://inessential.test/2024/feed.json", TypeJSON, rewrite(ines, "https://inessential.test/feed.json", "https://inessential.test/2024/feed.json"))
		},
	}, {
		Name: "http to https", OldURL: "http://scripting.test/rss.xml", OldType: TypeRSS, Old: scriptingHTTP,
		WantVerdict: recovery.Moved, WantTo: "https://scripting.test/rss.xml",
		after: func(s *Sites) {
			s.Host("scripting.test").HTTPOff()
			serve(s, "https://scripting.test/rss.xml", TypeRSS, scripting)
		},
	}, {
		Name: "www to the bare domain", OldURL: "https://www.touchnokia.test/atom.xml", OldType: TypeAtom, Old: wwwNokia,
		WantVerdict: recovery.Moved, WantTo: "https://touchnokia.test/atom.xml",
		after: func(s *Sites) { serve(s, "https://touchnokia.test/atom.xml", TypeAtom, nokia) },
	}, {
		Name: "WordPress to Ghost, every post renumbered", OldURL: "https://rssworld.test/feed/", OldType: TypeRSS, Old: wordpress,
		WantVerdict: recovery.Offered, WantTo: "https://rssworld.test/rss/",
		after: func(s *Sites) {
			s.Host("rssworld.test").HTML("/", page("RSS World", alternate(TypeRSS, "https://rssworld.test/rss/"), "<h1>RSS World</h1>"))
			serve(s, "https://rssworld.test/rss/", TypeRSS, rewrite(ghostImport(wordpress), "https://rssworld.test/feed/", "https://rssworld.test/rss/"))
		},
	}, {
		Name: "domain move, only the homepage redirects", OldURL: "https://scripting.test/rss.xml", OldType: TypeRSS, Old: scripting,
		WantVerdict: recovery.Moved, WantTo: "https://scriptingnews.test/feed.xml",
		after: func(s *Sites) {
			s.Host("scripting.test").Redirect("/", http.StatusMovedPermanently, "https://scriptingnews.test/")
			s.Host("scriptingnews.test").HTML("/", page("Scripting News", alternate(TypeRSS, "/feed.xml"), "<h1>Scripting News</h1>"))
			serve(s, "https://scriptingnews.test/feed.xml", TypeRSS, rewrite(scripting, "https://scripting.test/", "https://scriptingnews.test/"))
		},
	}, {
		Name: "the feed URL now serves HTML", OldURL: "https://touchnokia.test/atom.xml", OldType: TypeAtom, Old: nokia,
		WantVerdict: recovery.Moved, WantTo: "https://touchnokia.test/feeds/all.atom.xml",
		after: func(s *Sites) {
			home := page("TouchNokia", alternate(TypeAtom, "/feeds/all.atom.xml"), "<h1>TouchNokia</h1><p>All the news.</p>")
			s.Host("touchnokia.test").HTML("/atom.xml", home).HTML("/", home)
			serve(s, "https://touchnokia.test/feeds/all.atom.xml", TypeAtom, nokia)
		},
	}, {
		Name: "404 with a sibling /feed/", OldURL: "https://inessential.test/blog/feed.json", OldType: TypeJSON,
		Old:         rewrite(ines, "https://inessential.test/feed.json", "https://inessential.test/blog/feed.json"),
		WantVerdict: recovery.Moved, WantTo: "https://inessential.test/blog/feed/",
		after: func(s *Sites) {
			s.Host("inessential.test").HTML("/", page("inessential", "", `<h1>inessential</h1><a href="/blog/">Blog</a>`))
			serve(s, "https://inessential.test/blog/feed/", TypeJSON, rewrite(ines, "https://inessential.test/feed.json", "https://inessential.test/blog/feed/"))
		},
	}, {
		Name: "YouTube feed form changed, user= to channel_id=", OldURL: ytOld, OldType: TypeAtom, Old: youTubeFeed(c.read(nokiaAtom), ytOld),
		WantVerdict: recovery.Moved, WantTo: ytNew,
		after: func(s *Sites) {
			s.Host("www.youtube.com").HTML("/user/touchnokia", page("TouchNokia - YouTube",
				alternate(TypeRSS, ytNew), `<script>var ytInitialData = {"channelId":"`+channel+`"};</script>`))
			serve(s, ytNew, TypeAtom, youTubeFeed(c.read(nokiaAtom), ytNew))
		},
	}}
	for i := range rows {
		rows[i].Recoverable = true
	}
	return rows
}
