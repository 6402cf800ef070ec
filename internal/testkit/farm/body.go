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

// docWriter is what the document writers write to (*bytes.Buffer,
// *bufio.Writer).
type docWriter interface {
	io.Writer
	io.StringWriter
}

// writeEsc writes s escaped as XML text, the same bytes as esc(s), without
// allocating when nothing needs escaping.
func writeEsc(w docWriter, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\'' || c == '&' || c == '<' || c == '>' {
			_ = xml.EscapeText(w, []byte(s))
			return
		}
	}
	_, _ = w.WriteString(s)
}

// writeAll writes the strings in turn.
func writeAll(w docWriter, ss ...string) {
	for _, s := range ss {
		_, _ = w.WriteString(s)
	}
}

func writeRSSHead(w docWriter, m docMeta, entityBomb bool) {
	writeAll(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	if entityBomb {
		writeAll(w, entityBombDTD)
	}
	writeAll(w, `<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">`+"\n<channel>\n<title>")
	switch {
	case entityBomb:
		writeAll(w, "&lol9;")
	case m.broken:
		writeEsc(w, m.title)
		writeAll(w, badUTF8)
	default:
		writeEsc(w, m.title)
	}
	writeAll(w, "</title>\n<link>")
	writeEsc(w, m.homeURL)
	writeAll(w, "</link>\n<description>")
	writeEsc(w, m.title)
	writeAll(w, " on the feed farm</description>\n")
	if !m.updated.IsZero() {
		writeAll(w, "<lastBuildDate>", m.updated.Format(time.RFC1123Z), "</lastBuildDate>\n")
	}
	writeAll(w, `<atom:link rel="self" type="application/rss+xml" href="`)
	writeEsc(w, m.feedURL)
	writeAll(w, `"/>`+"\n")
	if m.hub != "" {
		writeAll(w, `<atom:link rel="hub" href="`)
		writeEsc(w, m.hub)
		writeAll(w, `"/>`+"\n")
	}
}

func writeRSSItem(w docWriter, it Item, broken bool) {
	writeAll(w, "<item>\n<title>")
	writeEsc(w, it.Title)
	if broken {
		writeAll(w, badUTF8)
	}
	writeAll(w, "</title>\n")
	if it.Link != "" {
		writeAll(w, "<link>")
		writeEsc(w, it.Link)
		writeAll(w, "</link>\n")
	}
	writeAll(w, `<guid isPermaLink="false">`)
	writeEsc(w, it.ID)
	writeAll(w, "</guid>\n")
	if !it.Published.IsZero() {
		writeAll(w, "<pubDate>", it.Published.Format(time.RFC1123Z), "</pubDate>\n")
	}
	writeAll(w, "<description>")
	writeEsc(w, it.Content)
	writeAll(w, "</description>\n</item>\n")
}

const rssTail = "</channel>\n</rss>\n"

func writeAtomHead(w docWriter, m docMeta) {
	writeAll(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n", `<feed xmlns="http://www.w3.org/2005/Atom">`+"\n<title>")
	writeEsc(w, m.title)
	if m.broken {
		writeAll(w, badUTF8)
	}
	writeAll(w, "</title>\n<id>")
	writeEsc(w, m.feedURL)
	writeAll(w, "</id>\n")
	updated := m.updated
	if updated.IsZero() {
		updated = time.Unix(0, 0).UTC()
	}
	writeAll(w, "<updated>", updated.Format(time.RFC3339), "</updated>\n", `<link rel="alternate" type="text/html" href="`)
	writeEsc(w, m.homeURL)
	writeAll(w, `"/>`+"\n", `<link rel="self" type="application/atom+xml" href="`)
	writeEsc(w, m.feedURL)
	writeAll(w, `"/>`+"\n")
	if m.hub != "" {
		writeAll(w, `<link rel="hub" href="`)
		writeEsc(w, m.hub)
		writeAll(w, `"/>`+"\n")
	}
	writeAll(w, "<author><name>Feed farm</name></author>\n")
}

func writeAtomEntry(w docWriter, it Item, broken bool, fallback time.Time) {
	writeAll(w, "<entry>\n<title>")
	writeEsc(w, it.Title)
	if broken {
		writeAll(w, badUTF8)
	}
	writeAll(w, "</title>\n<id>")
	writeEsc(w, it.ID)
	writeAll(w, "</id>\n")
	if it.Link != "" {
		writeAll(w, `<link rel="alternate" href="`)
		writeEsc(w, it.Link)
		writeAll(w, `"/>`+"\n")
	}
	// Atom requires <updated>; an undated item gets the feed's time there
	// and no <published>, which is what dateless Atom looks like in the wild.
	if !it.Published.IsZero() {
		pub := it.Published.Format(time.RFC3339)
		writeAll(w, "<published>", pub, "</published>\n<updated>", pub, "</updated>\n")
	} else {
		if fallback.IsZero() {
			fallback = time.Unix(0, 0).UTC()
		}
		writeAll(w, "<updated>", fallback.Format(time.RFC3339), "</updated>\n")
	}
	writeAll(w, `<content type="html">`)
	writeEsc(w, it.Content)
	writeAll(w, "</content>\n</entry>\n")
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
