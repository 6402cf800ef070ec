package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/web"
	"github.com/feedmail/feedmail/poller"
)

// newWebSubManager builds the WebSub subscriber for this process: hub
// requests go through the guarded client (FEEDMAIL_ALLOW_PRIVATE_NETWORKS
// applies to hubs too), callbacks are FEEDMAIL_BASE_URL/websub/{token}.
//
// The poller role uses it so: Config.AfterPoll = m.OnPoll (hub discovery
// after each poll), and m.Run alongside the poller's Run (subscriptions,
// renewals at half the lease, retries, unsubscriptions).
func (a *app) newWebSubManager(s *store.Store) (*poller.WebSubManager, error) {
	if a.tokens == nil {
		return nil, errors.New("websub: the link secret is not loaded (open the store first)")
	}
	l := a.links()
	return poller.NewWebSubManager(poller.WebSubConfig{
		Store:    s,
		HTTP:     fetcher.NewHTTPClient(fetcher.Config{BaseURL: a.cfg.BaseURL, AllowPrivate: a.cfg.AllowPrivateNetworks}),
		Callback: l.WebSubCallback,
		BaseURL:  a.cfg.BaseURL,
		Clock:    a.clock,
		Log:      a.log.With("part", "websub"),
		Metrics:  a.metrics,
	})
}

// mountWebSub serves the WebSub callback (GET and POST /websub/{token}) and
// the publishers' pings (GET|POST /ping, POST /RPC2).
//
// Pushed content, the baseline a signup fetched (Poller.Baselines) and the
// poll of a pinged blacklisted feed go through a
// poller of the web role's own (owner "<host>-<pid>-web-…"): Ingest takes no
// lease, and PollFeed claims the feed like any poll, so it never fetches a
// feed another poller holds. Its hub discovery is recorded like the poller
// role's; the poller role's renewal loop sends the requests.
func mountWebSub(a *app, srv *web.Server) error {
	s, err := a.openStore(context.Background())
	if err != nil {
		return err
	}
	wsm, err := a.newWebSubManager(s)
	if err != nil {
		return err
	}
	p, err := a.newPoller(s, "web", wsm.OnPoll)
	if err != nil {
		return err
	}
	srv.SetBaseline(p)
	srv.SetMover(p)
	srv.MountWebSub(web.WebSubOptions{Ingest: func(ctx context.Context, feedID int64, body []byte, contentType string) error {
		_, err := p.Ingest(ctx, feedID, body, contentType)
		if errors.Is(err, newitems.ErrNotAFeed) || errors.Is(err, newitems.ErrInvalidFeed) {
			return fmt.Errorf("%w: %w", web.ErrUnusableContent, err)
		}
		return err
	}})
	srv.MountPings(web.PingOptions{PollNow: func(ctx context.Context, feedID int64, reason string) error {
		rep, err := p.PollFeed(ctx, feedID, "ping")
		if err != nil {
			return err
		}
		if !rep.Polled {
			return fmt.Errorf("not polled: %s", rep.Error)
		}
		return nil
	}})
	return nil
}
