package web_test

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/feedmail/feedmail/internal/store"
)

// fzRPCResponse reads what /RPC2 answers: a methodResponse with either the
// weblogs.com struct {flerror, message} or a fault {faultCode, faultString}.
type fzRPCResponse struct {
	XMLName xml.Name `xml:"methodResponse"`
	Params  []struct {
		Members []fzMember `xml:"value>struct>member"`
	} `xml:"params>param"`
	Fault *struct {
		Members []fzMember `xml:"value>struct>member"`
	} `xml:"fault"`
}

type fzMember struct {
	Name  string `xml:"name"`
	Value struct {
		Boolean *string `xml:"boolean"`
		Int     *string `xml:"int"`
		String  *string `xml:"string"`
	} `xml:"value"`
}

func fzMembers(ms []fzMember) map[string]fzMember {
	out := make(map[string]fzMember, len(ms))
	for _, m := range ms {
		out[m.Name] = m
	}
	return out
}

// fzPingFeeds makes the feeds the ping targets look up: followed, not
// followed (a ping must not make it due) and gone (must stay gone).
func fzPingFeeds(e *fzEnv) (followed, lonely, gone *store.Feed) {
	followed = e.feed("https://blog.example/feed.xml", "https://blog.example/", true)
	lonely = e.feed("https://lonely.example/feed.xml", "https://lonely.example/", false)
	gone = e.feed("https://gone.example/feed.xml", "", true)
	if err := e.st.DB.Model(&store.Feed{}).Where("id = ?", gone.ID).Update("state", store.FeedGone).Error; err != nil {
		e.tb.Fatal(err)
	}
	return followed, lonely, gone
}

// fzPingInvariants: a ping never ends, revives or schedules a feed it must
// not touch.
func fzPingInvariants(t *testing.T, e *fzEnv, lonely, gone *store.Feed) {
	t.Helper()
	l, err := e.st.FeedByID(e.ctx, lonely.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !l.NextPollAt.Equal(lonely.NextPollAt) || l.State != store.FeedActive {
		t.Fatalf("a ping changed the unfollowed feed: next poll %v → %v, state %s", lonely.NextPollAt, l.NextPollAt, l.State)
	}
	g, err := e.st.FeedByID(e.ctx, gone.ID)
	if err != nil {
		t.Fatal(err)
	}
	if g.State != store.FeedGone {
		t.Fatalf("a ping revived a gone feed: state %s", g.State)
	}
}

const fzPingCall = `<?xml version="1.0"?>
<methodCall><methodName>weblogUpdates.ping</methodName><params>
<param><value>A blog</value></param><param><value><string>https://blog.example/</string></value></param>
</params></methodCall>`

// FuzzRPC2 posts arbitrary bodies to /RPC2 (XML-RPC weblogUpdates.ping and
// extendedPing) through the whole handler chain. The answer is always 200
// text/xml, well-formed UTF-8, and exactly one of a {flerror, message}
// struct or a fault with one of the five interoperability fault codes; no
// body makes feedmail schedule a feed nobody follows or revive a gone one.
func FuzzRPC2(f *testing.F) {
	e := newFzEnv(f)
	_, lonely, gone := fzPingFeeds(e)
	for _, s := range []string{
		fzPingCall,
		strings.Replace(fzPingCall, "https://blog.example/", "https://blog.example", 1),
		`<methodCall><methodName>weblogUpdates.extendedPing</methodName><params><param><value>B</value></param>` +
			`<param><value>https://unknown.example/</value></param><param><value>https://unknown.example/changes</value></param>` +
			`<param><value>https://blog.example/feed.xml</value></param><param><value>tag1|tag2</value></param></params></methodCall>`,
		strings.Replace(fzPingCall, "https://blog.example/", "https://lonely.example/feed.xml", 1),
		strings.Replace(fzPingCall, "https://blog.example/", "https://gone.example/feed.xml", 1),
		strings.Replace(fzPingCall, "weblogUpdates.ping", "system.listMethods", 1),
		`<methodCall><methodName>weblogUpdates.ping</methodName><params><param><value><int>4</int></value></param>` +
			`<param><value><struct/></value></param></params></methodCall>`,
		`<methodCall><methodName>weblogUpdates.ping</methodName></methodCall>`,
		`<methodResponse/>`,
		`<?xml version="1.0" encoding="ISO-8859-1"?><methodCall><methodName>weblogUpdates.ping</methodName></methodCall>`,
		`<!DOCTYPE m [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><methodCall><methodName>&b;</methodName></methodCall>`,
		`<methodCall><methodName><![CDATA[weblogUpdates.ping]]></methodName><params><param><value>x</value></param>` +
			`<param><value>https://blog.example/feed.xml&#x20;</value></param></params></methodCall>`,
		strings.Repeat("<a>", 500),
		"", "\xff\xfe<\x00m\x00", "<methodCall>\x80</methodCall>",
	} {
		f.Add([]byte(s))
	}
	faults := map[string]bool{"-32700": true, "-32600": true, "-32601": true, "-32602": true, "-32603": true}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/RPC2", bytes.NewReader(body))
		req.Header.Set("Content-Type", "text/xml")
		code, hdr, out := e.serve(req)
		if code != http.StatusOK || hdr.Get("Content-Type") != "text/xml; charset=utf-8" {
			t.Fatalf("%d %q: %s", code, hdr.Get("Content-Type"), out)
		}
		if !utf8.Valid(out) {
			t.Fatalf("answer is not UTF-8: %q", out)
		}
		var resp fzRPCResponse
		d := xml.NewDecoder(bytes.NewReader(out))
		d.Strict = true
		if err := d.Decode(&resp); err != nil {
			t.Fatalf("answer is not a methodResponse: %v\n%s", err, out)
		}
		switch {
		case resp.Fault != nil && len(resp.Params) == 0:
			m := fzMembers(resp.Fault.Members)
			if c := m["faultCode"].Value.Int; c == nil || !faults[*c] {
				t.Fatalf("fault code %v: %s", c, out)
			}
			if s := m["faultString"].Value.String; s == nil || *s == "" {
				t.Fatalf("fault without a faultString: %s", out)
			}
		case resp.Fault == nil && len(resp.Params) == 1:
			m := fzMembers(resp.Params[0].Members)
			if b := m["flerror"].Value.Boolean; b == nil || (*b != "0" && *b != "1") {
				t.Fatalf("flerror %v: %s", b, out)
			}
			if s := m["message"].Value.String; s == nil || *s == "" {
				t.Fatalf("no message: %s", out)
			}
		default:
			t.Fatalf("neither one fault nor one params: %s", out)
		}
		fzPingInvariants(t, e, lonely, gone)
	})
}

