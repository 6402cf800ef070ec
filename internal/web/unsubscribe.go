package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
)

// unsubscribeData is the unsubscribe page, before and after the button.
type unsubscribeData struct {
	Token  string
	Email  string
	Digest string   // digest name for a digest link
	Feeds  []string // titles (or URLs) of the feeds concerned
	Done   bool
	Ended  int // subscriptions ended by this request
}

// unsubscribeTarget is what an unsubscribe token points at: one
// subscription, or every subscription of one digest.
type unsubscribeTarget struct {
	subID, digestID int64
}

// verifyUnsubscribe accepts both purposes; the token says which it is.
func (s *Server) verifyUnsubscribe(tok string) (unsubscribeTarget, error) {
	now := s.Clock.Now()
	id, err := s.Tokens.Verify(tok, token.Unsubscribe, now)
	if err == nil {
		return unsubscribeTarget{subID: id}, nil
	}
	if !errors.Is(err, token.ErrWrongPurpose) {
		return unsubscribeTarget{}, err
	}
	id, err = s.Tokens.Verify(tok, token.DigestUnsubscribe, now)
	if err != nil {
		return unsubscribeTarget{}, err
	}
	return unsubscribeTarget{digestID: id}, nil
}

// unsubscribePage is GET /unsubscribe/{token}: what would stop, and a button.
func (s *Server) unsubscribePage(w http.ResponseWriter, r *http.Request) {
	s.unsubscribe(w, r, false)
}

// unsubscribePost is POST /unsubscribe/{token}, also RFC 8058 one-click: it
// answers 200 with a page (never a redirect), needs no cookie, and doing it
// again changes nothing and answers the same.
func (s *Server) unsubscribePost(w http.ResponseWriter, r *http.Request) {
	// The one-click body is "List-Unsubscribe=One-Click"; nothing in it is
	// needed, but it is read (within the form limit) so the connection can
	// be reused.
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	_ = r.ParseForm()
	s.unsubscribe(w, r, true)
}

// unsubscribe shows (act false) or does (act true) what an unsubscribe
// link asks for, one subscription or a whole digest.
func (s *Server) unsubscribe(w http.ResponseWriter, r *http.Request, act bool) {
	tok := r.PathValue("token")
	t, err := s.verifyUnsubscribe(tok)
	if err != nil {
		s.tokenError(w, r, err, "unsubscribe")
		return
	}
	d := unsubscribeData{Token: tok}
	var userID int64
	var gone bool
	if t.subID != 0 {
		userID, gone, err = s.unsubscribeOne(r.Context(), t.subID, act, &d)
	} else {
		userID, gone, err = s.unsubscribeDigest(r.Context(), t.digestID, act, &d)
	}
	switch {
	case gone:
		s.goneUnsubscribed(w, r)
		return
	case err != nil:
		s.serverError(w, r, err)
		return
	}
	if u, err := s.Store.UserByID(r.Context(), userID); err == nil {
		d.Email = u.Email
	}
	title := "Unsubscribe"
	if d.Done {
		title = "You are unsubscribed"
	}
	s.render(w, r, http.StatusOK, "unsubscribe", title, d)
}

// unsubscribeOne fills d for subscription subID and ends it when act. It
// returns the person's id, or gone when the subscription no longer exists.
func (s *Server) unsubscribeOne(ctx context.Context, subID int64, act bool, d *unsubscribeData) (int64, bool, error) {
	sub, err := s.Store.SubscriptionByID(ctx, subID)
	if errors.Is(err, store.ErrNotFound) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	feed, err := s.Store.FeedByID(ctx, sub.FeedID)
	if err != nil {
		return 0, false, err
	}
	d.Feeds = []string{orURL(feed.Title, feed.URL)}
	d.Done = sub.State == store.SubEnded
	if act && !d.Done {
		if _, err := s.Store.EndSubscription(ctx, sub.ID, "unsubscribed by link"); err != nil {
			return 0, false, err
		}
		d.Ended, d.Done = 1, true
	}
	return sub.UserID, false, nil
}

// unsubscribeDigest fills d for digest digestID and ends its subscriptions
// when act. It returns the person's id, or gone when the digest no longer
// exists.
func (s *Server) unsubscribeDigest(ctx context.Context, digestID int64, act bool, d *unsubscribeData) (int64, bool, error) {
	dg, err := s.Store.DigestByID(ctx, digestID)
	if errors.Is(err, store.ErrNotFound) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	d.Digest = dg.Name
	subs, err := s.Store.SubscriptionsOfDigest(ctx, dg.ID)
	if err != nil {
		return 0, false, err
	}
	for _, sub := range subs {
		d.Feeds = append(d.Feeds, orURL(sub.FeedTitle, sub.FeedURL))
	}
	d.Done = len(subs) == 0
	if act {
		n, err := s.Store.EndDigestSubscriptions(ctx, dg.ID, "unsubscribed from digest by link")
		if err != nil {
			return 0, false, err
		}
		d.Ended, d.Done = n, true
	}
	return dg.UserID, false, nil
}

// goneUnsubscribed answers a genuine link whose subscription was removed:
// there is nothing left to send, which is what the person wanted. For
// one-click that must still be a success (200).
func (s *Server) goneUnsubscribed(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "unsubscribe", "You are unsubscribed", unsubscribeData{Done: true})
}

// orURL is a feed's title, or its URL when it has none.
func orURL(title, url string) string {
	if title != "" {
		return title
	}
	return url
}
