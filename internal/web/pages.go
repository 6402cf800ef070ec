package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/channel/channels"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/templates"
)

// staticFile is one embedded asset with its validator.
type staticFile struct {
	body  []byte
	ctype string
	etag  string
}

// view is what every page template gets: the layout's fields and the page's
// own data in Data.
type view struct {
	Title     string
	StyleURL  string
	ScriptURL string
	// PreviewScriptURL keeps email previews up to date (preview.js).
	PreviewScriptURL string
	Data             any
}

// loadAssets parses every page template (each page with the layout and the
// partials) and reads the static files, once.
func (s *Server) loadAssets() error {
	s.files = map[string]staticFile{}
	err := fs.WalkDir(templates.FS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		b, err := fs.ReadFile(templates.FS, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		s.files[d.Name()] = staticFile{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		return fmt.Errorf("static files: %w", err)
	}
	for name, ref := range map[string]*string{"style.css": &s.styleURL, "tz.js": &s.scriptURL, "preview.js": &s.previewScriptURL, "proof.js": &s.proofURL} {
		f, ok := s.files[name]
		if !ok {
			return fmt.Errorf("static file %s missing", name)
		}
		*ref = links.Fill(links.PathStatic, name) + "?v=" + strings.Trim(f.etag, `"`)
	}

	base, err := template.New("layout").Option("missingkey=zero").Funcs(funcs(s.prices())).ParseFS(templates.FS, "pages/_*.html")
	if err != nil {
		return fmt.Errorf("page layout: %w", err)
	}
	names, err := fs.Glob(templates.FS, "pages/*.html")
	if err != nil {
		return err
	}
	s.pages = map[string]*template.Template{}
	for _, n := range names {
		if strings.HasPrefix(path.Base(n), "_") {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templates.FS, n)
		if err != nil {
			return fmt.Errorf("page %s: %w", n, err)
		}
		s.pages[strings.TrimSuffix(path.Base(n), ".html")] = t
	}
	return nil
}

// prices is the price list the pages state: Deps.Prices, else billing's.
func (s *Server) prices() billing.Prices {
	if s.Prices != nil {
		return *s.Prices
	}
	return billing.Standard()
}

// serveStatic serves /static/{file} with an ETag; URLs made by the pages
// carry the content hash, so they may be cached for a year.
func (s *Server) serveStatic(w http.ResponseWriter, r *http.Request) {
	f, ok := s.files[r.PathValue("file")]
	if !ok {
		s.notFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	if r.URL.Query().Get("v") == strings.Trim(f.etag, `"`) {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "public, max-age=3600")
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(f.body)
}

// render executes page name inside the layout and writes it with status.
// It renders into a buffer first, so a template error becomes a clean 500.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	b, err := s.renderBytes(name, title, data)
	if err != nil {
		s.Log.Error("render page", "page", name, "err", err)
		http.Error(w, "feedmail could not draw this page", http.StatusInternalServerError)
		return
	}
	s.writePage(w, r, status, b)
}

// renderBytes executes page name inside the layout.
func (s *Server) renderBytes(name, title string, data any) ([]byte, error) {
	t, ok := s.pages[name]
	if !ok {
		return nil, fmt.Errorf("no page template %q", name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", view{Title: title, StyleURL: s.styleURL, ScriptURL: s.scriptURL,
		PreviewScriptURL: s.previewScriptURL, Data: data}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writePage sends a rendered page (no-store unless the handler said otherwise).
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

// RenderPage renders templates/pages/NAME.html in the site layout, for
// handlers that live elsewhere in this package (credits). data is available
// to the page as .Data.
func (s *Server) RenderPage(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	s.render(w, r, status, name, title, data)
}

// messageData is a page with a heading, a paragraph and optional links.
type messageData struct {
	Heading string
	Text    string
	Links   []pageLink
	SignIn  bool // show the "email me a sign-in link" form
}

type pageLink struct{ Label, URL string }

// renderMessage shows a short page that explains something.
func (s *Server) renderMessage(w http.ResponseWriter, r *http.Request, status int, heading, text string, links ...pageLink) {
	s.render(w, r, status, "message", heading, messageData{Heading: heading, Text: text, Links: links})
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.renderMessage(w, r, http.StatusNotFound, "Page not found",
		"There is nothing at this address.", pageLink{"Go to the start page", "/"})
}

// serverError logs err and shows a 500 page without details.
func (s *Server) serverError(w http.ResponseWriter, r *http.Request, err error) {
	s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	s.renderMessage(w, r, http.StatusInternalServerError, "Something went wrong",
		"feedmail could not finish this just now. Nothing was changed that you need to worry about; please try again in a minute.")
}

// tokenError shows what is wrong with a link's token: 410 for an expired
// link, 400 for a damaged or misused one. Never a 500.
func (s *Server) tokenError(w http.ResponseWriter, r *http.Request, err error, what string) {
	switch {
	case errors.Is(err, token.ErrExpired):
		s.render(w, r, http.StatusGone, "message", "This link has expired", messageData{
			Heading: "This link has expired",
			Text:    "Links to " + what + " work for a limited time. Ask for a fresh sign-in link below and we will email it to you.",
			SignIn:  true,
		})
	case errors.Is(err, token.ErrWrongPurpose):
		s.render(w, r, http.StatusBadRequest, "message", "This link is for something else", messageData{
			Heading: "This link is for something else",
			Text:    "This link from a feedmail email cannot be used to " + what + ". Use the matching link in the email.",
		})
	default:
		s.render(w, r, http.StatusBadRequest, "message", "This link does not work", messageData{
			Heading: "This link does not work",
			Text:    "The link is incomplete or was changed. Open it again from the email, making sure the whole address is copied. You can also ask for a sign-in link below.",
			SignIn:  true,
		})
	}
}

// linkGone is for a genuine link whose subject no longer exists or was
// already used up.
func (s *Server) linkGone(w http.ResponseWriter, r *http.Request, heading, text string) {
	s.render(w, r, http.StatusGone, "message", heading, messageData{Heading: heading, Text: text, SignIn: true})
}

func funcs(p billing.Prices) template.FuncMap {
	return template.FuncMap{
		"when":     fmtTime,
		"ago":      agoWords,
		"bytes":    byteWords,
		"dur":      durWords,
		"ms":       func(n int) string { return durWords(time.Duration(n) * time.Millisecond) },
		"eq2":      func(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) },
		"statusTx": subscribe.StatusText,
		// path is the path of a route of links.Routes by name, filled with
		// the values given: {{path "confirm" .Token}}.
		"path": func(name string, values ...any) string {
			vs := make([]string, len(values))
			for i, v := range values {
				vs[i] = fmt.Sprint(v)
			}
			return links.PathOf(name, vs...)
		},
		"add": func(a, b int) int { return a + b },
		// previewSrc is the preview page of a choice (feed, format,
		// delivery, zone); previewFrame the "preview-frame" partial's
		// argument: a frame shown only once it has a preview.
		"previewSrc": previewSrc,
		"previewFrame": func(id, caption string, src template.URL) map[string]any {
			return map[string]any{"ID": id, "Caption": caption, "Src": src}
		},
		"ledgerWords": ledgerWords,
		// fieldErr is the argument of the "field-error" partial: nil
		// (nothing shown) when msg is empty.
		"fieldErr": func(id, msg string) any {
			if msg == "" {
				return nil
			}
			return map[string]string{"ID": id, "Msg": msg}
		},
		// zoneSel is the argument of the "zone-select" partial; browser
		// marks it for the script that picks the browser's zone.
		"zoneSel": func(id, cur string, zones []string, browser bool, errMsg string) map[string]any {
			return map[string]any{"ID": id, "Cur": cur, "Zones": zones, "Browser": browser, "Err": errMsg}
		},
		// digestArgs is the argument of the account page's "digest-form".
		"digestArgs": func(d *accountData, f digestForm) map[string]any {
			return map[string]any{"Token": d.Token, "Presets": d.Presets, "Form": f}
		},
		"settingsArgs": func(d *accountData, sub accountSub) map[string]any {
			return map[string]any{"Token": d.Token, "Sub": sub}
		},
		"channelArgs":   channelArgs,
		"formatChoices": func() any { return formatChoices },
		"channelNames":  func() []string { return channels.All().Names() },
		"orElse": func(a, b string) string {
			if strings.TrimSpace(a) == "" {
				return b
			}
			return a
		},
		// postCost and digestRate are the prices in words, from billing:
		// pages never write a price themselves.
		"postCost":       p.PostCost,
		"digestRate":     p.DigestRate,
		"ownerPostCost":  p.OwnerPostCost,
		"ownerIssueCost": p.OwnerIssueCost,
	}
}

// fmtTime renders an instant in UTC, to the minute.
func fmtTime(t any) string {
	var tt time.Time
	switch v := t.(type) {
	case time.Time:
		tt = v
	case *time.Time:
		if v == nil {
			return "never"
		}
		tt = *v
	default:
		return ""
	}
	if tt.IsZero() {
		return "never"
	}
	return tt.UTC().Format("2 Jan 2006 15:04 UTC")
}

// agoWords says how far an instant is from now ("in 12 min", "3 h ago").
func agoWords(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d > -30*time.Second && d < 30*time.Second:
		return "now"
	case d > 0:
		return "in " + durWords(d)
	default:
		return durWords(-d) + " ago"
	}
}

// durWords renders a duration roughly, in plain words: "45 s", "12 min",
// "3 h 5 min", "2 days".
func durWords(d time.Duration) string {
	switch {
	case d < 0:
		return durWords(-d)
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < 2*time.Minute:
		return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + " s"
	case d < 2*time.Hour:
		return strconv.Itoa(int(d.Round(time.Minute)/time.Minute)) + " min"
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return strconv.Itoa(h) + " h"
		}
		return strconv.Itoa(h) + " h " + strconv.Itoa(m) + " min"
	default:
		return strconv.Itoa(int(d.Round(time.Hour)/(24*time.Hour))) + " days"
	}
}

func byteWords(n int64) string {
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1024*1024:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " KB"
	default:
		return strconv.FormatFloat(float64(n)/(1024*1024), 'f', 1, 64) + " MB"
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
