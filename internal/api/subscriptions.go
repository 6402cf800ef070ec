package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// subscriptionJSON is a subscription as the API shows it: with its
// channel and target, never a token; a webhook's signing secret only in
// the answer that made it.
type subscriptionJSON struct {
	ID          int64      `json:"id"`
	FeedID      int64      `json:"feed_id"`
	FeedURL     string     `json:"feed_url"`
	FeedTitle   string     `json:"feed_title"`
	FeedState   string     `json:"feed_state"`
	State       string     `json:"state"`
	DigestID    *int64     `json:"digest_id"`
	DigestName  *string    `json:"digest_name"`
	Include     string     `json:"include"`
	Exclude     string     `json:"exclude"`
	Format      string     `json:"format"`
	Paused      bool       `json:"paused"`
	PausedUntil *time.Time `json:"paused_until"`
	CreatedAt   time.Time  `json:"created_at"`
	ConfirmedAt *time.Time `json:"confirmed_at"`
	Channel     string     `json:"channel"`
	Target      string     `json:"target,omitempty"`
	// SigningSecret is a new webhook's whsec_ secret, shown once.
	SigningSecret string `json:"signing_secret,omitempty"`
}

// toSubscription converts a stored view at now (a pause that has ended
// shows as none).
func toSubscription(v store.SubscriptionView, now time.Time) subscriptionJSON {
	out := subscriptionJSON{ID: v.ID, FeedID: v.FeedID, FeedURL: v.FeedURL, FeedTitle: v.FeedTitle, FeedState: v.FeedState,
		State: v.State, DigestID: v.DigestID, Include: v.IncludeTerms, Exclude: v.ExcludeTerms,
		Format: v.Format, CreatedAt: v.CreatedAt.UTC(), ConfirmedAt: utcOrNil(v.ConfirmedAt)}
	if out.Format == "" {
		out.Format = store.FormatFull
	}
	out.Channel, out.Target = v.Channel, v.Target
	if out.Channel == "" {
		out.Channel = model.ChannelEmail
	}
	if v.DigestID != nil {
		name := v.DigestName
		out.DigestName = &name
	}
	if store.IsPaused(v.PausedAt, v.PausedUntil, now) {
		out.Paused, out.PausedUntil = true, utcOrNil(v.PausedUntil)
	}
	return out
}

func utcOrNil(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// listSubscriptions is GET /api/v1/subscriptions: the account's
// subscriptions that have not ended, by id, a page at a time.
func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request, u *store.User) {
	p, ok := readPage(w, r)
	if !ok {
		return
	}
	rows, err := s.Store.SubscriptionsPage(r.Context(), u.ID, p.last, p.limit+1)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	now := s.Clock.Now()
	writeJSON(w, http.StatusOK, pageOf(rows, p.limit, func(v store.SubscriptionView) int64 { return v.ID },
		func(v store.SubscriptionView) subscriptionJSON { return toSubscription(v, now) }))
}

// getSubscription is GET /api/v1/subscriptions/{id}.
func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request, u *store.User) {
	id, ok := pathID(w, r, "subscription")
	if !ok {
		return
	}
	s.writeSubscription(w, r, u, id, http.StatusOK, false)
}

// writeSubscription answers with u's subscription id as it is now (404
// when it is not u's or has ended), with a webhook's signing secret when
// withSecret (the answer that chose the webhook).
func (s *Server) writeSubscription(w http.ResponseWriter, r *http.Request, u *store.User, id int64, status int, withSecret bool) {
	v, err := s.Store.AccountSubscriptionView(r.Context(), u.ID, id)
	if err != nil {
		if isNotFound(err) {
			writeProblem(w, notFound("subscription", id))
			return
		}
		s.fail(w, r, "", err)
		return
	}
	if status == http.StatusCreated {
		w.Header().Set("Location", Prefix+"subscriptions/"+strconv.FormatInt(id, 10))
	}
	out := toSubscription(*v, s.Clock.Now())
	if withSecret && v.Channel == webhook.Name {
		out.SigningSecret = v.ChannelSecret
	}
	writeJSON(w, status, out)
}

// deleteSubscription is DELETE /api/v1/subscriptions/{id}: the
// subscription ends, as an unsubscribe does (204).
func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request, u *store.User) {
	id, ok := pathID(w, r, "subscription")
	if !ok {
		return
	}
	if _, err := s.Store.AccountSubscriptionView(r.Context(), u.ID, id); err != nil {
		if isNotFound(err) {
			writeProblem(w, notFound("subscription", id))
			return
		}
		s.fail(w, r, "", err)
		return
	}
	if _, err := s.Store.EndSubscription(r.Context(), id, "unsubscribed through the API"); err != nil {
		s.fail(w, r, "", err)
		return
	}
	s.Log.Info("subscription ended through the api", "user", u.ID, "subscription", id)
	w.WriteHeader(http.StatusNoContent)
}
