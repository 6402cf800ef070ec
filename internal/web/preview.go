package web

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/preview"
	"github.com/feedmail/feedmail/mailer"
)

// previewCSP is the policy of a preview: the email's own styles and
// pictures and nothing else; no script, no form, no frame of its own, a
// sandbox of its own even when opened outside the frame, and framed by
// feedmail's pages only.
const previewCSP = "default-src 'none'; img-src https: data:; style-src 'unsafe-inline'; " +
	"frame-ancestors 'self'; base-uri 'none'; form-action 'none'; sandbox allow-popups allow-popups-to-escape-sandbox"

// previewHead is what the frame shows above the email: its subject and
// who it comes from and goes to, and what the choice costs.
type previewHead struct {
	Subject, From, To, Cost, Note string
}

// previewPage is GET /preview?url=…&format=…&delivery=…&zone=…: the
// email the choice would send (package preview), with its headers on
// top, as a page for a sandboxed frame. It sends and stores nothing.
func (s *Server) previewPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := preview.Request{Feed: clip(q.Get("url"), 2048), Format: clip(q.Get("format"), 40),
		Delivery: clip(q.Get("delivery"), 120), Zone: clip(q.Get("zone"), 64), Client: clientIP(r)}
	h := w.Header()
	h.Set("Content-Security-Policy", previewCSP)
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Cache-Control", "no-store")
	if req.Feed == "" {
		s.previewProblem(w, r, http.StatusBadRequest, "Type a feed or site address to see the email it would send.")
		return
	}
	res, err := s.preview.Preview(r.Context(), req)
	var le *preview.LimitError
	var p *preview.Problem
	switch {
	case errors.As(err, &le):
		h.Set("Retry-After", strconv.Itoa(int(le.Wait.Round(time.Second)/time.Second)+1))
		s.previewProblem(w, r, http.StatusTooManyRequests, "Too many previews at once: try again in a minute.")
		return
	case errors.As(err, &p):
		s.previewProblem(w, r, http.StatusUnprocessableEntity, "No preview: "+p.Msg+".")
		return
	case err != nil:
		s.Log.Error("preview", "url", req.Feed, "err", err)
		s.previewProblem(w, r, http.StatusInternalServerError, "feedmail could not make the preview just now.")
		return
	}
	head := previewHead{Subject: res.Subject, To: "you", Cost: res.Forecast.Words, Note: res.Note}
	if v := res.Message.GetFromString(); len(v) > 0 {
		head.From = v[0]
	}
	var buf bytes.Buffer
	if err := s.pages["message"].ExecuteTemplate(&buf, "preview-head", head); err != nil {
		s.serverError(w, r, err)
		return
	}
	s.writePage(w, r, http.StatusOK, withHead(res.HTML, buf.Bytes()))
}

// newPreview returns the preview service of the server's pages and API:
// signup's feed finding, the install's sender and links, an article
// reader with the signup fetcher's guard.
func (s *Server) newPreview() *preview.Service {
	lim := preview.DefaultLimits()
	if s.PreviewLimits != nil {
		lim = *s.PreviewLimits
	}
	arts := article.NewReader(fetcher.Config{BaseURL: s.Config.BaseURL, AllowPrivate: s.Config.AllowPrivateNetworks}, s.Clock)
	return preview.New(preview.Config{Subs: s.subs, Sender: mailer.Sender{Address: s.Config.From}, Links: s.links,
		Articles: arts, Limits: lim})
}

// previewProblem answers a preview that cannot be made with a short
// page for the frame.
func (s *Server) previewProblem(w http.ResponseWriter, r *http.Request, status int, msg string) {
	var buf bytes.Buffer
	if err := s.pages["message"].ExecuteTemplate(&buf, "preview-problem", msg); err != nil {
		http.Error(w, msg, status)
		return
	}
	s.writePage(w, r, status, buf.Bytes())
}

// bodyTag finds the opening <body> tag of an email's HTML.
var bodyTag = regexp.MustCompile(`(?i)<body[^>]*>`)

// withHead returns the email's HTML with head right after its <body>
// tag (first, when it has none).
func withHead(email string, head []byte) []byte {
	at := 0
	if loc := bodyTag.FindStringIndex(email); loc != nil {
		at = loc[1]
	}
	out := make([]byte, 0, len(email)+len(head))
	out = append(out, email[:at]...)
	out = append(out, head...)
	return append(out, email[at:]...)
}

// withPreview sets the preview of the subscription q names (?preview=ID)
// in the format and delivery its form chose, its own where the form did
// not say; a digest is previewed on its schedule, in its zone.
func (d *accountData) withPreview(q url.Values) {
	id, err := strconv.ParseInt(q.Get("preview"), 10, 64)
	if err != nil {
		return
	}
	for i := range d.Subs {
		sub := &d.Subs[i]
		if sub.ID != id {
			continue
		}
		format, delivery := clip(q.Get("format"), 40), clip(q.Get("delivery"), 40)
		if format == "" {
			format = sub.Settings.Format
		}
		if delivery == "" {
			delivery = sub.Delivery
		}
		spec, zone := deliveryInstant, d.Zone
		for _, dg := range d.Digests {
			if delivery == "digest-"+strconv.FormatInt(dg.ID, 10) {
				spec, zone = dg.Spec, dg.Zone
			}
		}
		sub.Preview = previewSrc(sub.FeedURL, format, spec, zone)
	}
}

// previewSrc is the address of the preview of a choice, for a frame.
func previewSrc(feed, format, delivery, zone string) template.URL {
	v := url.Values{}
	v.Set("url", feed)
	for k, x := range map[string]string{"format": format, "delivery": delivery, "zone": zone} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return template.URL(links.PathPreview + "?" + v.Encode())
}
