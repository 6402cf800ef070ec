package mailer

import (
	"net/url"
	"strconv"
	"strings"

	nethtml "golang.org/x/net/html"
)

// trackerImages are the image sources that exist only to count readers or
// show ads: a mail client that loads one tells its owner the email was
// opened. A rule matches a host and its subdomains, and with a path prefix
// only URLs under it. The list is short on purpose and documented in
// docs/design.md (Email); size-based detection (trackingPixel) catches
// the anonymous counters.
var trackerImages = []struct{ host, path string }{
	// FeedBurner (feeds.feedburner.com, feeds2.…, and its other host
	// feedproxy.google.com): the open counter (1×1), FeedFlare buttons
	// (the old /~f/ and the later /~ff/) and ads.
	{"feedburner.com", "/~r/"},
	{"feedburner.com", "/~f/"},
	{"feedburner.com", "/~ff/"},
	{"feedburner.com", "/~a/"},
	{"feedproxy.google.com", "/~r/"},
	{"feedproxy.google.com", "/~f/"},
	{"feedproxy.google.com", "/~ff/"},
	{"feedproxy.google.com", "/~a/"},
	{"feeds.wordpress.com", "/1.0/"}, // WordPress.com comment/share buttons
	{"pixel.wp.com", ""},             // WordPress.com stats
	{"stats.wordpress.com", ""},      // WordPress.com stats
	{"doubleclick.net", ""},          // ad.doubleclick.net, ad.*.doubleclick.net
	{"googlesyndication.com", ""},    // pagead2.googlesyndication.com
	{"google-analytics.com", ""},     // __utm.gif and collect
}

// isTrackerURL reports whether src is an image URL of trackerImages.
func isTrackerURL(src string) bool {
	u, err := url.Parse(strings.TrimSpace(src))
	if err != nil || u.Host == "" {
		return false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, r := range trackerImages {
		if (host == r.host || strings.HasSuffix(host, "."+r.host)) && strings.HasPrefix(u.EscapedPath(), r.path) {
			return true
		}
	}
	return false
}

// trackingPixel reports whether an <img> tag is a tracking pixel: every
// size it gives (width and height attributes, or the same in its style) is
// at most 2 pixels — 1×1 and 0×0 counters, or an image whose only size is
// tiny — or it is hidden with display:none, or its source is a known
// tracker (trackerImages). An image that gives no size at all is kept:
// real images often give none.
func trackingPixel(tok nethtml.Token) bool {
	if isTrackerURL(attr(tok, "src")) {
		return true
	}
	w, h := attr(tok, "width"), attr(tok, "height")
	style := strings.ToLower(attr(tok, "style"))
	for _, decl := range strings.Split(style, ";") {
		k, v, ok := strings.Cut(decl, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "!important"))
		switch k {
		case "width":
			w = v
		case "height":
			h = v
		case "display":
			if v == "none" {
				return true
			}
		case "visibility":
			if v == "hidden" {
				return true
			}
		}
	}
	sizes := 0
	for _, s := range []string{w, h} {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		n, ok := pixels(s)
		if !ok {
			return false // a size we cannot read (50%, auto): not a pixel
		}
		if n > 2 {
			return false
		}
		sizes++
	}
	return sizes > 0
}

// pixels reads a length in CSS pixels: "1", "1px", "0.5", "1.0px".
func pixels(s string) (float64, bool) {
	s = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "px")
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
