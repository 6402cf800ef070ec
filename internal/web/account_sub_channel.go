package web

import (
	"context"
	"net/http"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/model"
)

// accountChannel is POST /account/{token}/subscriptions/{id}/channel:
// the subscription's channel form (saveChannel).
func (s *Server) accountChannel(w http.ResponseWriter, r *http.Request) {
	if subj, ok := s.subChannel(w, r); ok {
		s.saveChannel(w, r, subj)
	}
}

// accountChannelTest is POST /account/{token}/subscriptions/{id}/channel/test:
// a sample post to the subscription's channel (testChannel).
func (s *Server) accountChannelTest(w http.ResponseWriter, r *http.Request) {
	if subj, ok := s.subChannel(w, r); ok {
		s.testChannel(w, r, subj)
	}
}

// subChannel loads the {id} subscription of the account as a channel
// form's subject; it answers the request itself when it cannot.
func (s *Server) subChannel(w http.ResponseWriter, r *http.Request) (channelSubject, bool) {
	u, tok, sub, ok := s.accountSubPost(w, r)
	if !ok {
		return channelSubject{}, false
	}
	return channelSubject{
		cur: model.ChannelChoice{Channel: sub.Channel, Target: sub.Target, Secret: sub.ChannelSecret},
		tok: tok, anchor: "subscriptions",
		save: func(ctx context.Context, c model.ChannelChoice) error {
			return s.Store.SetSubscriptionChannel(ctx, u.ID, sub.ID, c)
		},
		again: func(w http.ResponseWriter, r *http.Request, status int, f channelForm) {
			s.accountAgain(w, r, u, tok, status, func(d *accountData) {
				for i := range d.Subs {
					if d.Subs[i].ID == sub.ID {
						d.Subs[i].ChannelForm = f
					}
				}
			})
		},
		sample: func(now time.Time) channel.Delivery {
			p := s.samplePost("A sample post from feedmail", now)
			return channel.Delivery{At: now, Post: &p}
		},
		sent: "A sample post was delivered.",
	}, true
}
