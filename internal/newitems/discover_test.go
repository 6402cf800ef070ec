package newitems

import (
	"reflect"
	"testing"
)

func TestDiscover(t *testing.T) {
	tests := []struct {
		name string
		page string
		base string
		want []Alternate
	}{
		{
			name: "rss, atom and json feed in document order",
			page: `<!DOCTYPE html><html><head><title>Blog</title>
				<link rel="stylesheet" href="/s.css">
				<link rel="alternate" type="application/atom+xml" title=" Atom  feed " href="/atom.xml">
				<link rel="alternate" type="application/rss+xml" title="RSS" href="rss.xml">
				<link rel="alternate" type="application/feed+json" href="https://cdn.example/feed.json">
				<link rel="alternate" type="application/json" href="/feed.json">
				</head><body></body></html>`,
			base: "https://example.com/blog/",
			want: []Alternate{
				{URL: "https://example.com/atom.xml", Type: "application/atom+xml", Title: "Atom feed"},
				{URL: "https://example.com/blog/rss.xml", Type: "application/rss+xml", Title: "RSS"},
				{URL: "https://cdn.example/feed.json", Type: "application/feed+json"},
				{URL: "https://example.com/feed.json", Type: "application/json"},
			},
		},
		{
			name: "case, rel lists, type parameters, single quotes, unquoted",
			page: `<HTML><HEAD><LINK REL="Alternate Feed" TYPE="Application/RSS+XML; charset=utf-8" HREF='/a'>
				<link rel=alternate type=application/atom+xml href=/b></HEAD>`,
			base: "http://example.com/",
			want: []Alternate{
				{URL: "http://example.com/a", Type: "application/rss+xml"},
				{URL: "http://example.com/b", Type: "application/atom+xml"},
			},
		},
		{
			name: "deduplicated, fragments dropped",
			page: `<head><link rel="alternate" type="application/rss+xml" href="/f">
				<link rel="alternate" type="application/atom+xml" href="https://example.com/f#x"></head>`,
			base: "https://example.com/",
			want: []Alternate{{URL: "https://example.com/f", Type: "application/rss+xml"}},
		},
		{
			name: "base element",
			page: `<head><base href="https://static.example/feeds/"><link rel="alternate" type="application/rss+xml" href="all.rss"></head>`,
			base: "https://example.com/",
			want: []Alternate{{URL: "https://static.example/feeds/all.rss", Type: "application/rss+xml"}},
		},
		{
			name: "feed: scheme",
			page: `<head><link rel="alternate" type="application/rss+xml" href="feed://example.com/a">
				<link rel="alternate" type="application/rss+xml" href="feed:https://example.com/b"></head>`,
			base: "https://example.com/",
			want: []Alternate{
				{URL: "http://example.com/a", Type: "application/rss+xml"},
				{URL: "https://example.com/b", Type: "application/rss+xml"},
			},
		},
		{
			name: "not feeds",
			page: `<head>
				<link rel="alternate" hreflang="de" href="/de/">
				<link rel="alternate" type="text/html" href="/m/">
				<link rel="alternate" type="application/json+oembed" href="/oembed">
				<link rel="alternate" type="application/json" href="/wp-json/wp/v2/posts/1">
				<link rel="feed" type="application/rss+xml" href="/nope">
				<link rel="alternate" type="application/rss+xml" href="javascript:alert(1)">
				<link rel="alternate" type="application/rss+xml" href="">
				<link rel="alternate" type="application/rss+xml">
				</head>`,
			base: "https://example.com/",
			want: nil,
		},
		{
			name: "links after the head are ignored",
			page: `<html><head><link rel="alternate" type="application/rss+xml" href="/in"></head>
				<body><link rel="alternate" type="application/rss+xml" href="/out"></body></html>`,
			base: "https://example.com/",
			want: []Alternate{{URL: "https://example.com/in", Type: "application/rss+xml"}},
		},
		{
			name: "body without head",
			page: `<body><link rel="alternate" type="application/rss+xml" href="/out">`,
			base: "https://example.com/",
			want: nil,
		},
		{
			name: "link text inside script is not a link",
			page: `<head><script>document.write('<link rel="alternate" type="application/rss+xml" href="/js">')</script></head>`,
			base: "https://example.com/",
			want: nil,
		},
		{
			name: "relative href without a base is dropped",
			page: `<head><link rel="alternate" type="application/rss+xml" href="/f"></head>`,
			base: "",
			want: nil,
		},
		{name: "empty page", page: ``, base: "https://example.com/", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Discover([]byte(tt.page), tt.base)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Discover =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestDiscoverHub(t *testing.T) {
	tests := []struct {
		name, page, hub, self string
	}{
		{
			"both",
			`<head><link rel="self" href="/page"><link rel="hub" href="https://hub.example/"><link rel="hub" href="https://second/"></head>`,
			"https://hub.example/", "https://example.com/page",
		},
		{"hub only, upper case", `<HEAD><LINK REL="HUB" HREF="//hub.example/h"></HEAD>`, "https://hub.example/h", ""},
		{"in body: ignored", `<head></head><body><link rel="hub" href="https://hub/"></body>`, "", ""},
		{"none", `<p>hello`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub, self := DiscoverHub([]byte(tt.page), "https://example.com/x")
			if hub != tt.hub || self != tt.self {
				t.Errorf("got %q, %q; want %q, %q", hub, self, tt.hub, tt.self)
			}
		})
	}
}
