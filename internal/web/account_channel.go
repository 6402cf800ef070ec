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
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// channelForm is the channel form of a subscription or a digest: the
// channel and target as stored or as typed. Secret is a webhook's signing
// secret, shown to its owner (their receiver needs it); HasToken says a
// token is stored without showing it. Error says what is wrong with what
// was typed; Result what the test delivery got.
type channelForm struct {
	Name, Target, Secret string
	HasToken             bool
	Error, Result        string
	ResultOK             bool
}

// channelFormOf is the form of a stored channel.
func channelFormOf(c model.ChannelChoice) channelForm {
	f := channelForm{Name: c.Channel, Target: c.Target}
	if f.Name == "" {
		f.Name = model.ChannelEmail
	}
	if f.Name == webhook.Name {
		f.Secret = c.Secret
	} else {
		f.HasToken = c.Secret != ""
	}
	return f
}

// InstantWords is the delivery choice "each post on its own" in the
// words of the channel it goes by: "Each post in its own email", "…its
// own webhook call", "…its own Slack message".
func (f channelForm) InstantWords() string {
	switch f.Name {
	case "", model.ChannelEmail:
		return "Each post in its own email"
	case webhook.Name:
		return "Each post in its own webhook call"
	}
	name := f.Name
	if titled, ok := channelTitles[name]; ok {
		name = titled
	}
	return "Each post in its own " + name + " message"
}

// channelTitles are the channels' names as their services write them.
var channelTitles = map[string]string{"slack": "Slack", "discord": "Discord", "matrix": "Matrix", "ntfy": "ntfy"}

// channelSubject is what a channel form is about: one of the person's
// subscriptions or digests. It is made per request by the handler that
// loaded (and so owns-checked) it.
type channelSubject struct {
	cur    model.ChannelChoice
	tok    string
	anchor string // the account page's section to go back to
	// save stores a checked choice; again re-renders the account page
	// with f in place of the subject's channel form.
	save  func(ctx context.Context, c model.ChannelChoice) error
	again func(w http.ResponseWriter, r *http.Request, status int, f channelForm)
	// sample is the test delivery's content (a Post or an Issue) at now;
	// sent says it was delivered, in the reader's words.
	sample func(now time.Time) channel.Delivery
	sent   string
}

// maxChannelField is the longest target or token read from the form: one
// more than a target may be, so that a longer one is refused (by
// channel.CheckURL) rather than cut short.
const maxChannelField = channel.MaxTargetLen + 1

// chosenChannel reads a posted channel form over the stored cur: channel,
// target and token, or remove=1 to go back to email. A token left empty
// keeps the stored secret when the channel and target stay. It returns
// the form as typed and the choice checked by channels.Choose (plain http
// targets with a token only when allowPrivate).
func chosenChannel(r *http.Request, cur model.ChannelChoice, allowPrivate bool) (channelForm, model.ChannelChoice, error) {
	name := clip(strings.TrimSpace(r.PostForm.Get("channel")), 40)
	target := clip(strings.TrimSpace(r.PostForm.Get("target")), maxChannelField)
	secret := clip(strings.TrimSpace(r.PostForm.Get("token")), maxChannelField)
	if r.PostForm.Get("remove") != "" {
		name, target, secret = model.ChannelEmail, "", ""
	}
	if secret == "" && name == cur.Channel && target == cur.Target {
		secret = cur.Secret // unchanged: keep the token or signing secret
	}
	choice, err := channels.Choose(name, target, secret, allowPrivate)
	return channelForm{Name: name, Target: target}, choice, err
}

