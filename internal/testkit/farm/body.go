package farm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"time"
)

// docMeta is what a document needs besides its items.
type docMeta struct {
	title   string
	feedURL string // self
	homeURL string
	hub     string // "" unless advertised in the document
	updated time.Time
	broken  bool // InvalidUTF8
}

// badUTF8 is inserted into titles by the InvalidUTF8 mode: a lone
// continuation byte, an overlong encoding and a byte that is never UTF-8.
const badUTF8 = "\x80 \xc0\xaf \xff"

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func escAttr(s string) string { return esc(s) } // EscapeText also escapes quotes

func writeRSSHead(w io.Writer, m docMeta, entityBomb bool) {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	if entityBomb {
		b.WriteString(entityBombDTD)
	}
	b.WriteString(`<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">` + "\n<channel>\n")
	title := esc(m.title)
	if m.broken {
		title += badUTF8
	}
	if entityBomb {
		title = "&lol9;"
	}
	b.WriteString("<title>" + title + "</title>\n")
	b.WriteString("<link>" + esc(m.homeURL) + "</link>\n")
	b.WriteString("<description>" + esc(m.title) + " on the feed farm</description>\n")
	if !m.updated.IsZero() {
		b.WriteString("<lastBuildDate>" + m.updated.Format(time.RFC1123Z) + "</lastBuildDate>\n")
	}
	b.WriteString(`<atom:link rel="self" type="application/rss+xml" href="` + escAttr(m.feedURL) + `"/>` + "\n")
	if m.hub != "" {
		b.WriteString(`<atom:link rel="hub" href="` + escAttr(m.hub) + `"/>` + "\n")
	}
	_, _ = io.WriteString(w, b.String())
}

func writeRSSItem(w io.Writer, it Item, broken bool) {
	var b strings.Builder
	b.WriteString("<item>\n<title>")
	b.WriteString(esc(it.Title))
	if broken {
		b.WriteString(badUTF8)
	}
	b.WriteString("</title>\n")
	if it.Link != "" {
		b.WriteString("<link>" + esc(it.Link) + "</link>\n")
	}
	b.WriteString(`<guid isPermaLink="false">` + esc(it.ID) + "</guid>\n")
	if !it.Published.IsZero() {
		b.WriteString("<pubDate>" + it.Published.Format(time.RFC1123Z) + "</pubDate>\n")
	}
	b.WriteString("<description>" + esc(it.Content) + "</description>\n</item>\n")
	_, _ = io.WriteString(w, b.String())
}

const rssTail = "</channel>\n</rss>\n"

