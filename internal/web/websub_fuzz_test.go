package web_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/websub"
)

// fzSecret is the WebSub secret of the fuzzed feed.
const fzSecret = "websub-fuzz-secret-abcdef0123456789"

// fzAuthentic is an independent oracle for X-Hub-Signature: the header is
// "method=hex" with one of the four WebSub methods (any case, spaces
// around), and hex is the HMAC of body under the secret (any case).
func fzAuthentic(header string, body []byte) bool {
	method, sig, ok := strings.Cut(strings.TrimSpace(header), "=")
	if !ok {
		return false
	}
	var h func() hash.Hash
	switch strings.ToLower(strings.TrimSpace(method)) {
	case "sha1":
		h = sha1.New
	case "sha256":
		h = sha256.New
	case "sha384":
		h = sha512.New384
	case "sha512":
		h = sha512.New
	default:
		return false
	}
	m := hmac.New(h, []byte(fzSecret))
	m.Write(body)
	return strings.EqualFold(strings.TrimSpace(sig), hex.EncodeToString(m.Sum(nil)))
}

// FuzzWebSubCallback drives GET and POST /websub/{token} (verification of
// intent and signed content distribution) through the whole handler chain
// with a fuzzed token, query, body, signature and Content-Type. mode picks
// the callback token (genuine, genuine for a feed that does not exist,
// fuzzed, or a genuine token of another purpose) and whether the signature
// is made right (as a hub would) or left as fuzzed.
//
// Properties: no 5xx; a GET answers 200, 400 or 404, and 200 to a
// subscribe or unsubscribe only with the genuine token and the exact topic,
// echoing hub.challenge as the body; a POST answers 202, 400, 410 or 413,
// and pushed content reaches Ingest exactly when the token is genuine and
// the signature is the HMAC of the body under the feed's secret, with the
// body unchanged.
func FuzzWebSubCallback(f *testing.F) {
	e := newFzEnv(f)
	fd := e.feed("https://hubbed.example/feed.xml", "", true)
	pending := func() {
		to := store.WebSubFields{Hub: "https://hub.example/", Topic: fd.URL, State: store.WebSubStatePending,
			Secret: fzSecret, RenewAt: ptrTime(fzT0.Add(time.Hour))}
		cur, err := e.st.FeedByID(e.ctx, fd.ID)
		if err != nil {
			f.Fatal(err)
		}
		if ok, err := e.st.SetWebSub(e.ctx, fd.ID, cur.WebSub(), to, time.Time{}, ""); err != nil || !ok {
			f.Fatalf("set websub: %v %v", ok, err)
		}
	}
	pending()
	genuine := strings.TrimPrefix(e.links.WebSubCallback(fd.ID, fzSecret), "http://feedmail.test/websub/")
	missing := strings.TrimPrefix(e.links.WebSubCallback(fd.ID+1000, fzSecret), "http://feedmail.test/websub/")
	otherPurpose := e.tok.Sign("unsubscribe", fd.ID, time.Time{})
	atom := `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>` +
		`<id>urn:x</id><updated>2026-03-02T10:00:00Z</updated><entry><title>E</title><id>urn:e</id>` +
		`<updated>2026-03-02T10:00:00Z</updated></entry></feed>`
	q := func(mode, topic, challenge, lease string) string {
		v := url.Values{"hub.mode": {mode}, "hub.topic": {topic}, "hub.challenge": {challenge}}
		if lease != "" {
			v.Set("hub.lease_seconds", lease)
		}
		return v.Encode()
	}
	seeds := []struct {
		tok, query, body, sig, ct string
		mode                      uint8
	}{
		{"", q("subscribe", fd.URL, "c-1", "3600"), atom, "", "application/atom+xml", 1},
		{"", q("unsubscribe", fd.URL, "c-2", ""), atom, "sha256=00", "application/atom+xml", 0},
		{"", q("denied", fd.URL, "", "") + "&hub.reason=nope", atom, "sha1=", "", 1},
		{"", q("subscribe", fd.URL+"/other", "c-3", "-5"), "", "sha512=zz", "text/plain", 0},
		{"", "hub.mode=subscribe&hub.topic=" + url.QueryEscape(fd.URL) + "&hub.challenge=%00%ff", "x", "SHA384 = ab", "", 0},
		{"AQUB", q("subscribe", fd.URL, "c-4", "99999999999999999999"), atom, "md5=abc", "", 2},
		{"", q("subscribe", fd.URL, "c-5", "1"), atom, "", "application/atom+xml", 3},
		{"", q("subscribe", fd.URL, "c-6", "1"), atom, "", "", 4},
		{"", "%zz=1&hub.mode", atom, "sha256", "", 5},
		{".", "0", "0", "0", "0", 110}, // "/websub/." is redirected by ServeMux before any handler
		{"a/b", q("subscribe", fd.URL, "c-7", ""), atom, "", "", 2},
		{"/", "0", "0", "0", "0", 92}, // "/websub//": no route, the mux's own 404

	}
	for _, s := range seeds {
		f.Add(s.tok, s.query, []byte(s.body), s.sig, s.ct, s.mode)
	}
	f.Fuzz(func(t *testing.T, tok, rawQuery string, body []byte, sig, ct string, mode uint8) {
		pending() // every input starts from a subscription we asked for
		e.takePushed()
		seg := genuine
		isGenuine := true
		switch mode % 6 {
		case 2:
			seg, isGenuine = url.PathEscape(tok), tok == genuine
		case 3:
			seg, isGenuine = missing, false
		case 4:
			seg, isGenuine = otherPurpose, false
		}
		if seg == "" {
			seg = "x"
		}
		if mode%6 == 1 || mode%6 == 5 {
			methods := []string{"sha1", "sha256", "sha384", "sha512"}
			var err error
			if sig, err = websub.Sign([]byte(fzSecret), methods[int(mode/6)%4], body); err != nil {
				t.Fatal(err)
			}
			if mode%6 == 5 {
				sig = strings.ToUpper(sig) // method and hex in capitals: still authentic
			}
		}

		// Verification of intent.
		req := httptest.NewRequest(http.MethodGet, "/websub/x", nil)
		req.URL.Path, req.URL.RawPath, req.URL.RawQuery = "/websub/"+seg, "", rawQuery
		if up, err := url.PathUnescape(seg); err == nil {
			req.URL.Path, req.URL.RawPath = "/websub/"+up, "/websub/"+seg
		}
		// A token of "." or ".." or with a "/" makes a path ServeMux cleans
		// with a redirect before any handler runs: nothing to check there
		// beyond "not accepted".
		unclean := path.Clean(req.URL.Path) != req.URL.Path
		code, hdr, out := e.serve(req)
		qv, _ := url.ParseQuery(rawQuery)
		if unclean && (code == http.StatusNotFound || code >= 300 && code < 400) {
			// Refused by the mux (redirect or no route): no handler ran.
			code = http.StatusNotFound
			hdr.Set("Cache-Control", "no-store")
		}
		switch code {
		case http.StatusOK:
			// Only our own callback, for the topic we asked for, and for
			// the mode we asked for (subscribe) or a denial of it.
			m := qv.Get("hub.mode")
			if !isGenuine {
				t.Fatalf("GET answered 200 to a callback token that is not ours (%q): %q", seg, out)
			}
			if qv.Get("hub.topic") != fd.URL || (m != "subscribe" && m != "denied") {
				t.Fatalf("GET 200 for mode %q topic %q", m, qv.Get("hub.topic"))
			}
			if m == "subscribe" && string(out) != qv.Get("hub.challenge") {
				t.Fatalf("GET 200: body %q, challenge %q", out, qv.Get("hub.challenge"))
			}
		case http.StatusBadRequest, http.StatusNotFound:
		default:
			t.Fatalf("GET answered %d: %s", code, out)
		}
		if hdr.Get("Cache-Control") != "no-store" {
			t.Fatalf("GET without Cache-Control: no-store (%d)", code)
		}

		// Content distribution, from the pending state again.
		pending()
		req = httptest.NewRequest(http.MethodPost, "/websub/x", bytes.NewReader(body))
		req.URL.Path, req.URL.RawPath = "/websub/"+seg, ""
		if up, err := url.PathUnescape(seg); err == nil {
			req.URL.Path, req.URL.RawPath = "/websub/"+up, "/websub/"+seg
		}
		if sig != "" {
			req.Header.Set(websub.SignatureHeader, sig)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		code, _, out = e.serve(req)
		if unclean && code >= 300 && code < 400 {
			code = http.StatusNotFound
		}
		pushed := e.takePushed()
		authentic := fzAuthentic(sig, body)
		switch code {
		case http.StatusAccepted:
			if len(out) != 0 {
				t.Fatalf("202 with a body %q", out)
			}
		case http.StatusBadRequest, http.StatusGone, http.StatusRequestEntityTooLarge:
		case http.StatusNotFound:
			if isGenuine {
				t.Fatalf("POST with the genuine token answered 404")
			}
		default:
			t.Fatalf("POST answered %d: %s", code, out)
		}
		switch {
		case len(pushed) > 1:
			t.Fatalf("one request ingested %d times", len(pushed))
		case len(pushed) == 1 && (!authentic || !isGenuine):
			t.Fatalf("ingested content with token %q and signature %q (authentic %v)", seg, sig, authentic)
		case len(pushed) == 1 && !bytes.Equal(pushed[0], body):
			t.Fatalf("ingested body differs from the one posted")
		case len(pushed) == 0 && authentic && isGenuine && code != http.StatusRequestEntityTooLarge:
			t.Fatalf("authentic content with the genuine token was not ingested (%d)", code)
		}
	})
}

func ptrTime(t time.Time) *time.Time { return &t }
