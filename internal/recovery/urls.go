package recovery

import (
	"net"
	"net/url"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// parse returns u parsed when it is an absolute http(s) URL, else nil.
func parse(u string) *url.URL {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Hostname() == "" {
		return nil
	}
	p.Scheme = strings.ToLower(p.Scheme)
	p.Host = strings.ToLower(p.Host)
	p.Fragment, p.RawFragment = "", ""
	return p
}

// normURL returns the spelling of u used to tell addresses apart: scheme
// and host lowercased, default port and fragment dropped, "/" for an empty
// path. "" when u is not an absolute http(s) URL.
func normURL(u string) string {
	p := parse(u)
	if p == nil {
		return ""
	}
	if port := p.Port(); (p.Scheme == "http" && port == "80") || (p.Scheme == "https" && port == "443") {
		p.Host = p.Hostname()
	}
	if p.Path == "" {
		p.Path, p.RawPath = "/", ""
	}
	return p.String()
}

// hostOf returns the lowercased host name of u (a URL or a bare host).
func hostOf(u string) string {
	if !strings.Contains(u, "://") {
		h := strings.ToLower(strings.TrimSpace(u))
		if hn, _, err := net.SplitHostPort(h); err == nil {
			return hn
		}
		return h
	}
	if p := parse(u); p != nil {
		return p.Hostname()
	}
	return ""
}

// domainOf returns the registrable domain of host ("blog.example.co.uk" →
// "example.co.uk"); an IP address or a name the public suffix list cannot
// split is its own domain.
func domainOf(host string) string {
	if host == "" {
		return ""
	}
	if net.ParseIP(host) != nil {
		return host
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(strings.TrimSuffix(host, "."))
	if err != nil {
		return host
	}
	return d
}

// origin returns "scheme://host/" of u, or "".
func origin(u string) string {
	p := parse(u)
	if p == nil {
		return ""
	}
	return p.Scheme + "://" + p.Host + "/"
}

// withScheme returns u with its scheme replaced, or "".
func withScheme(u, scheme string) string {
	p := parse(u)
	if p == nil {
		return ""
	}
	p.Scheme = scheme
	return p.String()
}

// toggleWWW returns u with "www." added to or removed from its host, or ""
// when that leaves no registrable name (www.co.uk → co.uk).
func toggleWWW(u string) string {
	p := parse(u)
	if p == nil {
		return ""
	}
	h, port := p.Hostname(), p.Port()
	if rest, ok := strings.CutPrefix(h, "www."); ok {
		h = rest
	} else {
		h = "www." + h
	}
	if _, err := publicsuffix.EffectiveTLDPlusOne(h); err != nil && net.ParseIP(h) == nil {
		return ""
	}
	if port != "" {
		h = net.JoinHostPort(h, port)
	}
	p.Host = h
	return p.String()
}

// dirs returns the folders above u's path, deepest first, without the
// root ("/a/b/c.xml" → "/a/b/", "/a/"), at most two.
func dirs(u string) []string {
	p := parse(u)
	if p == nil {
		return nil
	}
	var out []string
	path := strings.TrimSuffix(p.Path, "/")
	for len(out) < 2 {
		i := strings.LastIndex(path, "/")
		if i <= 0 {
			break
		}
		path = path[:i]
		out = append(out, path+"/")
	}
	return out
}

// resolve returns ref made absolute against base, or "".
func resolve(base, ref string) string {
	b := parse(base)
	r, err := url.Parse(strings.TrimSpace(ref))
	if b == nil || err != nil {
		return ""
	}
	return normURL(b.ResolveReference(r).String())
}

// linkKey is the spelling of a post's link used to match posts: no scheme,
// no "www.", no trailing slash, no fragment, host lowercased.
func linkKey(u string) string {
	p := parse(u)
	if p == nil {
		return ""
	}
	h := strings.TrimPrefix(p.Host, "www.")
	path := strings.TrimSuffix(p.EscapedPath(), "/")
	k := h + path
	if p.RawQuery != "" {
		k += "?" + p.RawQuery
	}
	return k
}
