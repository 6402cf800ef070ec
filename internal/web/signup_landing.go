package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// subscribePage is GET /subscribe?url=…[&email=…]: the form filled in, for
// publishers to link to (and for the form in the README to submit to).
func (s *Server) subscribePage(w http.ResponseWriter, r *http.Request) {
	d := s.newSignup(r)
	q := r.URL.Query()
	d.URL = clip(q.Get("url"), 2048)
	d.Email = clip(q.Get("email"), 254)
	d.Fresh = true
	var err error
	if d.FeedName, d.Forecast, err = s.landingFeed(r.Context(), d.URL); err != nil {
		s.serverError(w, r, err)
		return
	}
	if err := s.suggestFormat(r.Context(), d); err != nil {
		s.serverError(w, r, err)
		return
	}
	if d.OwnerPaid = s.feedOwnerPaid(r.Context(), d.URL); d.OwnerPaid {
		d.Forecast = nil // the reader pays nothing for it, whatever it posts
	}
	s.showSignup(w, r, http.StatusOK, d)
}

// landingFeed is what the landing page says of the feed at raw: its name
// (the title of a feed feedmail knows, else the host of the address; ""
// when it is not a web address) and, for a known feed, the cost forecast
// from its stored items. The page never fetches: anyone can make such a link.
func (s *Server) landingFeed(ctx context.Context, raw string) (string, *forecast.Forecast, error) {
	u, msg := subscribe.NormalizeFeedURL(raw)
	if raw == "" || msg != "" {
		return "", nil, nil
	}
	f, err := s.Store.FeedByURL(ctx, u)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return "", nil, err
	default:
		fc, err := s.subs.StoredForecast(ctx, f.ID)
		if err != nil {
			return "", nil, err
		}
		if f.Title != "" {
			return f.Title, &fc, nil
		}
		return hostName(u), &fc, nil
	}
	return hostName(u), nil, nil
}

// hostName is the host of a web address without "www.", "" when it has none.
func hostName(u string) string {
	if pu, err := url.Parse(u); err == nil {
		return strings.TrimPrefix(pu.Hostname(), "www.")
	}
	return ""
}

// candidatesOf returns a site's feeds with the forecast of those feedmail
// knows. Only the stored items are read: the site was fetched once, its
// feeds are not.
func (s *Server) candidatesOf(ctx context.Context, alts []newitems.Alternate) ([]candidate, error) {
	out := make([]candidate, len(alts))
	for i, a := range alts {
		out[i].Alternate = a
		f, err := s.Store.FeedByURL(ctx, a.URL)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		fc, err := s.subs.StoredForecast(ctx, f.ID)
		if err != nil {
			return nil, err
		}
		out[i].Forecast = &fc
	}
	return out, nil
}
