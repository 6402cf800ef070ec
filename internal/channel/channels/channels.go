// Package channels is the one place the channels other than email are
// registered: a new channel is one package under internal/channel and one
// line in [All]. It must not hold any channel's code.
package channels

import (
	"fmt"
	"strings"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/discord"
	"github.com/feedmail/feedmail/internal/channel/matrix"
	"github.com/feedmail/feedmail/internal/channel/ntfy"
	"github.com/feedmail/feedmail/internal/channel/slack"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/model"
)

// All returns the registry of every channel this build delivers by.
func All() *channel.Registry {
	return channel.NewRegistry(
		webhook.New(),
		slack.New(),
		discord.New(),
		ntfy.New(),
		matrix.New(),
	)
}

// Choose checks a person's choice of channel name with its target URL and
// secret (a token; a webhook makes its own signing secret when none is
// given) and returns it as it is stored. Email takes neither: it goes to
// the person's address. A secret made here is marked Generated, so that a
// delivery the person has already keeps its own. A target whose requests
// carry a credential (channel.CarriesCredential) over plain http is
// refused unless allowPrivate (FEEDMAIL_ALLOW_PRIVATE_NETWORKS): then it
// may be a private address, which sending checks (channel.Send). The error
// is for that person, and wraps channel.ErrBadTarget.
func Choose(name, target, secret string, allowPrivate bool) (model.ChannelChoice, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || name == channel.Email {
		if strings.TrimSpace(target) != "" || strings.TrimSpace(secret) != "" {
			return model.ChannelChoice{}, fmt.Errorf("%w: email goes to the account's address; it takes no target or token", channel.ErrBadTarget)
		}
		return model.ChannelChoice{Channel: channel.Email}, nil
	}
	r := All()
	c, ok := r.Get(name)
	if !ok {
		return model.ChannelChoice{}, fmt.Errorf("%w: unknown channel %q (one of %s)", channel.ErrBadTarget, name, strings.Join(r.Names(), ", "))
	}
	t, err := c.Check(channel.Target{URL: target, Secret: secret})
	if err != nil {
		return model.ChannelChoice{}, err
	}
	if !allowPrivate && channel.PlainHTTP(t.URL) && channel.CarriesCredential(c, t) {
		return model.ChannelChoice{}, fmt.Errorf("%w: a %s target over plain http:// would send its token (or secret URL) "+
			"readable by anyone on the way; use https://", channel.ErrBadTarget, name)
	}
	return model.ChannelChoice{Channel: name, Target: t.URL, Secret: t.Secret,
		Generated: strings.TrimSpace(secret) == "" && t.Secret != ""}, nil
}
