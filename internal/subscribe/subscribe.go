package subscribe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/mailaddr"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
)

// NoDigestError is returned when Request.DigestName names no digest of the
// person's.
type NoDigestError struct{ Email, Name string }

func (e *NoDigestError) Error() string { return e.Email + " has no digest " + strconv.Quote(e.Name) }

// Request is one subscription asked for. Email and Feed are checked by the
// caller (CheckEmail and FindFeed on the form; the command's own flag
// checks).
type Request struct {
	Email string
	Feed  Found
	// Preset delivers into the person's digest named after it, created in
	// Zone when missing (the signup form). DigestName delivers into an
	// existing digest of the person's (the command). Neither: instant.
	Preset     *digest.Preset
	DigestName string
	// Zone becomes the person's time zone while they have not confirmed
	// ("" leaves it).
	Zone string
	// Confirmed makes the subscription active at once and counts as the
	// person's confirmation (the operator vouches for the address).
	Confirmed bool
	// ConfirmedBy is recorded as how a Confirmed request was confirmed
	// (store.ConfirmedBy*; "" means the operator).
	ConfirmedBy string
	// KeepActive leaves an active delivery (the same channel and target)
	// untouched and emails the person a sign-in link instead (the signup
	// form, which anyone can send). Without it an active delivery takes
	// the request's settings (the command, the API).
	KeepActive bool
	// ByOperator words the confirmation email for a subscription the
	// operator added.
	ByOperator bool
	// SendNewest: the feed's newest post goes out as one email as soon as
	// the subscription is confirmed (at once for a Confirmed request), so
	// the person sees what they signed up for.
	SendNewest bool
	// Controls are the reader's filters and format (store.Controls); they
	// are checked before anything is written and set before the newest
	// post is picked.
	Controls store.Controls
	// Channel is where its posts go, as package channels checked it
	// (zero: email). With the feed it names the subscription: the person's
	// delivery at that channel and target takes the request, their other
	// deliveries of the feed stay as they are.
	Channel model.ChannelChoice
}

// Result is what Subscribe did.
type Result struct {
	User  *store.User
	Feed  *store.Feed
	Title string // the feed's title, or its URL
	// Sub is the subscription, nil when KeepActive found it active.
	Sub *store.Subscription
	// Already is true when KeepActive found an active subscription.
	Already bool
	// Created is true when the subscription is new (not one the person
	// had, active or ended, that took the request's settings).
	Created bool
	// ConfirmationSent is true when a confirmation email was queued now.
	ConfirmationSent bool
	// Trial is the credits granted by a Confirmed request (0: none).
	Trial int64
	// Delivery is how the subscription is delivered, in DeliveryName's
	// words (the log line and the command's JSON).
	Delivery string
}

// DeliveryName returns how logs and the command's JSON name a delivery:
// "instant" for digestName "", else "digest " and the digest's name. The
// confirmation email says it in the person's words instead (notices).
func DeliveryName(digestName string) string {
	if digestName == "" {
		return "instant"
	}
	return "digest " + digestName
}

