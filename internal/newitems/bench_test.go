package newitems

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchFeed builds an RSS 2.0 feed of n items with about 2 KB of HTML
// content each.
func benchFeed(n int) []byte {
	para := "<p>" + strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 7) + "</p>\n"
	content := strings.Repeat(para, 5) // ≈ 2 KB
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:content="http://purl.org/rss/1.0/modules/content/">
<channel><title>Benchmark</title><link>https://example.com/</link>
<atom:link rel="self" href="https://example.com/feed.xml"/><atom:link rel="hub" href="https://hub.example/"/>
`)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		fmt.Fprintf(&b, `<item><title>Post number %d</title><link>https://example.com/posts/%d</link>
<guid>https://example.com/posts/%d</guid><pubDate>%s</pubDate>
<description>Summary of post %d</description>
<content:encoded><![CDATA[%s]]></content:encoded></item>
`, i, i, i, start.Add(-time.Duration(i)*time.Hour).Format(time.RFC1123Z), i, content)
	}
	b.WriteString("</channel></rss>\n")
	return []byte(b.String())
}

// BenchmarkParse20Items parses an RSS feed of 20 items with ≈2 KB of
// content each (≈50 KB), Decode included, and reports feeds per second.
func BenchmarkParse20Items(b *testing.B) {
	body := benchFeed(20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		f, err := Parse(body, "application/rss+xml", "https://example.com/feed.xml")
		if err != nil || len(f.Items) != 20 {
			b.Fatalf("Parse: %v", err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "feeds/s")
}

func TestBenchFeed(t *testing.T) {
	body := benchFeed(20)
	f, err := Parse(body, "", "https://example.com/feed.xml")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Items) != 20 || f.HubURL != "https://hub.example/" || len(f.Items[0].ContentHTML) < 1800 || len(f.Items[0].ContentHTML) > 2300 {
		t.Errorf("%d items, hub %q, content %d bytes", len(f.Items), f.HubURL, len(f.Items[0].ContentHTML))
	}
}
