package api

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/channel/channels"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// createRequest is the body of POST /api/v1/subscriptions.
type createRequest struct {
	FeedURL  string  `json:"feed_url"`
	DigestID *int64  `json:"digest_id"`
	Include  *string `json:"include"`
	Exclude  *string `json:"exclude"`
	Format   *string `json:"format"`
	// Newest: the feed's newest post goes out at once (1 credit).
	Newest bool `json:"newest"`
	channelRequest
}

// channelRequest is where a subscription's posts go: a channel, its
// target and token (see package channels). On POST it names the delivery
// (all absent: email); on PATCH all absent leaves it as it is.
type channelRequest struct {
	Channel *string `json:"channel"`
	Target  *string `json:"target"`
	Token   *string `json:"token"`
}

// choice checks the request's channel (the CLI's and account page's
// checks, channels.Choose); set is false when the request names none.
func (c channelRequest) choice(allowPrivate bool) (choice model.ChannelChoice, set bool, p problem, bad bool) {
	if c.Channel == nil && c.Target == nil && c.Token == nil {
		return choice, false, p, false
	}
	str := func(v *string) string {
		if v == nil {
			return ""
		}
		return *v
	}
	choice, err := channels.Choose(str(c.Channel), str(c.Target), str(c.Token), allowPrivate)
	if err != nil {
		field := "target"
		if c.Channel != nil && strings.Contains(err.Error(), "unknown channel") {
			field = "channel"
		}
		return choice, true, invalid(field, err.Error()), true
	}
	return choice, true, p, false
}

// keepSecret gives ch the stored signing secret when the request chose
// the webhook it already had, at the same target, without a token of its
// own: a PATCH that repeats the channel must not break the receiver's
// signature checks. An answer shows the secret only when it differs from
// the stored one (the client has that one already).
func (c channelRequest) keepSecret(ch *model.ChannelChoice, oldChannel, oldTarget, oldSecret string) {
	if c.Token != nil || ch.Channel != webhook.Name || oldChannel != webhook.Name || ch.Target != oldTarget || oldSecret == "" {
		return
	}
	ch.Secret = oldSecret
}

// createSubscription is POST /api/v1/subscriptions: the signup form's
// checks (the address is a web address; it is fetched and must be a feed,
// or a page advertising exactly one; filters and format are valid), then
// package subscribe's Subscribe for the account, active at once: the
// token stands for the account, as its account page does. A subscription
// is one delivery of a feed: a channel and target the account does not
// get the feed at yet is a new subscription (201, the webhook's signing
// secret shown this once); the delivery it has already (the same channel
// and target; email: the account's address) takes the new settings and
// answers 200, keeping its signing secret unless a token is given or it
// had ended. The
// account's other deliveries of the feed are left as they are.
func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request, u *store.User) {
	var req createRequest
	if !readJSON(w, r, &req) {
		return
	}
	typed := strings.TrimSpace(req.FeedURL)
	if _, msg := subscribe.NormalizeFeedURL(typed); msg != "" {
		writeProblem(w, invalid("feed_url", msg))
		return
	}
	controls, err := store.CheckControls(store.Controls{Include: req.Include, Exclude: req.Exclude, Format: req.Format})
	if err != nil {
		writeProblem(w, invalid(controlField(req.Include, req.Exclude, err), err.Error()))
		return
	}
	ch, _, p, bad := req.choice(s.AllowPrivate)
	if bad {
		writeProblem(w, p)
		return
	}
	digestName := ""
	if req.DigestID != nil {
		dg, err := s.Store.AccountDigest(r.Context(), u.ID, *req.DigestID)
		if isNotFound(err) {
			writeProblem(w, notFound("digest", *req.DigestID))
			return
		}
		if err != nil {
			s.fail(w, r, "digest_id", err)
			return
		}
		digestName = dg.Name
	}
	found, ok := s.findFeed(w, r, u, typed)
	if !ok {
		return
	}
	res, err := s.Subs.Subscribe(r.Context(), subscribe.Request{Email: u.Email, Feed: found, DigestName: digestName,
		Confirmed: true, ConfirmedBy: store.ConfirmedByAccount, SendNewest: req.Newest, Controls: controls, Channel: ch})
	var fe subscribe.FieldError
	if errors.As(err, &fe) { // the account's own address is refused (an IP address)
		writeProblem(w, problem{Type: typeInvalid, Title: "The account's address cannot be used",
			Status: http.StatusUnprocessableEntity, Detail: fe.Msg})
		return
	}
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	status := http.StatusOK // a subscription the account had takes the new settings
	if res.Created {
		status = http.StatusCreated
	}
	// The secret is shown when it is new to the client: a new delivery's,
	// or one made now for a delivery revived.
	fresh := res.Created || (ch.Generated && res.Sub.ChannelSecret == ch.Secret)
	s.writeSubscription(w, r, u, res.Sub.ID, status, fresh && ch.Channel != "")
}

