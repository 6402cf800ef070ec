package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// A row leaves the outbox by one way: email (mailWay, email.go:
// the transport's chunks over SMTP or into a maildir) or a channel of
// package channel (channelWay, channel.go: one HTTP request per
// row). A way owns only what differs between them: rendering a row,
// handing rows over and judging a failure, and two facts the common steps
// ask of it. Everything else a pass does (claiming, holds for credits,
// waiting for articles, formats, charging, retries with backoff, refunds,
// recording) is the outbox's and the same for every way. wayOf is the one
// place a row's channel picks its way; a new transport that is not a
// channel of package channel is one implementation of way added to
// Outbox.ways.

// way is one way out of the outbox.
type way interface {
	// carries reports whether rows of channel (never "": that is email)
	// go this way.
	carries(channel string) bool
	// domain returns the destination domain of row that destination
	// pauses apply to, lower case; "" for none.
	domain(row *store.OutboxRow) string
	// loadsItem reports whether rendering an item row needs its delivery
	// (item, feed, subscription) and article loaded beforehand.
	loadsItem() bool
	// render makes j ready to hand over (its message or request) from
	// what the pass loaded; the error is classified as a Renderer's.
	render(ctx context.Context, j *job, in *renderInput) error
	// send hands js over, settles their failures (settleFailures) and
	// records those that went out before it returns. It returns the rows
	// to give back unsent because ctx ended, whether ctx ended, and a
	// recording error (which stops the pass).
	send(ctx, rec context.Context, js []*job, ds *destinations) (release []int64, stopped bool, err error)
	// settle settles failed rows of this way, none of them cancelled, by
	// the way's judgement of their causes.
	settle(ctx context.Context, fs []failure, ds *destinations)
}

// renderInput is what a pass loads for every way before rendering.
type renderInput struct {
	// deliveries are the item rows' deliveries by outbox id, for ways
	// that load items; articles the articles of "article" rows by item.
	deliveries map[int64]store.ItemDelivery
	articles   map[int64]store.ItemArticle
	now        time.Time
	// memo is shared by the pass's renders (memo.go).
	memo *renderMemo
}

// wayOf returns the way row goes by: its channel ("" is email) picks the
// first of o.ways that carries it. A channel no way carries is a
// temporary error: another process may know it.
func (o *Outbox) wayOf(row *store.OutboxRow) (way, error) {
	name := row.Channel
	if name == "" {
		name = model.ChannelEmail
	}
	for _, w := range o.ways {
		if w.carries(name) {
			return w, nil
		}
	}
	return nil, fmt.Errorf("%w: no channel %q in this process", mailer.ErrTemporary, row.Channel)
}

// sendWays hands the jobs to their ways, one way after the other in the
// order of o.ways. It returns the rows to give back unsent, whether ctx
// ended, and the first recording error.
func (o *Outbox) sendWays(ctx, rec context.Context, js []*job, ds *destinations) (release []int64, stopped bool, err error) {
	for _, w := range o.ways {
		var mine []*job
		for _, j := range js {
			if j.way == w {
				mine = append(mine, j)
			}
		}
		if len(mine) == 0 {
			continue
		}
		back, st, err := w.send(ctx, rec, mine, ds)
		if err != nil {
			return nil, stopped || st, err
		}
		release, stopped = append(release, back...), stopped || st
	}
	return release, stopped, nil
}
