package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/poller"
)

const pollUsage = "URL"

// pollOutput is what `feedmail poll` prints: the poll's report, and whether
// the feed was new to the store.
type pollOutput struct {
	*poller.Report
	AddedFeed bool `json:"added_feed"`
}

// cmdPoll polls one feed now, whether anyone follows it or not, adding it
// to the store first when it is new, and prints what happened as JSON. A
// feed that answers with an error is not a command error: the report says
// what went wrong and the exit status is 0. Only bad input (exit 2), a feed
// that another process is polling at this moment, or a database failure
// (exit 1) fail the command.
func cmdPoll(ctx context.Context, a *app, args []string) error {
	raw, err := a.oneFeedArg("poll", args)
	if err != nil {
		return err
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	f, created, err := s.EnsureFeed(ctx, raw)
	if err != nil {
		return err
	}
	var after func(context.Context, poller.PollEvent)
	if wsm, err := a.newWebSubManager(s); err == nil {
		after = wsm.OnPoll // record a hub the feed advertises, as the poller role does
	}
	p, err := a.newPoller(s, "cli", after)
	if err != nil {
		return err
	}
	defer p.Close()
	rep, err := p.PollFeed(ctx, f.ID, "manual")
	if err != nil {
		if errors.Is(err, poller.ErrBusy) {
			return fmt.Errorf("%s is being polled by another feedmail process right now; try again in a minute", raw)
		}
		if rep == nil {
			return err
		}
		a.log.Warn("poll not recorded", "url", raw, "err", err)
	}
	return a.printJSON(pollOutput{Report: rep, AddedFeed: created})
}

// feedURLArg checks a feed URL given on the command line with the web
// form's rule (subscribe.NormalizeFeedURL) and, since the URL is polled
// as given, asks for its http:// or https://. It returns the URL with
// surrounding spaces dropped, nothing else changed, or a usage error.
func feedURLArg(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if _, msg := subscribe.NormalizeFeedURL(raw); msg != "" {
		return "", fmt.Errorf("%w: %q: %s", errUsage, raw, msg)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%w: %q is not an http(s) feed URL: give it with https:// or http://", errUsage, raw)
	}
	return raw, nil
}
