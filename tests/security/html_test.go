package security

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"net/textproto"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// unsafeHTML lists what in doc could run script, load active content, send
// a form, or navigate somewhere by itself: script/style/iframe/object/
// embed/applet/frame/svg/math/base elements, meta refresh, event-handler
// attributes, URLs that are not http(s)/mailto (javascript:, vbscript:,
// data:, after removing the whitespace and control characters browsers
// ignore), and CSS expressions, bindings or script URLs in style
// attributes. page relaxes it for feedmail's own pages: relative URLs,
// scripts from /static/ and same-site forms are ours.
func unsafeHTML(doc string, page bool) []string {
	var bad []string
	z := html.NewTokenizer(strings.NewReader(doc))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return bad
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		name := tok.Data
		attr := map[string]string{}
		for _, a := range tok.Attr {
			attr[strings.ToLower(a.Key)] = a.Val
			k := strings.ToLower(a.Key)
			if strings.HasPrefix(k, "on") {
				bad = append(bad, "<"+name+"> has event handler "+k+"="+a.Val)
			}
			switch k {
			case "href", "src", "action", "formaction", "xlink:href", "background", "poster", "cite", "data", "lowsrc", "dynsrc":
				if why := unsafeURL(a.Val, page); why != "" {
					bad = append(bad, "<"+name+" "+k+"="+a.Val+">: "+why)
				}
			case "srcset":
				for cand := range strings.SplitSeq(a.Val, ",") {
					if f := strings.Fields(cand); len(f) > 0 {
						if why := unsafeURL(f[0], page); why != "" {
							bad = append(bad, "<"+name+" srcset>: "+why)
						}
					}
				}
			case "style":
				s := strings.ToLower(squeeze(a.Val))
				for _, w := range []string{"expression(", "javascript:", "vbscript:", "behavior:", "-moz-binding", "url(data:", "@import"} {
					if strings.Contains(s, w) {
						bad = append(bad, "<"+name+"> style has "+w)
					}
				}
			case "http-equiv":
				if strings.EqualFold(strings.TrimSpace(a.Val), "refresh") {
					bad = append(bad, "<meta http-equiv=refresh>")
				}
			}
		}
		switch name {
		case "script":
			if !page || !strings.HasPrefix(attr["src"], "/static/") {
				bad = append(bad, "<script> element")
			}
		case "iframe":
			if !page || !previewFrame(attr) {
				bad = append(bad, "<iframe> element")
			}
		case "style", "frame", "frameset", "object", "embed", "applet", "svg", "math", "base", "portal":
			bad = append(bad, "<"+name+"> element")
		case "form", "input", "button", "textarea", "select":
			if !page {
				bad = append(bad, "<"+name+"> element in an email")
			}
		case "link":
			if !page || !strings.HasPrefix(attr["href"], "/static/") {
				bad = append(bad, "<link> element")
			}
		}
	}
}

// previewFrame reports whether a page's <iframe> is feedmail's own email
// preview: sandboxed with neither scripts nor the page's origin, and
// showing a page of feedmail's (/preview) or nothing yet.
func previewFrame(attr map[string]string) bool {
	sb, ok := attr["sandbox"]
	if !ok || strings.Contains(sb, "allow-scripts") || strings.Contains(sb, "allow-same-origin") {
		return false
	}
	src, has := attr["src"]
	return !has || strings.HasPrefix(src, "/preview?")
}

// squeeze drops whitespace and control characters, as browsers do inside
// URL schemes ("java\tscript:").
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

func unsafeURL(raw string, page bool) string {
	u := strings.ToLower(squeeze(raw))
	switch {
	case u == "":
		return ""
	case strings.HasPrefix(u, "http://"), strings.HasPrefix(u, "https://"), strings.HasPrefix(u, "mailto:"):
		return ""
	case strings.HasPrefix(u, "#"): // an anchor in the same document
		return ""
	case page && (strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//") || strings.HasPrefix(u, "?")):
		return ""
	case strings.HasPrefix(u, "javascript:"), strings.HasPrefix(u, "vbscript:"), strings.HasPrefix(u, "data:"):
		return "script-capable URL scheme"
	}
	return "URL that is neither http(s) nor mailto"
}

// parsedMail is a received message: its raw header block, parsed header,
// and decoded text and HTML parts.
type parsedMail struct {
	rawHeader string
	header    netmail.Header
	text      string
	html      string
}

func parseMail(t *testing.T, raw []byte) parsedMail {
	t.Helper()
	var pm parsedMail
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
		pm.rawHeader = string(raw[:i+2])
	}
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("unparsable message: %v\n%s", err, raw)
	}
	pm.header = msg.Header
	walkParts(t, msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body, &pm)
	return pm
}

func walkParts(t *testing.T, ctype, cte string, body io.Reader, pm *parsedMail) {
	t.Helper()
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		t.Fatalf("bad Content-Type %q: %v", ctype, err)
	}
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			walkParts(t, p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p, pm)
		}
	}
	if strings.EqualFold(cte, "base64") {
		body = base64.NewDecoder(base64.StdEncoding, body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	switch mt {
	case "text/plain":
		pm.text += string(b)
	case "text/html":
		pm.html += string(b)
	}
}

var headerLine = regexp.MustCompile(`^(?:[A-Za-z0-9-]+: |[ \t])`)

// injectedHeaders reports header lines that are not well formed and any
// header named in forbidden.
func injectedHeaders(pm parsedMail, forbidden ...string) []string {
	var bad []string
	for _, line := range strings.Split(strings.TrimSuffix(pm.rawHeader, "\r\n"), "\r\n") {
		if !headerLine.MatchString(line) || strings.ContainsAny(line, "\r\n\x00") {
			bad = append(bad, "malformed header line "+line)
		}
	}
	for _, name := range forbidden {
		if v, ok := pm.header[textproto.CanonicalMIMEHeaderKey(name)]; ok {
			bad = append(bad, "injected header "+name+": "+strings.Join(v, ", "))
		}
	}
	return bad
}
