package poller

import (
	"context"
	"fmt"

	"github.com/feedmail/feedmail/internal/recovery"
	"github.com/feedmail/feedmail/internal/store"
)

// MoveReport is what MoveFeed did.
type MoveReport struct {
	From          string `json:"from"`
	To            string `json:"to"`
	PostsInCommon int    `json:"posts_in_common"`
	// Warning says why the target may not be the same feed (no post in
	// common); the move was made all the same when asked.
	Warning string `json:"warning,omitempty"`
	Moved   bool   `json:"moved"`
	Readers int    `json:"readers"` // subscriptions moved
	Told    int    `json:"told"`    // notices queued
}

// MoveFeed moves every reader of the feed at fromURL to toURL, the act of
// the operator (kind store.MoveOperator) or of the feed's verified
// publisher (store.MoveOwner). toURL is fetched once and must be a feed;
// the same-feed check (posts in common) is made and reported, and with
// dryRun nothing else is done. Each reader is told once, with undo.
func (p *Poller) MoveFeed(ctx context.Context, fromURL, toURL, kind string, dryRun bool) (*MoveReport, error) {
	from, err := p.st.FeedByURL(ctx, fromURL)
	if err != nil {
		return nil, fmt.Errorf("poller: move: %w", err)
	}
	if from.State != store.FeedActive && from.State != store.FeedBlacklisted {
		return nil, fmt.Errorf("%w: %s is %s", ErrNotMovable, fromURL, from.State)
	}
	k, err := p.known(ctx, from, false)
	if err != nil {
		return nil, err
	}
	c, err := recovery.Check(ctx, k, p.recoveryFetch(from), toURL)
	if err != nil {
		return nil, fmt.Errorf("poller: move to %s: %w", toURL, err)
	}
	rep := &MoveReport{From: from.URL, To: c.URL, PostsInCommon: c.PostsInCommon}
	if c.PostsInCommon == 0 {
		rep.Warning = "no post in common with " + from.URL + ": make sure this is the same feed"
	}
	if dryRun {
		return rep, nil
	}
	why := "The operator of this feedmail moved it."
	if kind == store.MoveOwner {
		why = "Its publisher moved it."
	}
	rep.Readers, rep.Told, err = p.moveReaders(ctx, from, &c, c.URL, store.FeedMove{Kind: kind, FoundBy: "moved by hand",
		PostsInCommon: c.PostsInCommon, Reason: why}, why)
	if err != nil {
		return rep, err
	}
	rep.Moved = true
	return rep, nil
}
