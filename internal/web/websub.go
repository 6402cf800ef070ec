package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/internal/websub"
)

// MaxWebSubBody caps a content distribution request's body (the same 10 MB
// a poll may read).
const MaxWebSubBody = 10 << 20

// ErrUnusableContent, wrapped by an IngestFunc's error, says the pushed
// body can never be ingested (not a feed, or a broken one): the callback
// drops it with 202 and logs it, instead of answering 500 and having the
// hub send it again and again.
var ErrUnusableContent = errors.New("pushed content is not a usable feed")

// IngestFunc takes content a hub pushed for feed feedID through the same
// parse → new items → store path as a poll (poller.Poller.Ingest).
type IngestFunc func(ctx context.Context, feedID int64, body []byte, contentType string) error

// WebSubOptions configure the WebSub callback routes.
type WebSubOptions struct {
	// Ingest handles authentic pushed content. Required.
	Ingest IngestFunc
	// MaxBody caps a distribution's body; default MaxWebSubBody.
	MaxBody int64
}

// MountWebSub adds the WebSub callback, GET and POST /websub/{token}, where
// the token is links.WebSubCallback's signed feed id and the tag of the
// feed's current subscription (websub.CallbackTag): a callback of an ended
// subscription, or one without the tag, is 404. Callbacks made before they
// carried a tag still take content (POST: hubs hold them until their lease
// ends, and content is checked against the subscription's secret anyway)
// but never a verification (GET), which is what could cover a feed with a
// subscription nobody made, or end one. GET answers a hub's
// verification of intent (WebSub §5.3) and records it; POST takes
// distributed content (§7, §8), checked against X-Hub-Signature, into
// o.Ingest and answers 202 whether the signature was good or not; a feed
// we hold no subscription for answers 410. The status codes are in
// docs/design.md.
func (s *Server) MountWebSub(o WebSubOptions) {
	if o.MaxBody <= 0 {
		o.MaxBody = MaxWebSubBody
	}
	h := &webSubHandler{s: s, o: o}
	s.register(links.GroupWebSub, map[string]http.HandlerFunc{"websubVerify": h.verify, "websubDistribute": h.distribute})
}

type webSubHandler struct {
	s *Server
	o WebSubOptions
}

func (h *webSubHandler) count(event string) {
	if h.s.Metrics != nil {
		h.s.Metrics.WebSub.WithLabelValues(event).Inc()
	}
}

// feed resolves the callback token to its feed, or answers 404, 410 or
// 500: the token must carry the tag of the feed's current subscription,
// or, if untaggedOK (content), may be one made before callbacks carried a
// tag; content to a tag of no current subscription is 410.
func (h *webSubHandler) feed(w http.ResponseWriter, r *http.Request, untaggedOK bool) (*store.Feed, bool) {
	if h.s.Tokens == nil {
		textAnswer(w, http.StatusNotFound, "unknown callback\n")
		return nil, false
	}
	signed, tag := websub.SplitCallback(r.PathValue("token"))
	id, err := h.s.Tokens.Verify(signed, token.WebSub, h.s.Clock.Now())
	if err != nil || (tag == "" && !untaggedOK) {
		textAnswer(w, http.StatusNotFound, "unknown callback\n")
		return nil, false
	}
	f, err := h.s.Store.FeedByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		textAnswer(w, http.StatusNotFound, "unknown callback\n")
		return nil, false
	}
	if err != nil {
		h.s.Log.Error("websub: load feed", "feed", id, "err", err)
		textAnswer(w, http.StatusInternalServerError, "try again later\n")
		return nil, false
	}
	if tag != "" && !websub.CallbackTagOK(f.WebSubSecret, tag) {
		// A subscription that ended (or never was): content for it is
		// told to stop (410, as for a feed without one), a verification
		// is unknown.
		if untaggedOK {
			h.count("content_unwanted")
			textAnswer(w, http.StatusGone, "no subscription\n")
		} else {
			h.count("verify_refused")
			textAnswer(w, http.StatusNotFound, "unknown callback\n")
		}
		return nil, false
	}
	return f, true
}

// verify is GET /websub/{token}: the hub checks that we asked for the
// (un)subscription it is about to make. It answers the challenge when the
// request matches what the feed is waiting for, and records the outcome,
// with the lease the hub grants (daily renewal when it names none). A
// subscription that starts covering the feed also puts its next poll off
// to the weekly backup poll (store.SetWebSubCovering).
func (h *webSubHandler) verify(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	f, ok := h.feed(w, r, false)
	if !ok {
		return
	}
	cur := f.WebSub()
	expect, ok := h.expectedMode(w, r, f, cur)
	if !ok {
		return
	}
	challenge, lease, err := websub.CheckIntent(r.URL.Query(), cur.Topic, expect)
	now := h.s.Clock.Now()
	switch {
	case errors.Is(err, websub.ErrDenied):
		h.denied(w, r, f, cur, expect, now, err)
		return
	case errors.Is(err, websub.ErrBadVerification):
		h.count("verify_refused")
		textAnswer(w, http.StatusBadRequest, "malformed verification request\n")
		return
	case err != nil: // unknown topic, unexpected mode
		h.count("verify_refused")
		h.s.Log.Info("websub: refused verification", "feed", f.ID, "err", err)
		textAnswer(w, http.StatusNotFound, "no such subscription requested\n")
		return
	}
	var to store.WebSubFields // unsubscribe verified: cleared
	if expect == websub.ModeSubscribe {
		to = cur
		to.State = store.WebSubStateActive
		to.RenewAt = wsTimePtr(websub.RenewAt(now, lease))
		if lease > 0 {
			to.ExpiresAt = wsTimePtr(now.Add(lease))
		} else {
			to.ExpiresAt = wsTimePtr(now.Add(store.WebSubUnknownLeaseExpiry))
		}
	}
	var changed bool
	if expect == websub.ModeSubscribe && !store.WebSubActive(f, now) {
		// The subscription covers the feed from now on: the poll scheduled
		// as for a feed without WebSub becomes the weekly backup poll.
		changed, err = h.s.Store.SetWebSubCovering(r.Context(), f.ID, cur, to, now, store.WebSubBackupAt(f.ID, now),
			"WebSub subscription verified: backup poll weekly")
	} else {
		changed, err = h.s.Store.SetWebSub(r.Context(), f.ID, cur, to, time.Time{}, "")
	}
	if err != nil {
		h.s.Log.Error("websub: record verification", "feed", f.ID, "err", err)
		textAnswer(w, http.StatusInternalServerError, "try again later\n")
		return
	}
	if !changed { // the state moved on while we looked
		textAnswer(w, http.StatusNotFound, "no such subscription requested\n")
		return
	}
	h.logVerified(f, cur, expect, lease, to)
	textAnswer(w, http.StatusOK, challenge)
}

