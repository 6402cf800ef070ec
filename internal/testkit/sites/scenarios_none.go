package sites

import (
	"net/http"

	"github.com/feedmail/feedmail/internal/recovery"
)

// mustNotMove are the rows where nothing may be moved or offered: the
// feed died (its readers are told), or the only candidates are traps.
func mustNotMove(c *corpus) []Scenario {
	scripting := rewrite(c.read(scriptingRSS), "http://www.scripting.com/", "https://scripting.test/")
	nokia := rewrite(c.read(nokiaAtom), "http://touchnokia.ru/", "https://touchnokia.test/")
	ines := rewrite(c.read(inessentialJSN), "http://inessential.com/", "https://inessential.test/")
	wordpress := rewrite(c.read(rssWorldRSS),
		"http://feeds.feedburner.com/rssworld/news?m=", "https://rssworld.test/?p=",
		"http://feeds.feedburner.com/rssworld/news", "https://rssworld.test/feed/",
		"http://www.rss-world.info/", "https://rssworld.test/")
	const maintenance = "https://scripting.test/maintenance.html"
	login := page("Sign in", "", `<form method=post action="/login"><input name=user><input type="password" name=pw><button>Sign in</button></form>`)
	return []Scenario{{
		Name: "DNS gone for good", OldURL: "https://scripting.test/rss.xml", OldType: TypeRSS, Old: scripting,
		WantVerdict: recovery.None,
		after:       func(*Sites) {},
	}, {
		// An expired certificate on the old host means nothing there can be
		// trusted, not even its plain-HTTP twin.
		Name: "TLS certificate expired", OldURL: "https://touchnokia.test/atom.xml", OldType: TypeAtom, Old: nokia,
		WantVerdict: recovery.None,
		after: func(s *Sites) {
			s.Host("touchnokia.test").ExpiredCert().
				HTML("/", page("TouchNokia", alternate(TypeAtom, "/atom2.xml"), "")).
				File("/atom.xml", TypeAtom, nokia).File("/atom2.xml", TypeAtom, nokia)
		},
	}, {
		Name: "302 to a maintenance page", OldURL: "https://scripting.test/rss.xml", OldType: TypeRSS, Old: scripting,
		WantVerdict: recovery.None,
		after: func(s *Sites) {
			s.Host("scripting.test").
				HTML("/maintenance.html", page("Down for maintenance", alternate(TypeRSS, "https://status.test/feed.xml"),
					"<h1>We'll be back soon</h1>")).
				Fallback(redirect(http.StatusFound, maintenance))
			serve(s, "https://status.test/feed.xml", TypeRSS, scripting)
		},
	}, {
		Name: "parked domain", OldURL: "https://rssworld.test/feed/", OldType: TypeRSS, Old: wordpress,
		WantVerdict: recovery.None,
		after: func(s *Sites) {
			s.Host("rssworld.test").Fallback(status(http.StatusOK, page("rssworld.test",
				alternate(TypeRSS, "https://rssworld.test/rss/"),
				"<h1>rssworld.test</h1><p>This domain is for sale! Buy this domain today.</p>")))
		},
	}, {
		Name: "self link to another site", OldURL: "https://touchnokia.test/atom.xml", OldType: TypeAtom,
		Old:         rewrite(nokia, "https://touchnokia.test/atom.xml", "https://mirror.test/atom.xml"),
		WantVerdict: recovery.None,
		after: func(s *Sites) {
			s.Host("touchnokia.test")
			serve(s, "https://mirror.test/atom.xml", TypeAtom, nokia)
		},
	}, {
		Name: "homepage links only to a different blog's feed", OldURL: "https://inessential.test/feed.json", OldType: TypeJSON, Old: ines,
		WantVerdict: recovery.None,
		after: func(s *Sites) {
			s.Host("inessential.test").HTML("/", page("inessential", alternate(TypeRSS, "https://otherblog.test/rss.xml"),
				`<p>Read my friend: <a href="https://otherblog.test/rss.xml">their feed</a></p>`))
			serve(s, "https://otherblog.test/rss.xml", TypeRSS, scripting)
		},
	}, {
		Name: "password-protected feed", OldURL: "https://scripting.test/rss.xml", OldType: TypeRSS, Old: scripting,
		WantVerdict: recovery.None,
		after: func(s *Sites) {
			s.Host("scripting.test").
				Handle("/rss.xml", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("WWW-Authenticate", `Basic realm="members"`)
					http.Error(w, "authorization required", http.StatusUnauthorized)
				})).
				Fallback(status(http.StatusOK, login))
		},
	}}
}

// frozenRows are the rows where the old feed still answers but froze while
// its site moved to a newer feed.
func frozenRows(c *corpus) ([]Scenario, error) {
	ines := rewrite(c.read(inessentialJSN), "http://inessential.com/", "https://inessential.test/")
	wordpress := rewrite(c.read(rssWorldRSS),
		"http://feeds.feedburner.com/rssworld/news?m=", "https://rssworld.test/?p=",
		"http://feeds.feedburner.com/rssworld/news", "https://rssworld.test/feed/",
		"http://www.rss-world.info/", "https://rssworld.test/")
	if c.err != nil {
		return nil, c.err
	}
	const newURL = "https://inessential.test/new/feed.json"
	fresh, err := withNewerPosts(ines, newURL,
		[3]string{"https://inessential.test/2024/03/02/back", "Back, on a new engine", "2024-03-02T10:00:00Z"},
		[3]string{"https://inessential.test/2024/03/05/diary", "Diary of the move", "2024-03-05T10:00:00Z"})
	if err != nil {
		return nil, err
	}
	return []Scenario{{
		Name: "frozen feed while the homepage advertises a new one", Recoverable: true, Frozen: true,
		OldURL: "https://inessential.test/feed.json", OldType: TypeJSON, Old: ines,
		WantVerdict: recovery.Moved, WantTo: newURL,
		after: func(s *Sites) {
			serve(s, "https://inessential.test/feed.json", TypeJSON, ines)
			s.Host("inessential.test").HTML("/", page("inessential", alternate(TypeJSON, "/new/feed.json"), "<h1>inessential</h1>"))
			serve(s, newURL, TypeJSON, fresh)
		},
	}, {
		Name: "frozen feed, the new one shares no post", Recoverable: true, Frozen: true,
		OldURL: "https://rssworld.test/feed/", OldType: TypeRSS, Old: wordpress,
		WantVerdict: recovery.Offered, WantTo: "https://rssworld.test/rss/",
		after: func(s *Sites) {
			serve(s, "https://rssworld.test/feed/", TypeRSS, wordpress)
			s.Host("rssworld.test").HTML("/", page("RSS World", alternate(TypeRSS, "/rss/"), "<h1>RSS World</h1>"))
			serve(s, "https://rssworld.test/rss/", TypeRSS, rewrite(ghostImport(wordpress), "https://rssworld.test/feed/", "https://rssworld.test/rss/"))
		},
	}}, nil
}
