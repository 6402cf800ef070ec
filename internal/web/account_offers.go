package web

import (
	"context"
	"strings"

	"github.com/feedmail/feedmail/internal/store"
)

// accountOffer is one open offer of a feed's probable new address, shown
// on the account page with the same two choices as its email.
type accountOffer struct {
	Title, From, To string
	FollowPath      string // POST here to follow (the email's link)
	UnsubPath       string // the subscription's unsubscribe page
}

// accountOffers returns userID's open offers, oldest first.
func (s *Server) accountOffers(ctx context.Context, userID int64) ([]accountOffer, error) {
	offers, err := s.Store.OffersFor(ctx, userID)
	if err != nil {
		return nil, err
	}
	var out []accountOffer
	for _, o := range offers {
		_, m, err := s.Store.ReaderMoveByID(ctx, o.ID)
		if err != nil {
			return nil, err
		}
		from, err := s.Store.FeedByID(ctx, m.FromFeedID)
		if err != nil {
			return nil, err
		}
		to, err := s.Store.FeedByID(ctx, m.ToFeedID)
		if err != nil {
			return nil, err
		}
		if sub, err := s.Store.SubscriptionByID(ctx, o.SubscriptionID); err != nil || sub.State == store.SubEnded {
			continue // gone or ended since: nothing to choose
		}
		out = append(out, accountOffer{Title: orURL(from.Title, from.URL), From: from.URL, To: to.URL,
			FollowPath: strings.TrimPrefix(s.links.Follow(o.ID), s.links.Base),
			UnsubPath:  strings.TrimPrefix(s.links.Unsubscribe(o.SubscriptionID), s.links.Base)})
	}
	return out, nil
}
