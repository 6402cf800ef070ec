package mailer

import (
	"strings"
	"testing"
)

func TestResolveRelativeURLs(t *testing.T) {
	const base = "https://blog.example.com/posts/2026/hello.html"
	tests := []struct {
		name, in string
		want     []string // substrings of the sanitized HTML
		notWant  []string
	}{
		{"href relative to the item", `<a href="other.html">x</a>`, []string{`href="https://blog.example.com/posts/2026/other.html"`}, nil},
		{"href root-relative", `<a href="/about">x</a>`, []string{`href="https://blog.example.com/about"`}, nil},
		{"href parent", `<a href="../index.html">x</a>`, []string{`href="https://blog.example.com/posts/index.html"`}, nil},
		{"href fragment", `<a href="#note-1">1</a>`, []string{`href="https://blog.example.com/posts/2026/hello.html#note-1"`}, nil},
		{"href query", `<a href="?page=2">2</a>`, []string{`href="https://blog.example.com/posts/2026/hello.html?page=2"`}, nil},
		{"protocol-relative", `<img src="//cdn.example.net/a.png">`, []string{`src="https://cdn.example.net/a.png"`}, nil},
		{"img src", `<img src="img/cat.jpg" alt="cat">`, []string{`src="https://blog.example.com/posts/2026/img/cat.jpg"`}, nil},
		{"white space around", `<a href="  /x  ">x</a>`, []string{`href="https://blog.example.com/x"`}, nil},
		{"absolute untouched", `<a href="https://other.example.org/p?q=1&amp;r=2">x</a>`, []string{`href="https://other.example.org/p?q=1&amp;r=2"`}, nil},
		{"mailto kept", `<a href="mailto:ann@example.com">mail</a>`, []string{`href="mailto:ann@example.com"`}, nil},
		{"entity in relative URL", `<a href="/a?x=1&amp;y=2">x</a>`, []string{`href="https://blog.example.com/a?x=1&amp;y=2"`}, nil},
		{"javascript stays out", `<a href="javascript:alert(1)">x</a>`, []string{"x"}, []string{"javascript", "<a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PrepareHTML(tc.in, base).HTML
			wantContains(t, got, tc.want, tc.notWant)
		})
	}
}

func TestResolveSrcset(t *testing.T) {
	b := mustURL(t, "https://blog.example.com/p/")
	got, ok := resolveSrcset(b, "a.jpg 1x, /b.jpg 2x,https://c.example/c.jpg 3x, d,e.jpg 640w")
	want := "https://blog.example.com/p/a.jpg 1x, https://blog.example.com/b.jpg 2x, https://c.example/c.jpg 3x, https://blog.example.com/p/d,e.jpg 640w"
	if !ok || got != want {
		t.Errorf("resolveSrcset = %q, %v\nwant %q", got, ok, want)
	}
	// The resolver rewrites srcset attributes (the sanitizer then drops
	// srcset: only src is allowed on images).
	out, _ := resolveURLs(`<img srcset="a.jpg 1x, b.jpg 2x" src="a.jpg">`, b, true)
	if !strings.Contains(out, `srcset="https://blog.example.com/p/a.jpg 1x, https://blog.example.com/p/b.jpg 2x"`) {
		t.Errorf("resolveURLs = %s", out)
	}
}

func TestNoBaseDropsRelative(t *testing.T) {
	got := PrepareHTML(`<p><a href="/x">link text</a><img src="a.png" alt="pic"></p>`, "").HTML
	if strings.Contains(got, "href") || strings.Contains(got, "<img") {
		t.Errorf("relative URLs survived without a base: %s", got)
	}
	if !strings.Contains(got, "link text") || !strings.Contains(got, "pic") {
		t.Errorf("link text lost: %s", got)
	}
}