// Subscribe records the person (created when missing), the feed and the
// subscription, then either confirms it (Confirmed) or queues the email
// that asks the person to. Nothing is active until the person or the
// operator confirms. An address at an IP address is refused whichever
// way it came (a FieldError; see mailaddr.IPDomain).
func (s *Service) Subscribe(ctx context.Context, req Request) (*Result, error) {
	if mailaddr.IPDomain(req.Email) {
		return nil, FieldError{Msg: mailaddr.IPDomainMessage}
	}
	now := s.Clock.Now()
	res := &Result{}
	controls, err := store.CheckControls(req.Controls)
	if err != nil {
		return nil, err
	}
	u, err := s.person(ctx, req)
	if err != nil {
		return nil, err
	}
	res.User = u
	digestID, err := s.namedDigest(ctx, u, req.DigestName, res)
	if err != nil {
		return nil, err
	}
	if res.Feed, res.Title, err = s.feed(ctx, req.Feed); err != nil {
		return nil, err
	}
	if req.KeepActive {
		if done, err := s.alreadyActive(ctx, now, u, req.Channel, res); done || err != nil {
			return res, err
		}
	}
	delivery := notices.DeliveryInstant
	if req.Preset != nil {
		dg, err := s.presetDigest(ctx, u, req.Preset, req.Zone)
		if err != nil {
			return nil, err
		}
		digestID = &dg.ID
		delivery = notices.DeliveryDigest(dg.Name, req.Preset.Label)
		res.Delivery = DeliveryName(dg.Name)
	}
	by := ""
	if req.Confirmed {
		by = cmp.Or(req.ConfirmedBy, store.ConfirmedByOperator)
	}
	if err := s.controlsFirst(ctx, u.ID, res.Feed.ID, req.Channel, controls); err != nil {
		return nil, err
	}
	if res.Sub, err = s.Store.SubscribeDelivery(ctx, u.ID, res.Feed.ID, req.Channel, digestID, by); err != nil {
		return nil, err
	}
	res.Created = res.Sub.Created
	if controls != (store.Controls{}) {
		if res.Sub, err = s.Store.SetSubscriptionControls(ctx, u.ID, res.Sub.ID, controls); err != nil {
			return nil, err
		}
	}
	if err := s.recordForecast(ctx, res.Sub, &req.Feed); err != nil {
		return nil, err
	}
	if err := s.sendNewest(ctx, res.Sub, req); err != nil {
		return nil, err
	}
	switch {
	case res.Sub.State == store.SubActive && req.Confirmed:
		res.Trial, err = s.PersonConfirmed(ctx, u.ID)
	case res.Sub.State == store.SubPending:
		var key string
		var n store.Notice
		if req.ByOperator {
			key, n = notices.ConfirmByOperator(s.Links, now, res.Sub.ID, res.Title, u.Email)
		} else {
			key, n = notices.Confirm(s.Links, now, res.Sub.ID, res.Title, res.Feed.URL, u.Email, delivery)
		}
		res.ConfirmationSent, err = s.Store.QueueNotice(ctx, u.ID, key, n)
	}
	if err == nil && s.Log != nil {
		s.Log.Info("subscription requested", "user", u.ID, "feed", res.Feed.URL, "subscription", res.Sub.ID,
			"state", res.Sub.State, "delivery", res.Delivery, "confirmation_sent", res.ConfirmationSent)
	}
	return res, err
}

// namedDigest returns the id of u's digest called name (nil for "":
// instant) and sets res.Delivery to match; a name u has no digest of is a
// NoDigestError.
func (s *Service) namedDigest(ctx context.Context, u *store.User, name string, res *Result) (*int64, error) {
	res.Delivery = DeliveryName("")
	if name == "" {
		return nil, nil
	}
	dg, err := s.Store.DigestByName(ctx, u.ID, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &NoDigestError{Email: u.Email, Name: name}
	}
	if err != nil {
		return nil, err
	}
	res.Delivery = DeliveryName(dg.Name)
	return &dg.ID, nil
}

// controlsFirst sets c on userID's existing subscription to feedID at
// channel ch, if there is one, before Subscribe confirms it, so that the
// catch-up at confirmation already follows the new filters.
func (s *Service) controlsFirst(ctx context.Context, userID, feedID int64, ch model.ChannelChoice, c store.Controls) error {
	if c == (store.Controls{}) {
		return nil
	}
	subs, err := s.Store.SubscriptionsOfUser(ctx, userID)
	if err != nil {
		return err
	}
	for _, sub := range subs {
		if sub.FeedID == feedID && sameDelivery(&sub.Subscription, ch) {
			_, err := s.Store.SetSubscriptionControls(ctx, userID, sub.ID, c)
			return err
		}
	}
	return nil
}

// recordForecast keeps with sub what the forecast shown for found said it
// costs a month by email, its filters applied (0 when it could not tell):
// the running-low line counts it while the feed's stored posts cannot
// tell a rate (a feed whose posts were not recorded yet).
func (s *Service) recordForecast(ctx context.Context, sub *store.Subscription, found *Found) error {
	fc, err := s.ForecastFor(ctx, found, sub.FeedID, sub.IncludeTerms, sub.ExcludeTerms)
	if err != nil {
		return err
	}
	credits := 0.0
	if !fc.NotEnoughHistory {
		credits = fc.Instant.Expected
	}
	sub.SignupCreditsMonth = credits
	return s.Store.SetSignupForecast(ctx, sub.ID, credits)
}