// FuzzPing sends arbitrary url values to GET and POST /ping. The status is
// 200 exactly when the URL (trimmed; a home page with or without its
// trailing slash) names a followed, active feed by its URL or site URL,
// and otherwise 400, 404 or 410 — never 5xx; the answer is plain text.
func FuzzPing(f *testing.F) {
	e := newFzEnv(f)
	followed, lonely, gone := fzPingFeeds(e)
	for _, s := range []string{
		followed.URL, " " + followed.URL + "\t", "https://blog.example", "https://blog.example/", "HTTPS://blog.example/",
		lonely.URL, gone.URL, "https://unknown.example/", "ftp://blog.example/", "javascript:alert(1)", "//blog.example/",
		"https://blog.example/feed.xml?x=1", "https://blog.example/#", "http://[::1", "",
		"https://" + strings.Repeat("a", 2100) + ".example/",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	okSet := map[string]bool{followed.URL: true, followed.SiteURL: true}
	f.Fuzz(func(t *testing.T, raw string, post bool) {
		var req *http.Request
		if post {
			req = httptest.NewRequest(http.MethodPost, "/ping", strings.NewReader(url.Values{"url": {raw}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req = httptest.NewRequest(http.MethodGet, "/ping?url="+url.QueryEscape(raw), nil)
		}
		code, hdr, out := e.serve(req)
		if !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") || len(out) == 0 {
			t.Fatalf("%d %q %q", code, hdr.Get("Content-Type"), out)
		}
		tr := strings.TrimSpace(raw)
		names := okSet[tr] || okSet[tr+"/"] || okSet[strings.TrimSuffix(tr, "/")]
		exact := okSet[tr] && len(tr) <= 2048
		switch code {
		case http.StatusOK:
			if !names {
				t.Fatalf("200 for %q, which names no followed feed: %s", raw, out)
			}
		case http.StatusBadRequest, http.StatusNotFound, http.StatusGone:
			if exact {
				t.Fatalf("%d for the followed feed's own URL %q: %s", code, raw, out)
			}
		default:
			t.Fatalf("status %d for %q: %s", code, raw, out)
		}
		fzPingInvariants(t, e, lonely, gone)
	})
}