// saveChannel answers a posted channel form of subj: stored and back to
// the account page, or the page again (422) with the form as typed and
// the problem next to it, nothing changed.
func (s *Server) saveChannel(w http.ResponseWriter, r *http.Request, subj channelSubject) {
	f, choice, err := chosenChannel(r, subj.cur, s.Config.AllowPrivateNetworks)
	if err == nil {
		err = subj.save(r.Context(), choice)
	}
	switch {
	case errors.Is(err, channel.ErrBadTarget):
		f.Error = problem(err)
		subj.again(w, r, http.StatusUnprocessableEntity, f)
	case errors.Is(err, store.ErrDeliveryExists):
		f.Error = "You already get this feed there, in another of its deliveries below."
		subj.again(w, r, http.StatusConflict, f)
	case errors.Is(err, store.ErrNotFound):
		s.notFound(w, r)
	case err != nil:
		s.serverError(w, r, err)
	default:
		backToAccount(w, r, subj.tok, "channel", subj.anchor)
	}
}

// testChannel delivers subj's sample to its channel at once (not
// charged) and shows what the target answered.
func (s *Server) testChannel(w http.ResponseWriter, r *http.Request, subj channelSubject) {
	f := channelFormOf(subj.cur)
	ch, known := channels.All().Get(subj.cur.Channel)
	if !known {
		f.Error = "Test deliveries go to a webhook, chat or push channel; email is tested by the next delivery."
		subj.again(w, r, http.StatusUnprocessableEntity, f)
		return
	}
	d := subj.sample(s.Clock.Now())
	d.Target = channel.Target{URL: subj.cur.Target, Secret: subj.cur.Secret}
	if err := s.testDelivery(r.Context(), ch, d); err != nil {
		f.Error = "The test delivery failed: " + err.Error() + " (" + ch.Judge(err).Action.String() + ")."
		subj.again(w, r, http.StatusBadGateway, f)
		return
	}
	f.Result, f.ResultOK = subj.sent, true
	subj.again(w, r, http.StatusOK, f)
}

// testDelivery renders and delivers d, a test with its own id, through
// the guarded client, within 15 seconds.
func (s *Server) testDelivery(ctx context.Context, ch channel.Channel, d channel.Delivery) error {
	d.ID = "feedmail-test-" + strconv.FormatInt(d.At.UnixNano(), 36)
	req, err := ch.Render(d)
	if err != nil {
		return err
	}
	hc := channel.NewHTTPClient(fetcher.Config{BaseURL: s.Config.BaseURL, AllowPrivate: s.Config.AllowPrivateNetworks,
		Timeout: 15 * time.Second})
	defer hc.CloseIdleConnections()
	return ch.Deliver(ctx, hc, req)
}

// samplePost is a test delivery's post, titled title, at now.
func (s *Server) samplePost(title string, now time.Time) channel.Post {
	return channel.Post{Feed: channel.Feed{Title: "feedmail", URL: s.Config.BaseURL}, Title: title,
		Link: s.Config.BaseURL, Published: now, Seen: now, HTML: "<p>This is a test delivery: your posts will look like this.</p>",
		Text: "This is a test delivery: your posts will look like this."}
}

// channelArgs is the argument of the account page's "channel-form" of a
// subscription (kind "sub") or a digest: the form with its actions, the
// prefix of its element ids and what one delivery is in words.
func channelArgs(d *accountData, kind string, id int64, f channelForm) map[string]any {
	tok, sid := d.Token, strconv.FormatInt(id, 10)
	if kind == "sub" {
		return map[string]any{"ID": id, "Form": f, "Prefix": "ch", "What": "post",
			"Save": links.PathOf("accountChannel", tok, sid), "Test": links.PathOf("accountChannelTest", tok, sid)}
	}
	return map[string]any{"ID": id, "Form": f, "Prefix": "dch", "What": "issue",
		"Save": links.PathOf("accountDigestChannel", tok, sid), "Test": links.PathOf("accountDigestChannelTest", tok, sid)}
}

// accountAgain re-renders the account page with status, after place put
// a form as typed (or a test's result) in place.
func (s *Server) accountAgain(w http.ResponseWriter, r *http.Request, u *store.User, tok string, status int, place func(*accountData)) {
	d, err := s.accountView(r.Context(), u, tok)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	place(d)
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