func TestSanitize(t *testing.T) {
	const base = "https://blog.example.com/post"
	tests := []struct {
		name, in string
		want     []string
		notWant  []string
	}{
		{"script element", `<p>a</p><script>alert(1)</script><SCRIPT SRC=//x.example/x.js></SCRIPT>`, []string{"<p>a</p>"}, []string{"script", "alert", "SCRIPT"}},
		{"event handlers", `<img src="/a.png" onerror="alert(1)" OnLoad=x><p onclick="x()">t</p>`, []string{"<p>t</p>"}, []string{"onerror", "OnLoad", "onclick", "alert"}},
		{"javascript URL case", `<a href="JaVaScRiPt:alert(1)">x</a>`, []string{"x"}, []string{"alert", "<a"}},
		{"javascript URL entity", `<a href="jav&#x09;ascript:alert(1)">x</a><a href="&#106;avascript:alert(2)">y</a>`, nil, []string{"alert", "href"}},
		{"javascript URL space", `<a href=" javascript:alert(1)">x</a><a href="java
script:alert(2)">y</a>`, nil, []string{"alert", "href"}},
		{"vbscript", `<a href="vbscript:msgbox(1)">x</a>`, nil, []string{"vbscript", "href"}},
		{"data image", `<img src="data:image/png;base64,iVBORw0KGgo=" alt="the alt">`, []string{"the alt"}, []string{"data:", "<img"}},
		{"data svg", `<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">`, nil, []string{"data:", "<img"}},
		{"style element", `<style>body{display:none}</style><p>t</p>`, []string{"<p>t</p>"}, []string{"<style", "display:none"}},
		{"style attribute", `<p style="position:fixed;top:0;background:url(javascript:x)">t</p>`, []string{">t</p>"}, []string{"position", "url("}},
		{"text-align kept", `<p style="text-align: center">t</p>`, []string{`style="text-align: center"`}, nil},
		{"form", `<form action="https://evil.example/"><input name=q><button>go</button></form><p>t</p>`, []string{"<p>t</p>"}, []string{"<form", "<input", "<button"}},
		{"iframe becomes a link", `<iframe src="https://www.youtube.com/embed/abc" width="560"></iframe>`, []string{`href="https://www.youtube.com/embed/abc"`, "Embedded content: https://www.youtube.com/embed/abc"}, []string{"<iframe"}},
		{"iframe javascript no link", `<iframe src="javascript:alert(1)"></iframe>`, nil, []string{"<iframe", "alert", "Embedded"}},
		{"video becomes a link", `<video src="/v.mp4" poster="/p.jpg">Your reader cannot play this.</video>`, []string{`href="https://blog.example.com/v.mp4"`, "Video: https://blog.example.com/v.mp4", "Your reader cannot play this."}, []string{"<video"}},
		{"object fallback kept", `safe<object data="https://x.example/f.swf">fallback text</object> end`, []string{"fallback text", "end", "Embedded content: https://x.example/f.swf"}, []string{"<object"}},
		{"meta, link and base", `<meta http-equiv="refresh" content="0;url=https://evil.example/"><link rel=stylesheet href=x.css><base href="https://evil.example/"><p>t</p>`, []string{"<p>t</p>"}, []string{"<meta", "<link", "<base", "refresh"}},
		{"comments", `<!-- secret --><p>t</p><!--[if IE]><script>x</script><![endif]-->`, []string{"<p>t</p>"}, []string{"secret", "<!--", "script"}},
		{"class and id", `<p class="x" id="y">t</p>`, []string{`id="y"`}, []string{"class"}},
		{"links get rel, target and colour", `<a href="https://x.example/">x</a>`, []string{`style="color:#0969da;"`, `href="https://x.example/"`, `rel="noreferrer noopener"`, `target="_blank"`}, nil},
		{"img styled", `<img src="/a.png" width="2000" height="1000">`, []string{`<img style="max-width:100%;height:auto;border:0;" src="https://blog.example.com/a.png"`}, nil},
		{"pre and blockquote styled", `<pre>x</pre><blockquote>q</blockquote>`, []string{`<pre style="white-space:pre-wrap;`, `<blockquote style="margin:16px 0;`}, nil},
		{"svg", `<svg onload="alert(1)"><circle r="1"/></svg>`, nil, []string{"svg", "alert", "circle"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PrepareHTML(tc.in, base).HTML
			wantContains(t, got, tc.want, tc.notWant)
			if bad := unsafeHTML(got); len(bad) > 0 {
				t.Errorf("unsafe: %v", bad)
			}
		})
	}
}

func TestHTMLToTextGolden(t *testing.T) {
	in := `<h2>A &amp; B</h2>
<p>First   paragraph
with <b>bold</b>, <a href="https://example.com/x">a link</a>, <a href="https://example.com/">https://example.com/</a>
and <a href="mailto:ann@example.com">ann@example.com</a>.<br>Second line.</p>
<ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>
<ol><li>first</li><li>second</li></ol>
<blockquote><p>Quoted.</p><p>Still quoted.</p></blockquote>
<pre>  code
    indented</pre>
<p><img src="https://example.com/a.png" alt="A chart"> <a href="https://example.com/big.png"><img src="https://example.com/small.png"></a></p>
<hr>
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
<p>&lt;not a tag&gt; &copy; 2026&nbsp;Ann</p>`
	want := `A & B

First paragraph with bold, a link <https://example.com/x>, https://example.com/ and ann@example.com.
Second line.

- one
- two
  - nested

1. first
2. second

> Quoted.
>
> Still quoted.

  code
    indented

[A chart] https://example.com/big.png

----

k | v
a | 1

<not a tag> © 2026 Ann`
	if got := HTMLToText(in); got != want {
		t.Errorf("HTMLToText:\n%s\n---- want:\n%s", got, want)
	}
}

func TestPlainTitle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Plain title", "Plain title"},
		{"Tom &amp; Jerry", "Tom & Jerry"},
		{"<b>Bold</b> move", "Bold move"},
		{"a<b matters", "a<b matters"},
		{"x < y > z", "x < y > z"},
		{`safe<script>alert(1)</script> title`, "safe title"},
	}
	for _, tc := range tests {
		if got := plainTitle(tc.in); got != tc.want {
			t.Errorf("plainTitle(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// wantContains fails t unless got contains every string of want and none
// of notWant.
func wantContains(t *testing.T, got string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("got %s\nwant it to contain %s", got, w)
		}
	}
	for _, w := range notWant {
		if strings.Contains(got, w) {
			t.Errorf("got %s\nwant no %s", got, w)
		}
	}
}