// findFeed checks the typed address as the signup form does
// (subscribe.FindTyped). It answers a problem itself (422: what is wrong
// with the feed, or the feeds a page advertises; 429 when the account's
// or the client's budget of new feeds is spent) and returns false.
func (s *Server) findFeed(w http.ResponseWriter, r *http.Request, u *store.User, typed string) (subscribe.Found, bool) {
	var budget subscribe.Budget
	if s.FetchBudget != nil {
		budget = s.FetchBudget(r, u)
	}
	found, err := s.Subs.FindTyped(r.Context(), typed, budget)
	var fe subscribe.FieldError
	var be *subscribe.BudgetError
	if errors.As(err, &be) {
		secs := max(1, int(math.Ceil(be.Wait.Seconds())))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeProblem(w, problem{Status: http.StatusTooManyRequests, RetryAfter: secs, Field: "feed_url", Detail: be.Error()})
		return found, false
	}
	if errors.As(err, &fe) {
		writeProblem(w, problem{Type: typeFeed, Title: "The feed cannot be used", Status: http.StatusUnprocessableEntity,
			Field: "feed_url", Detail: fe.Msg})
		return found, false
	}
	if err != nil {
		s.fail(w, r, "feed_url", err)
		return found, false
	}
	if len(found.Candidates) > 0 {
		p := problem{Type: typeSeveral, Title: "The page advertises several feeds", Status: http.StatusUnprocessableEntity,
			Field: "feed_url", Detail: "pick one of the candidates and send its url as feed_url"}
		for _, c := range found.Candidates {
			p.Candidates = append(p.Candidates, candidate{URL: c.URL, Title: c.Title})
		}
		writeProblem(w, p)
		return found, false
	}
	return found, true
}

// controlField names the member a store.CheckControls error is about.
func controlField(include, exclude *string, err error) string {
	msg := err.Error()
	switch {
	case include != nil && strings.Contains(msg, ": include:"):
		return "include"
	case exclude != nil && strings.Contains(msg, ": exclude:"):
		return "exclude"
	}
	return "format"
}

// patchRequest is the body of PATCH /api/v1/subscriptions/{id}; a member
// left out is left as it is.
type patchRequest struct {
	Include     *string             `json:"include"`
	Exclude     *string             `json:"exclude"`
	Format      *string             `json:"format"`
	DigestID    optional[int64]     `json:"digest_id"`    // null: instant delivery
	Paused      *bool               `json:"paused"`       // false resumes
	PausedUntil optional[time.Time] `json:"paused_until"` // with paused true; null or absent: until resumed
	channelRequest
}

// patchSubscription is PATCH /api/v1/subscriptions/{id}: filters,
// format, delivery (a digest of the account's, or null for instant) and
// pause. Everything is checked before anything changes.
func (s *Server) patchSubscription(w http.ResponseWriter, r *http.Request, u *store.User) {
	id, ok := pathID(w, r, "subscription")
	if !ok {
		return
	}
	var req patchRequest
	if !readJSON(w, r, &req) {
		return
	}
	c := store.Controls{Include: req.Include, Exclude: req.Exclude, Format: req.Format}
	if _, err := store.CheckControls(c); err != nil {
		writeProblem(w, invalid(controlField(req.Include, req.Exclude, err), err.Error()))
		return
	}
	if p, bad := checkPause(req, s.Clock.Now()); bad {
		writeProblem(w, p)
		return
	}
	ch, chSet, p, bad := req.choice(s.AllowPrivate)
	if bad {
		writeProblem(w, p)
		return
	}
	old, err := s.Store.AccountSubscriptionView(r.Context(), u.ID, id)
	if err != nil {
		if isNotFound(err) {
			writeProblem(w, notFound("subscription", id))
			return
		}
		s.fail(w, r, "", err)
		return
	}
	req.keepSecret(&ch, old.Channel, old.Target, old.ChannelSecret)
	newSecret := chSet && ch.Secret != old.ChannelSecret
	if req.DigestID.Set && !req.DigestID.Null {
		if _, err := s.Store.AccountDigest(r.Context(), u.ID, req.DigestID.V); err != nil {
			if isNotFound(err) {
				writeProblem(w, notFound("digest", req.DigestID.V))
				return
			}
			s.fail(w, r, "digest_id", err)
			return
		}
	}
	if err := s.applyPatch(r, u, id, req, c); err != nil {
		s.fail(w, r, "", err)
		return
	}
	if chSet {
		if err := s.Store.SetSubscriptionChannel(r.Context(), u.ID, id, ch); err != nil {
			s.fail(w, r, "", err)
			return
		}
	}
	s.writeSubscription(w, r, u, id, http.StatusOK, newSecret)
}

// checkPause returns the problem with req's pause members, if any.
func checkPause(req patchRequest, now time.Time) (problem, bool) {
	switch {
	case req.Paused != nil && !*req.Paused && req.PausedUntil.Set && !req.PausedUntil.Null:
		return invalid("paused_until", "paused_until goes with paused: true"), true
	case req.Paused == nil && req.PausedUntil.Set:
		return invalid("paused", "say paused: true with paused_until"), true
	case req.PausedUntil.Set && !req.PausedUntil.Null && !req.PausedUntil.V.After(now):
		return invalid("paused_until", "paused_until must be in the future"), true
	}
	return problem{}, false
}

// applyPatch makes the checked changes of req to u's subscription id.
func (s *Server) applyPatch(r *http.Request, u *store.User, id int64, req patchRequest, c store.Controls) error {
	ctx := r.Context()
	if c != (store.Controls{}) {
		if _, err := s.Store.SetSubscriptionControls(ctx, u.ID, id, c); err != nil {
			return err
		}
	}
	if req.DigestID.Set {
		var dg *int64
		if !req.DigestID.Null {
			dg = &req.DigestID.V
		}
		if err := s.Store.SetSubscriptionDelivery(ctx, u.ID, id, dg); err != nil {
			return err
		}
	}
	switch {
	case req.Paused == nil:
	case *req.Paused:
		var until *time.Time
		if req.PausedUntil.Set && !req.PausedUntil.Null {
			until = &req.PausedUntil.V
		}
		return s.Store.Pause(ctx, u.ID, id, until)
	default:
		_, err := s.Store.Resume(ctx, u.ID, id)
		return err
	}
	return nil
}

// isNotFound reports whether err is the store's ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
