// Package articletest serves a summary-only feed whose posts link to
// article pages, some of them misbehaving, for the tests of the "article"
// format. It must not be imported by the product binary.
package articletest

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Paragraphs are the article's own paragraphs: an email in the article
// format carries each of them.
var Paragraphs = []string{
	"The harbour was quiet when the first boats came back with their nets full of silver fish and the gulls circling overhead.",
	"Fishermen have worked this coast for three hundred years, and their families still mend the nets by hand on the long stone quay.",
	"By noon the market had sold everything, and the cooks of the town were already arguing about the best way to grill sardines.",
	"In the evening the lights of the cafés came on one by one along the water, and the old men played cards until the last ferry left.",
}

// ImagePath is the article's image, relative on the page: the email shows
// it absolute.
const ImagePath = "/images/harbour.jpg"

// Noise is text of the page around the article (navigation, ads,
// comments): an email carries none of it.
var Noise = []string{"Subscribe to our premium plan", "Buy cheap watches now", "Site navigation home about contact", "First comment: great post", "Copyright Harbour News"}

// Summary is the feed's own text of every post: a teaser.
const Summary = "The harbour was quiet when the first boats came back… Read more"

// Page is the article page: the article amid navigation, ads and comments.
func Page(title string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<!DOCTYPE html><html><head><title>%s</title></head><body>
<header><nav class="menu"><a href="/">%s</a></nav></header>
<aside class="ad sidebar"><p>%s</p><a href="/ads">%s</a></aside>
<main><article><h1>%s</h1>`, title, Noise[2], Noise[0], Noise[1], title)
	for i, p := range Paragraphs {
		fmt.Fprintf(&b, "<p>%s</p>\n", p)
		if i == 1 {
			fmt.Fprintf(&b, `<figure><img src="%s" alt="Boats in the harbour" width="600" height="400"><figcaption>Boats at dawn.</figcaption></figure>`+"\n", ImagePath)
		}
	}
	fmt.Fprintf(&b, `</article></main>
<section id="comments" class="comments"><h2>Comments</h2><div class="comment"><p>%s</p></div></section>
<footer class="footer"><p>%s</p></footer></body></html>`, Noise[3], Noise[4])
	return b.String()
}

// Server serves the feed at /feed.xml: one post per name published, linked
// to /posts/NAME. Each name says how its page answers: "ok" (the page),
// "500", "404", "huge" (a 20 MB body), "slow" (no answer until the
// request ends), "robots" (disallowed by /robots.txt).
type Server struct {
	*httptest.Server
	mu    sync.Mutex
	posts []string
}

// New starts a Server for posts. Close it when done.
func New(posts ...string) *Server {
	s := &Server{posts: posts}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /posts/robots\n")
	})
	mux.HandleFunc("GET /feed.xml", s.feed)
	mux.HandleFunc("GET /posts/{name}", func(w http.ResponseWriter, r *http.Request) { servePost(w, r, r.PathValue("name")) })
	mux.HandleFunc("GET "+ImagePath, serveImage)
	s.Server = httptest.NewServer(mux)
	return s
}

// Publish adds posts to the feed.
func (s *Server) Publish(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posts = append(s.posts, names...)
}

// PostURL is the address of post name's page.
func (s *Server) PostURL(name string) string { return s.URL + "/posts/" + name }

// FeedURL is the feed's address.
func (s *Server) FeedURL() string { return s.URL + "/feed.xml" }

func (s *Server) feed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/rss+xml")
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Harbour News</title><link>` + s.URL + `/</link><description>d</description>`)
	s.mu.Lock()
	posts := append([]string(nil), s.posts...)
	s.mu.Unlock()
	for i, name := range posts {
		fmt.Fprintf(&b, `<item><title>Post %s</title><link>%s</link><guid>%s</guid><pubDate>%s</pubDate><description><![CDATA[<p>%s</p>]]></description></item>`,
			name, s.PostURL(name), s.PostURL(name), time.Date(2026, 11, 1+i, 8, 0, 0, 0, time.UTC).Format(time.RFC1123Z), Summary)
	}
	b.WriteString(`</channel></rss>`)
	fmt.Fprint(w, b.String())
}

// servePost answers a post's page as its name says.
func servePost(w http.ResponseWriter, r *http.Request, name string) {
	switch name {
	case "500":
		http.Error(w, "boom", http.StatusInternalServerError)
	case "404":
		http.NotFound(w, r)
	case "huge":
		w.Header().Set("Content-Type", "text/html")
		chunk := []byte(strings.Repeat("<p>padding padding padding padding</p>\n", 1024))
		for sent := 0; sent < 20<<20; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	case "slow":
		<-r.Context().Done()
	default:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, Page("Post "+name))
	}
}

// serveImage answers the article's image: a 600×400 gradient PNG.
func serveImage(w http.ResponseWriter, _ *http.Request) {
	img := image.NewRGBA(image.Rect(0, 0, 600, 400))
	for x := range 600 {
		for y := range 400 {
			img.Set(x, y, color.RGBA{R: 30, G: uint8(80 + y/4), B: uint8(120 + x/6), A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(b.Bytes())
}
