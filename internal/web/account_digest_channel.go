package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// accountDigestChannel is POST /account/{token}/digests/{id}/channel: the
// digest's channel form (saveChannel), where its issues go.
func (s *Server) accountDigestChannel(w http.ResponseWriter, r *http.Request) {
	if subj, ok := s.digestChannel(w, r); ok {
		s.saveChannel(w, r, subj)
	}
}

// accountDigestChannelTest is POST /account/{token}/digests/{id}/channel/test:
// a sample issue of two sample posts to the digest's channel (testChannel).
func (s *Server) accountDigestChannelTest(w http.ResponseWriter, r *http.Request) {
	if subj, ok := s.digestChannel(w, r); ok {
		s.testChannel(w, r, subj)
	}
}

// digestChannel loads the {id} digest of the account as a channel form's
// subject; it answers the request itself (404 for another person's
// digest) when it cannot.
func (s *Server) digestChannel(w http.ResponseWriter, r *http.Request) (channelSubject, bool) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return channelSubject{}, false
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		s.notFound(w, r)
		return channelSubject{}, false
	}
	dg, err := s.Store.AccountDigest(r.Context(), u.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		s.notFound(w, r)
		return channelSubject{}, false
	}
	if err != nil {
		s.serverError(w, r, err)
		return channelSubject{}, false
	}
	return channelSubject{
		cur: model.ChannelChoice{Channel: dg.Channel, Target: dg.Target, Secret: dg.ChannelSecret},
		tok: tok, anchor: "digests",
		save: func(ctx context.Context, c model.ChannelChoice) error {
			return s.Store.SetDigestChannel(ctx, u.ID, dg.ID, c)
		},
		again: func(w http.ResponseWriter, r *http.Request, status int, f channelForm) {
			s.accountAgain(w, r, u, tok, status, func(d *accountData) {
				for i := range d.Digests {
					if d.Digests[i].ID == dg.ID {
						d.Digests[i].ChannelForm = f
					}
				}
			})
		},
		sample: func(now time.Time) channel.Delivery {
			return channel.Delivery{At: now, Issue: s.sampleIssue(dg.Name, now)}
		},
		sent: "A sample issue was delivered.",
	}, true
}

// sampleIssue is a test delivery's issue of the digest named name: two
// sample posts of one feed, the newest first.
func (s *Server) sampleIssue(name string, now time.Time) *channel.Issue {
	first, second := s.samplePost("A sample post from feedmail", now), s.samplePost("Another sample post", now.Add(-time.Hour))
	return &channel.Issue{Name: name, Edition: "Sample issue",
		Feeds: []channel.IssueFeed{{Feed: first.Feed, Posts: []channel.Post{first, second}}}}
}