// expectedMode is the hub.mode the feed's WebSub state waits for; with no
// request under way it answers 404 itself and returns false.
func (h *webSubHandler) expectedMode(w http.ResponseWriter, r *http.Request, f *store.Feed, cur store.WebSubFields) (string, bool) {
	switch cur.State {
	case store.WebSubStatePending, store.WebSubStateActive:
		return websub.ModeSubscribe, true
	case store.WebSubStateUnsubscribing:
		return websub.ModeUnsubscribe, true
	}
	h.count("verify_refused")
	h.s.Log.Info("websub: verification for a feed with no request under way", "feed", f.ID,
		"state", cur.State, "mode", r.URL.Query().Get("hub.mode"))
	textAnswer(w, http.StatusNotFound, "no subscription requested\n")
	return "", false
}

// denied records a hub's refusal of our subscription: polling resumes and
// the subscription is retried after store.WebSubDeniedRetry.
func (h *webSubHandler) denied(w http.ResponseWriter, r *http.Request, f *store.Feed, cur store.WebSubFields,
	expect string, now time.Time, reason error) {
	if expect != websub.ModeSubscribe {
		textAnswer(w, http.StatusNotFound, "no subscription requested\n")
		return
	}
	to := cur
	to.State, to.ExpiresAt, to.RenewAt = store.WebSubStateDenied, nil, wsTimePtr(now.Add(store.WebSubDeniedRetry))
	var resume time.Time
	if store.WebSubActive(f, now) {
		resume = now
	}
	if _, err := h.s.Store.SetWebSub(r.Context(), f.ID, cur, to, resume, "WebSub hub denied the subscription: polling resumes"); err != nil {
		h.s.Log.Error("websub: record denial", "feed", f.ID, "err", err)
		textAnswer(w, http.StatusInternalServerError, "try again later\n")
		return
	}
	h.count("denied")
	h.s.Log.Info("websub: hub denied the subscription; polling, retry in a week", "feed", f.ID, "hub", cur.Hub, "reason", reason)
	textAnswer(w, http.StatusOK, "ok\n")
}

// logVerified counts and logs a verified (un)subscription.
func (h *webSubHandler) logVerified(f *store.Feed, cur store.WebSubFields, expect string, lease time.Duration, to store.WebSubFields) {
	if expect == websub.ModeSubscribe {
		h.count("verified")
		h.s.Log.Info("websub: subscription verified", "feed", f.ID, "hub", cur.Hub, "topic", cur.Topic,
			"lease", lease, "renew_at", to.RenewAt)
		return
	}
	h.count("unsubscribed")
	h.s.Log.Info("websub: unsubscription verified", "feed", f.ID, "hub", cur.Hub, "topic", cur.Topic)
}

func (h *webSubHandler) distribute(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	f, ok := h.feed(w, r, true)
	if !ok {
		return
	}
	if f.WebSubSecret == "" || f.State != store.FeedActive {
		h.count("content_unwanted")
		textAnswer(w, http.StatusGone, "no subscription\n")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.count("content_too_large")
			textAnswer(w, http.StatusRequestEntityTooLarge, "body too large\n")
			return
		}
		textAnswer(w, http.StatusBadRequest, "could not read body\n")
		return
	}
	if err := websub.VerifySignature([]byte(f.WebSubSecret), r.Header.Get(websub.SignatureHeader), body); err != nil {
		h.count("bad_signature")
		h.s.Log.Warn("websub: content dropped: signature check failed", "feed", f.ID, "hub", f.WebSubHub,
			"err", err, "remote", clientIP(r), "bytes", len(body))
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if err := h.o.Ingest(r.Context(), f.ID, body, r.Header.Get("Content-Type")); errors.Is(err, ErrUnusableContent) {
		h.count("content_unusable")
		h.s.Log.Warn("websub: pushed content dropped: not a usable feed", "feed", f.ID, "hub", f.WebSubHub, "err", err)
		w.WriteHeader(http.StatusAccepted)
		return
	} else if err != nil {
		h.s.Log.Error("websub: ingest pushed content", "feed", f.ID, "err", err)
		textAnswer(w, http.StatusInternalServerError, "try again later\n")
		return
	}
	h.count("content")
	w.WriteHeader(http.StatusAccepted)
}

// textAnswer writes a short text/plain answer.
func textAnswer(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg)
}

func wsTimePtr(t time.Time) *time.Time { return &t }
