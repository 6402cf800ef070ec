package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/channel/channels"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// channelFlags adds --channel, --target and --token to fs and returns
// their choice, checked by package channels (a usage error when it is
// wrong; nothing is stored then; plain http targets with a token only when
// allowPrivate).
func channelFlags(fs *flag.FlagSet, allowPrivate bool) func() (model.ChannelChoice, error) {
	name := fs.String("channel", "", "deliver by email (default), webhook, slack, discord, ntfy or matrix")
	target := fs.String("target", "", "the channel's URL (webhook, Slack or Discord webhook, ntfy topic, Matrix homeserver#!room:server)")
	token := fs.String("token", "", "the channel's access token (ntfy: optional; matrix: required)")
	return func() (model.ChannelChoice, error) {
		if *name == "" && *target == "" && *token == "" {
			return model.ChannelChoice{}, nil
		}
		c, err := channels.Choose(*name, *target, *token, allowPrivate)
		if err != nil {
			return c, fmt.Errorf("%w: --channel %s: %w", errUsage, *name, err)
		}
		return c, nil
	}
}

// addChannelJSON adds a subscription's channel to a command's JSON: its
// name and target, and a webhook's signing secret, which the command
// prints this once (the receiver needs it to verify deliveries). Other
// secrets (tokens the person gave) are never printed.
func addChannelJSON(out map[string]any, sub *store.Subscription) {
	if sub == nil || sub.Channel == "" || sub.Channel == model.ChannelEmail {
		out["channel"] = model.ChannelEmail
		return
	}
	out["channel"], out["target"] = sub.Channel, sub.Target
	if sub.Channel == webhook.Name {
		out["signing_secret"] = sub.ChannelSecret
	}
}

// channelHTTP is the client channels deliver with (channel.NewHTTPClient).
func (a *app) channelHTTP() *http.Client {
	return channel.NewHTTPClient(fetcher.Config{BaseURL: a.cfg.BaseURL, AllowPrivate: a.cfg.AllowPrivateNetworks})
}

// setDigestChannel sets d's channel when the command chose one, and
// updates d to match.
func setDigestChannel(ctx context.Context, s *store.Store, d *store.Digest, c model.ChannelChoice) error {
	if c.Channel == "" {
		return nil
	}
	if err := s.SetDigestChannel(ctx, d.UserID, d.ID, c); err != nil {
		return err
	}
	d.Channel, d.Target, d.ChannelSecret = c.Channel, c.Target, c.Secret
	return nil
}

// orEmail is a stored channel name, "email" for "".
func orEmail(name string) string {
	if name == "" {
		return model.ChannelEmail
	}
	return name
}
