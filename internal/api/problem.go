package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/store"
)

// Problem types beyond the status code's own meaning (RFC 9457 §4.2:
// "about:blank" for the rest). Tag URIs name them; they are not meant to
// be fetched.
const (
	typeInvalid     = "tag:feedmail,2026:problem:invalid-input" // the request breaks a rule (400)
	typeFeed        = "tag:feedmail,2026:problem:feed"          // the feed could not be used (422)
	typeSeveral     = "tag:feedmail,2026:problem:several-feeds" // the page advertises several feeds (422)
	typeConflict    = "tag:feedmail,2026:problem:conflict"      // e.g. a digest name in use (409)
	problemJSONType = "application/problem+json"
)

// problem is an RFC 9457 problem details object.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Field names the request member at fault, when there is one.
	Field string `json:"field,omitempty"`
	// Candidates are the feeds a page advertises (typeSeveral).
	Candidates []candidate `json:"candidates,omitempty"`
	// RetryAfter is the seconds to wait (429), as the header says.
	RetryAfter int `json:"retry_after,omitempty"`
}

// candidate is one feed a page advertises.
type candidate struct {
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
}

// writeProblem writes p with its status; Type defaults to about:blank and
// Title to the status text.
func writeProblem(w http.ResponseWriter, p problem) {
	if p.Type == "" {
		p.Type = "about:blank"
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	w.Header().Set("Content-Type", problemJSONType)
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// invalid is a 400 problem about field.
func invalid(field, detail string) problem {
	return problem{Type: typeInvalid, Title: "Invalid input", Status: http.StatusBadRequest, Field: field, Detail: detail}
}

// notFound is the 404 problem for what names nothing of the person's.
func notFound(what string, id int64) problem {
	return problem{Status: http.StatusNotFound, Detail: "no " + what + " " + strconv.FormatInt(id, 10) + " in this account"}
}

// fail answers err: the store's and the rules' known errors become their
// problems (field names the member they concern), anything else is
// logged and a 500 problem that says nothing of it.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, field string, err error) {
	switch {
	case errors.Is(err, store.ErrBadControls), errors.Is(err, store.ErrBadDigestName),
		errors.Is(err, store.ErrPauseInPast), errors.Is(err, digest.ErrBadZone):
		writeProblem(w, invalid(field, err.Error()))
	case errors.Is(err, digest.ErrBadSpec):
		writeProblem(w, invalid(field, digest.ScheduleProblem(err)))
	case errors.Is(err, store.ErrDigestNameTaken):
		writeProblem(w, problem{Type: typeConflict, Title: "Conflict", Status: http.StatusConflict, Field: field,
			Detail: "another digest of this account has that name"})
	case errors.Is(err, store.ErrDeliveryExists):
		writeProblem(w, problem{Type: typeConflict, Title: "Conflict", Status: http.StatusConflict, Field: "target",
			Detail: "another subscription of this account gets the feed at that channel and target"})
	case errors.Is(err, store.ErrNotFound):
		writeProblem(w, problem{Status: http.StatusNotFound, Detail: "not found in this account"})
	default:
		s.Log.Error("api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeProblem(w, problem{Status: http.StatusInternalServerError, Detail: "feedmail hit an error; try again later"})
	}
}