// sendNewest records or honours Request.SendNewest for sub: a pending
// subscription gets it on confirmation (the store's catch-up), a
// subscription the request activated gets it now.
func (s *Service) sendNewest(ctx context.Context, sub *store.Subscription, req Request) error {
	switch {
	case !req.SendNewest:
		return nil
	case sub.State == store.SubPending:
		return s.Store.SetSendNewest(ctx, sub.ID, true)
	case sub.State == store.SubActive && req.Confirmed:
		return s.Store.SendNewestNow(ctx, sub.ID)
	}
	return nil
}

// person finds or creates the account and sets its time zone while it is
// unconfirmed.
func (s *Service) person(ctx context.Context, req Request) (*store.User, error) {
	u, created, err := s.Store.EnsureUser(ctx, req.Email)
	if err != nil {
		return nil, err
	}
	if req.Zone != "" && (created || u.ConfirmedAt == nil) {
		if err := s.Store.SetUserTimezone(ctx, u.ID, req.Zone); err != nil {
			return nil, fmt.Errorf("set time zone: %w", err)
		}
	}
	return u, nil
}

// feed finds or creates the feed, fills its title and site when unknown,
// records the document the check fetched as its baseline, and returns it
// with the title to show (its URL when it has none). The baseline comes
// before the subscription is recorded, so what the person saw is never
// "theirs" (see store.Subscription.RequestedAt).
func (s *Service) feed(ctx context.Context, f Found) (*store.Feed, string, error) {
	feed, _, err := s.Store.EnsureFeed(ctx, f.URL)
	if err != nil {
		return nil, "", err
	}
	if err := s.Store.SetFeedMetaIfEmpty(ctx, feed.ID, f.Title, f.SiteURL); err != nil {
		return nil, "", err
	}
	if f.doc != nil && s.Baseline != nil && feed.State == store.FeedActive {
		if d := f.doc.document(feed.URL); d != nil {
			if err := s.Baseline.Baselines(ctx, map[int64]newitems.Document{feed.ID: *d}); err != nil {
				return nil, "", fmt.Errorf("record what %s holds now: %w", f.URL, err)
			}
		}
	}
	title := feed.Title
	if title == "" {
		title = f.Title
	}
	if title == "" {
		title = feed.URL
	}
	return feed, title, nil
}

// alreadyActive reports whether the person already gets res.Feed at
// channel ch; if so it queues the "you already get it" email with a
// sign-in link.
func (s *Service) alreadyActive(ctx context.Context, now time.Time, u *store.User, ch model.ChannelChoice, res *Result) (bool, error) {
	subs, err := s.Store.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		return false, fmt.Errorf("subscriptions of user %d: %w", u.ID, err)
	}
	for _, sub := range subs {
		if sub.FeedID == res.Feed.ID && sub.State == store.SubActive && sameDelivery(&sub.Subscription, ch) {
			res.Already = true
			key, n := notices.AlreadySubscribed(s.Links, now, sub.ID, u.ID, res.Title, u.Email)
			_, err := s.Store.QueueNotice(ctx, u.ID, key, n)
			return true, err
		}
	}
	return false, nil
}

// presetDigest returns the person's digest for a preset, named after it,
// creating it in zone when they have none. An existing one is used as it is.
func (s *Service) presetDigest(ctx context.Context, u *store.User, p *digest.Preset, zone string) (*store.Digest, error) {
	name := PresetName(p)
	dg, err := s.Store.DigestByName(ctx, u.ID, name)
	if err == nil {
		return dg, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	sched, err := digest.ParseSchedule(p.Spec, zone)
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", p.Key, err)
	}
	return s.Store.SetDigest(ctx, u.ID, name, sched)
}

// PresetName is the digest name a preset creates: "Daily", "Weekly", ….
func PresetName(p *digest.Preset) string {
	switch p.Key {
	case "daily":
		return "Daily"
	case "weekly":
		return "Weekly"
	}
	l := p.Label
	if l == "" {
		l = p.Key
	}
	return strings.ToUpper(l[:1]) + l[1:]
}

// sameDelivery reports whether sub goes to channel c (zero: email) at
// c's target: the delivery a request for c names.
func sameDelivery(sub *store.Subscription, c model.ChannelChoice) bool {
	if c.Channel == "" || c.Channel == model.ChannelEmail {
		return sub.Channel == "" || sub.Channel == model.ChannelEmail
	}
	return sub.Channel == c.Channel && sub.Target == c.Target
}
