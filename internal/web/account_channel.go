package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/channels"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/store"
)

// channelForm is a subscription's channel form: the channel and target
// as stored or as typed. Secret is a webhook's signing secret, shown to
// its owner (their receiver needs it); HasToken says a token is stored
// without showing it. Error says what is wrong with what was typed;
// Result what the test delivery got.
type channelForm struct {
	Name, Target, Secret string
	HasToken             bool
	Error, Result        string
	ResultOK             bool
}

// channelFormOf is the form of a stored subscription.
func channelFormOf(sub store.Subscription) channelForm {
	f := channelForm{Name: sub.Channel, Target: sub.Target}
	if f.Name == "" {
		f.Name = store.ChannelEmail
	}
	if f.Name == webhook.Name {
		f.Secret = sub.ChannelSecret
	} else {
		f.HasToken = sub.ChannelSecret != ""
	}
	return f
}

// maxChannelField is the longest target or token read from the form.
const maxChannelField = 2000

// accountChannel is POST /account/{token}/subscriptions/{id}/channel:
// channel, target and token, or remove=1 to go back to email. A token
// left empty keeps the stored one when the channel and target stay. A
// wrong choice re-renders the page (422) with the form as typed and the
// problem next to it; nothing changes.
func (s *Server) accountChannel(w http.ResponseWriter, r *http.Request) {
	u, tok, sub, ok := s.accountSubPost(w, r)
	if !ok {
		return
	}
	name := clip(strings.TrimSpace(r.PostForm.Get("channel")), 40)
	target := clip(strings.TrimSpace(r.PostForm.Get("target")), maxChannelField)
	secret := clip(strings.TrimSpace(r.PostForm.Get("token")), maxChannelField)
	if r.PostForm.Get("remove") != "" {
		name, target, secret = store.ChannelEmail, "", ""
	}
	if secret == "" && name == sub.Channel && target == sub.Target {
		secret = sub.ChannelSecret // unchanged: keep the token or signing secret
	}
	choice, err := channels.Choose(name, target, secret)
	if err == nil {
		err = s.Store.SetSubscriptionChannel(r.Context(), u.ID, sub.ID, choice)
	}
	switch {
	case errors.Is(err, channel.ErrBadTarget):
		s.renderChannelForm(w, r, u, tok, sub.ID, http.StatusUnprocessableEntity, channelForm{Name: name, Target: target, Error: problem(err)})
	case errors.Is(err, store.ErrNotFound):
		s.notFound(w, r)
	case err != nil:
		s.serverError(w, r, err)
	default:
		backToAccount(w, r, tok, "channel", "subscriptions")
	}
}

// accountChannelTest is POST /account/{token}/subscriptions/{id}/channel/test:
// it delivers a sample post to the subscription's channel at once (not
// charged) and shows what the target answered.
func (s *Server) accountChannelTest(w http.ResponseWriter, r *http.Request) {
	u, tok, sub, ok := s.accountSubPost(w, r)
	if !ok {
		return
	}
	f := channelFormOf(*sub)
	ch, known := channels.All().Get(sub.Channel)
	if !known {
		f.Error = "Test deliveries go to a webhook, chat or push channel; email is tested by the next post."
		s.renderChannelForm(w, r, u, tok, sub.ID, http.StatusUnprocessableEntity, f)
		return
	}
	if err := s.testDelivery(r.Context(), ch, sub); err != nil {
		f.Error = "The test delivery failed: " + err.Error() + " (" + ch.Judge(err).Action.String() + ")."
		s.renderChannelForm(w, r, u, tok, sub.ID, http.StatusBadGateway, f)
		return
	}
	f.Result, f.ResultOK = "A sample post was delivered.", true
	s.renderChannelForm(w, r, u, tok, sub.ID, http.StatusOK, f)
}

// testDelivery renders and delivers a sample post to sub's target through
// the guarded client, within 15 seconds.
func (s *Server) testDelivery(ctx context.Context, ch channel.Channel, sub *store.Subscription) error {
	now := s.Clock.Now()
	d := channel.Delivery{ID: "feedmail-test-" + strconv.FormatInt(now.UnixNano(), 36), At: now,
		Target: channel.Target{URL: sub.Target, Secret: sub.ChannelSecret},
		Post: &channel.Post{Feed: channel.Feed{Title: "feedmail", URL: s.Config.BaseURL}, Title: "A sample post from feedmail",
			Link: s.Config.BaseURL, Published: now, Seen: now, HTML: "<p>This is a test delivery: your posts will look like this.</p>",
			Text: "This is a test delivery: your posts will look like this."}}
	req, err := ch.Render(d)
	if err != nil {
		return err
	}
	hc := fetcher.NewHTTPClient(fetcher.Config{BaseURL: s.Config.BaseURL, AllowPrivate: s.Config.AllowPrivateNetworks,
		MaxRedirects: -1, Timeout: 15 * time.Second})
	defer hc.CloseIdleConnections()
	return ch.Deliver(ctx, hc, req)
}

// renderChannelForm re-renders the account page with sub's channel form f.
func (s *Server) renderChannelForm(w http.ResponseWriter, r *http.Request, u *store.User, tok string, subID int64, status int, f channelForm) {
	d, err := s.accountView(r.Context(), u, tok)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	for i := range d.Subs {
		if d.Subs[i].ID == subID {
			d.Subs[i].ChannelForm = f
		}
	}
	s.render(w, r, status, "account", "Your feedmail", d)
}

// problem is an ErrBadTarget error in the reader's words.
func problem(err error) string {
	msg := strings.TrimPrefix(err.Error(), channel.ErrBadTarget.Error()+": ")
	if i := strings.LastIndex(msg, channel.ErrBadTarget.Error()+": "); i >= 0 {
		msg = msg[i+len(channel.ErrBadTarget.Error())+2:]
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}
