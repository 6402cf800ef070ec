package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/preview"
	"github.com/feedmail/feedmail/internal/store"
)

// previewJSON is GET /api/v1/preview's answer: the email a choice would
// send, and what it would cost.
type previewJSON struct {
	FeedURL   string           `json:"feed_url"`
	FeedTitle string           `json:"feed_title"`
	Digest    bool             `json:"digest"`
	Subject   string           `json:"subject"`
	HTML      string           `json:"html"`
	Text      string           `json:"text"`
	Forecast  preview.Forecast `json:"forecast"`
	Note      string           `json:"note,omitempty"`
}

// previewEmail is GET /api/v1/preview?feed=URL&format=…&delivery=…&tz=…:
// the email of the feed's newest post in a format, or a sample issue of
// a digest, as package preview makes it for the web pages. It sends and
// stores nothing; previews are limited per account and per feed.
func (s *Server) previewEmail(w http.ResponseWriter, r *http.Request, u *store.User) {
	if s.Preview == nil {
		writeProblem(w, problem{Status: http.StatusServiceUnavailable, Detail: "previews are not available here"})
		return
	}
	q := r.URL.Query()
	if q.Get("feed") == "" {
		writeProblem(w, invalid("feed", "give the address of a feed or site"))
		return
	}
	res, err := s.Preview.Preview(r.Context(), preview.Request{Feed: q.Get("feed"), Format: q.Get("format"),
		Delivery: q.Get("delivery"), Zone: q.Get("tz"), Client: "account:" + strconv.FormatInt(u.ID, 10)})
	var le *preview.LimitError
	var p *preview.Problem
	switch {
	case errors.As(err, &le):
		secs := int(le.Wait.Round(time.Second)/time.Second) + 1
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeProblem(w, problem{Status: http.StatusTooManyRequests, Detail: "too many previews; try again later", RetryAfter: secs})
		return
	case errors.As(err, &p) && p.Field == "feed":
		writeProblem(w, problem{Type: typeFeed, Title: "The feed could not be used", Status: http.StatusUnprocessableEntity,
			Field: "feed", Detail: p.Msg})
		return
	case errors.As(err, &p):
		field := p.Field
		if field == "zone" {
			field = "tz"
		}
		writeProblem(w, invalid(field, p.Msg))
		return
	case err != nil:
		s.fail(w, r, "", err)
		return
	}
	writeJSON(w, http.StatusOK, previewJSON{FeedURL: res.FeedURL, FeedTitle: res.FeedTitle, Digest: res.Digest,
		Subject: res.Subject, HTML: res.HTML, Text: res.Text, Forecast: res.Forecast, Note: res.Note})
}
