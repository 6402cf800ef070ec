package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// A person may get one feed in several places, one subscription per
// channel and target. The commands that act on "the subscription to
// --feed" pick one of them with --channel and --target.

// deliveryPick is the --channel and --target a command was given to pick
// one of a person's deliveries of a feed ("" each: not given).
type deliveryPick struct{ channel, target string }

// deliveryFlags adds --channel and --target to fs, as a picker of one of
// the feed's deliveries; without says what the command does without them.
func deliveryFlags(fs *flag.FlagSet, without string) *deliveryPick {
	p := &deliveryPick{}
	fs.StringVar(&p.channel, "channel", "", "pick the feed's delivery by this channel (email, webhook, slack, …); without --channel and --target: "+without)
	fs.StringVar(&p.target, "target", "", "pick the feed's delivery to this target URL")
	return p
}

// given reports whether --channel or --target was given.
func (p deliveryPick) given() bool { return p.channel != "" || p.target != "" }

// matches reports whether sub is a delivery p names: its channel when
// --channel is given, its target when --target is.
func (p deliveryPick) matches(sub *store.Subscription) bool {
	ch := strings.ToLower(strings.TrimSpace(p.channel))
	target := strings.TrimSpace(p.target)
	if ch != "" && ch != orEmail(sub.Channel) {
		return false
	}
	if target != "" {
		return sub.Target == target || strings.TrimRight(sub.Target, "/") == strings.TrimRight(target, "/")
	}
	return ch != ""
}

// String names the picked delivery for messages, as it was typed.
func (p deliveryPick) String() string {
	var parts []string
	if p.channel != "" {
		parts = append(parts, "--channel "+p.channel)
	}
	if p.target != "" {
		parts = append(parts, "--target "+p.target)
	}
	return strings.Join(parts, " ")
}

// deliveryWords names one delivery for a message: "email" or "webhook
// https://…".
func deliveryWords(sub *store.Subscription) string {
	if sub.Target == "" {
		return orEmail(sub.Channel)
	}
	return sub.Channel + " " + sub.Target
}

// feedDeliveries returns u's subscriptions (not ended) to the feed at
// raw, as typed or as the web form normalizes it: one per delivery; an
// error when there is none.
func feedDeliveries(ctx context.Context, s *store.Store, u *store.User, raw string) ([]store.SubscriptionView, error) {
	subs, err := s.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	norm, _ := subscribe.NormalizeFeedURL(raw)
	var out []store.SubscriptionView
	for i := range subs {
		if subs[i].FeedURL == raw || (norm != "" && subs[i].FeedURL == norm) {
			out = append(out, subs[i])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no subscription to %s", u.Email, raw)
	}
	return out, nil
}

// pickDeliveries returns the deliveries of subs that p names; without
// --channel and --target, all of them when all is true, else the only one
// (several: an error listing them, so that nothing changes by surprise).
func pickDeliveries(subs []store.SubscriptionView, p deliveryPick, all bool, email, feed string) ([]store.SubscriptionView, error) {
	if !p.given() {
		if all || len(subs) == 1 {
			return subs, nil
		}
		words := make([]string, len(subs))
		for i := range subs {
			words[i] = deliveryWords(&subs[i].Subscription)
		}
		return nil, fmt.Errorf("%w: %s gets %s in %d places (%s): pick one with --channel (and --target)",
			errUsage, email, feed, len(subs), strings.Join(words, "; "))
	}
	var out []store.SubscriptionView
	for i := range subs {
		if p.matches(&subs[i].Subscription) {
			out = append(out, subs[i])
		}
	}
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("%s gets %s by no delivery %s", email, feed, p)
	case len(out) > 1:
		return nil, fmt.Errorf("%w: %s gets %s at %d targets of %s: add --target", errUsage, email, feed, len(out), p)
	}
	return out, nil
}
