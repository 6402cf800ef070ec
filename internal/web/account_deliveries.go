package web

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// A person may get one feed in several places (by email and at channel
// targets), one subscription each. The account page shows a feed once,
// its deliveries below it, and offers to add another.

// feedGroup is one feed on the account page with the person's deliveries
// of it, in the order they were made.
type feedGroup struct {
	FeedID    int64
	Title     string
	FeedURL   string
	StatusURL string
	FeedWords string
	Subs      []accountSub
	// AddPath is where the "also deliver it to" form posts; AddForm is
	// that form as typed when it was refused.
	AddPath string
	AddForm channelForm
}

// Feeds groups the page's subscriptions by feed, each feed where its first
// subscription is. It is computed when the page is drawn, so a form put in
// place on a subscription shows in its group.
func (d *accountData) Feeds() []feedGroup {
	var out []feedGroup
	at := map[int64]int{}
	for _, sub := range d.Subs {
		i, ok := at[sub.FeedID]
		if !ok {
			i = len(out)
			at[sub.FeedID] = i
			out = append(out, feedGroup{FeedID: sub.FeedID, Title: sub.Title, FeedURL: sub.FeedURL,
				StatusURL: sub.StatusURL, FeedWords: sub.FeedWords, AddForm: d.AddForms[sub.FeedID],
				AddPath: links.PathOf("accountDeliveryAdd", d.Token, strconv.FormatInt(sub.ID, 10))})
		}
		out[i].Subs = append(out[i].Subs, sub)
	}
	return out
}

// Where is the delivery in words: "By email", "By webhook to https://…".
func (a accountSub) Where() string {
	if a.Channel == "" || a.Channel == model.ChannelEmail {
		return "By email"
	}
	return "By " + a.Channel + " to " + a.Target
}

// accountDeliveryAdd is POST /account/{token}/subscriptions/{id}/deliveries:
// the feed of subscription {id} goes to the channel and target of the
// form too, as a subscription of its own (active at once: the account
// page stands for the person), or the one the person has there already is
// kept (revived when it had ended). A channel or target that is wrong
// shows the page again (422) with the form as typed.
func (s *Server) accountDeliveryAdd(w http.ResponseWriter, r *http.Request) {
	u, tok, sub, ok := s.accountSubPost(w, r)
	if !ok {
		return
	}
	f, choice, err := chosenChannel(r, model.ChannelChoice{}, s.Config.AllowPrivateNetworks)
	if err != nil {
		f.Error = problem(err)
		s.accountAgain(w, r, u, tok, http.StatusUnprocessableEntity, func(d *accountData) {
			d.AddForms = map[int64]channelForm{sub.FeedID: f}
		})
		return
	}
	feed, err := s.Store.FeedByID(r.Context(), sub.FeedID)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	res, err := s.subs.Subscribe(r.Context(), subscribe.Request{Email: u.Email, Feed: subscribe.Found{URL: feed.URL},
		Confirmed: true, ConfirmedBy: store.ConfirmedByAccount, Channel: choice})
	if errors.Is(err, channel.ErrBadTarget) {
		f.Error = problem(err)
		s.accountAgain(w, r, u, tok, http.StatusUnprocessableEntity, func(d *accountData) {
			d.AddForms = map[int64]channelForm{sub.FeedID: f}
		})
		return
	}
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	done := "readded"
	if res.Created {
		done = "added"
	}
	backToAccount(w, r, tok, done, "subscriptions")
}