func writeAtomHead(w io.Writer, m docMeta) {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<feed xmlns="http://www.w3.org/2005/Atom">` + "\n")
	title := esc(m.title)
	if m.broken {
		title += badUTF8
	}
	b.WriteString("<title>" + title + "</title>\n")
	b.WriteString("<id>" + esc(m.feedURL) + "</id>\n")
	updated := m.updated
	if updated.IsZero() {
		updated = time.Unix(0, 0).UTC()
	}
	b.WriteString("<updated>" + updated.Format(time.RFC3339) + "</updated>\n")
	b.WriteString(`<link rel="alternate" type="text/html" href="` + escAttr(m.homeURL) + `"/>` + "\n")
	b.WriteString(`<link rel="self" type="application/atom+xml" href="` + escAttr(m.feedURL) + `"/>` + "\n")
	if m.hub != "" {
		b.WriteString(`<link rel="hub" href="` + escAttr(m.hub) + `"/>` + "\n")
	}
	b.WriteString("<author><name>Feed farm</name></author>\n")
	_, _ = io.WriteString(w, b.String())
}

func writeAtomEntry(w io.Writer, it Item, broken bool, fallback time.Time) {
	var b strings.Builder
	b.WriteString("<entry>\n<title>")
	b.WriteString(esc(it.Title))
	if broken {
		b.WriteString(badUTF8)
	}
	b.WriteString("</title>\n<id>" + esc(it.ID) + "</id>\n")
	if it.Link != "" {
		b.WriteString(`<link rel="alternate" href="` + escAttr(it.Link) + `"/>` + "\n")
	}
	// Atom requires <updated>; an undated item gets the feed's time there
	// and no <published>, which is what dateless Atom looks like in the wild.
	if !it.Published.IsZero() {
		b.WriteString("<published>" + it.Published.Format(time.RFC3339) + "</published>\n")
		b.WriteString("<updated>" + it.Published.Format(time.RFC3339) + "</updated>\n")
	} else {
		if fallback.IsZero() {
			fallback = time.Unix(0, 0).UTC()
		}
		b.WriteString("<updated>" + fallback.Format(time.RFC3339) + "</updated>\n")
	}
	b.WriteString(`<content type="html">` + esc(it.Content) + "</content>\n</entry>\n")
	_, _ = io.WriteString(w, b.String())
}

const atomTail = "</feed>\n"

type jsonHub struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type jsonItem struct {
	ID            string `json:"id"`
	URL           string `json:"url,omitempty"`
	Title         string `json:"title,omitempty"`
	ContentHTML   string `json:"content_html"`
	DatePublished string `json:"date_published,omitempty"`
}

type jsonDoc struct {
	Version     string     `json:"version"`
	Title       string     `json:"title"`
	HomePageURL string     `json:"home_page_url,omitempty"`
	FeedURL     string     `json:"feed_url,omitempty"`
	Hubs        []jsonHub  `json:"hubs,omitempty"`
	Items       []jsonItem `json:"items"`
}

func jsonItemOf(it Item) jsonItem {
	ji := jsonItem{ID: it.ID, URL: it.Link, Title: it.Title, ContentHTML: it.Content}
	if !it.Published.IsZero() {
		ji.DatePublished = it.Published.Format(time.RFC3339)
	}
	return ji
}

// buildDoc appends a whole document to buf.
func buildDoc(buf *bytes.Buffer, format Format, hostile Hostile, m docMeta, items []Item) {
	start := buf.Len()
	switch {
	case hostile == HTMLPage:
		buf.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + esc(m.title) +
			"</title></head>\n<body><h1>" + esc(m.title) + "</h1>\n<p>This is a web page, not a feed.</p>\n<ul>\n")
		for _, it := range items {
			buf.WriteString(`<li><a href="` + escAttr(it.Link) + `">` + esc(it.Title) + "</a></li>\n")
		}
		buf.WriteString("</ul></body></html>\n")
	case hostile == EntityBomb || format == RSS:
		writeRSSHead(buf, m, hostile == EntityBomb)
		for _, it := range items {
			writeRSSItem(buf, it, m.broken)
		}
		buf.WriteString(rssTail)
	case format == Atom:
		writeAtomHead(buf, m)
		for _, it := range items {
			writeAtomEntry(buf, it, m.broken, m.updated)
		}
		buf.WriteString(atomTail)
	default:
		doc := jsonDoc{
			Version: "https://jsonfeed.org/version/1.1", Title: m.title,
			HomePageURL: m.homeURL, FeedURL: m.feedURL, Items: make([]jsonItem, 0, len(items)),
		}
		if m.hub != "" {
			doc.Hubs = []jsonHub{{Type: "WebSub", URL: m.hub}}
		}
		for _, it := range items {
			doc.Items = append(doc.Items, jsonItemOf(it))
		}
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", " ")
		_ = enc.Encode(doc)
		if m.broken {
			// JSON strings must be UTF-8 too: splice the bad bytes into the
			// feed title after encoding (json.Encoder would replace them).
			b := buf.Bytes()[start:]
			key := []byte(`"title": "`)
			if i := bytes.Index(b, key); i >= 0 {
				tail := append([]byte(badUTF8), b[i+len(key):]...)
				buf.Truncate(start + i + len(key))
				buf.Write(tail)
			}
		}
	}
}

// entityBombDTD is the classic "billion laughs": &lol9; expands to 10^9 "lol".
const entityBombDTD = `<!DOCTYPE rss [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
`

// streamHuge writes a document of n generated items without keeping them.
func streamHuge(ctx context.Context, w io.Writer, format Format, m docMeta, n int, gen func(k int) Item) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	switch format {
	case Atom:
		writeAtomHead(bw, m)
	case JSONFeed:
		_, _ = io.WriteString(bw, `{"version":"https://jsonfeed.org/version/1.1","title":`+strconv.Quote(m.title)+
			`,"feed_url":`+strconv.Quote(m.feedURL)+`,"items":[`+"\n")
	default:
		writeRSSHead(bw, m, false)
	}
	for k := n; k >= 1; k-- {
		it := gen(k)
		switch format {
		case Atom:
			writeAtomEntry(bw, it, false, m.updated)
		case JSONFeed:
			b, _ := json.Marshal(jsonItemOf(it))
			_, _ = bw.Write(b)
			if k > 1 {
				_ = bw.WriteByte(',')
			}
			_ = bw.WriteByte('\n')
		default:
			writeRSSItem(bw, it, false)
		}
		if k%512 == 0 {
			// Stop early when the client is gone (a write error is sticky
			// in bufio.Writer; Flush reports it).
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
	switch format {
	case Atom:
		_, _ = io.WriteString(bw, atomTail)
	case JSONFeed:
		_, _ = io.WriteString(bw, "]}\n")
	default:
		_, _ = io.WriteString(bw, rssTail)
	}
	return bw.Flush()
}
