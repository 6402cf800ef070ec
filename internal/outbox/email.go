package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// mailWay is email as a way out of the outbox (way.go): rows are
// rendered to messages, handed to the Transport in chunks of ChunkSize
// (sendAll), each acceptance recorded as it comes (marker.go), and a failure is judged
// by its SMTP reply (settleMail, package bounce), pausing the destination
// domain for the sender's own problems (destinations.go). Paid
// email to an address marked bouncing waits.
type mailWay struct {
	o *Outbox
	// customItem: the configuration replaces the item renderer (tests),
	// and item rows are rendered without their delivery.
	customItem bool
}

func (w *mailWay) carries(channel string) bool { return channel == model.ChannelEmail }

func (w *mailWay) domain(row *store.OutboxRow) string { return store.AddressDomain(row.Address) }

func (w *mailWay) loadsItem() bool { return !w.customItem }

func (w *mailWay) send(ctx, rec context.Context, js []*job, ds *destinations) ([]int64, bool, error) {
	return w.o.sendAll(ctx, rec, js, ds)
}

func (w *mailWay) settle(ctx context.Context, fs []failure, ds *destinations) {
	w.o.settleMail(ctx, fs, ds)
}

// render composes j's message: an item row from its delivery (and
// article), any other kind by the renderer of its kind; then the
// complaint-routing headers (feedback.go) and the envelope sender, the
// row's own bounce address.
func (w *mailWay) render(ctx context.Context, j *job, in *renderInput) error {
	o := w.o
	var err error
	var feed, owner int64
	if j.row.Kind == store.KindItem && !w.customItem {
		d, ok := in.deliveries[j.row.ID]
		if !ok {
			return fmt.Errorf("%w: outbox %d: item or subscription no longer exists", mailer.ErrPermanent, j.row.ID)
		}
		feed, owner = d.Feed.ID, d.Owner
		j.msg, err = o.renderItem(j.row, j.user, d, in)
	} else {
		r := o.renderers[j.row.Kind]
		if r == nil {
			// Another process may know this kind: retry, don't fail.
			return fmt.Errorf("%w: no renderer for outbox kind %q in this process", mailer.ErrTemporary, j.row.Kind)
		}
		j.msg, err = r(ctx, j.row)
		if err == nil && j.msg == nil {
			err = fmt.Errorf("%w: renderer for %q returned no message", mailer.ErrPermanent, j.row.Kind)
		}
		err = classifyRender(err)
	}
	if err != nil || j.msg == nil {
		return err
	}
	if err := mailer.SetFeedbackHeaders(j.msg, mailer.FeedbackID(feed, owner, j.row.Kind), o.cfg.Links.ReturnAddress(j.row.ID)); err != nil {
		return fmt.Errorf("%w: outbox %d: %w", mailer.ErrPermanent, j.row.ID, err)
	}
	return o.setReturnPath(j)
}

// sendAll sends in chunks of ChunkSize while a marker (marker.go) records
// each accepted email as its reply comes: a crash between acceptance and
// recording duplicates only the few emails whose marks were waiting, and
// while marks cannot be recorded no further email is handed over. Between
// chunks the failures are judged, and email to a domain a chunk got paused
// waits for the pause instead of being sent. It returns the rows to give
// back unsent, and whether ctx stopped the sending.
func (o *Outbox) sendAll(ctx, rec context.Context, send []*job, ds *destinations) (release []int64, stopped bool, err error) {
	sendCtx, halt := context.WithCancel(ctx)
	defer halt()
	m := o.startMarker(rec, halt)
	for from := 0; from < len(send); from += o.cfg.ChunkSize {
		chunk := send[from:min(from+o.cfg.ChunkSize, len(send))]
		if stopped = stopped || ctx.Err() != nil; stopped || m.failed() != nil {
			for _, j := range chunk {
				release = append(release, j.row.ID)
			}
			continue
		}
		if chunk = o.putBack(rec, chunk, ds, o.cfg.Clock.Now()); len(chunk) == 0 {
			continue
		}
		var back []int64
		back, stopped = o.sendChunk(sendCtx, ctx, rec, chunk, ds, m)
		release = append(release, back...)
	}
	if err := m.close(); err != nil {
		return nil, stopped, err
	}
	return release, stopped, nil
}

// sendChunk hands one chunk to the transport, giving each acceptance to m
// as it comes, then settles the chunk's failures. sendCtx is the send
// (cancelled when m stops); ctx the pass's. It returns the rows to give
// back (not sent because ctx ended) and whether ctx ended; after m stopped
// it settles nothing (sendAll returns m's error).
func (o *Outbox) sendChunk(sendCtx, ctx, rec context.Context, chunk []*job, ds *destinations, m *marker) (release []int64, stopped bool) {
	msgs := make([]*mail.Msg, len(chunk))
	for i, j := range chunk {
		msgs[i] = j.msg
	}
	began := o.cfg.Clock.Now()
	results := make([]error, len(chunk))
	mailer.SendEach(sendCtx, o.cfg.Transport, msgs, func(i int, err error) {
		if results[i] = err; err != nil {
			return
		}
		j := chunk[i]
		if o.dies("accepted") {
			m.crash()
			return
		}
		o.count(j.row.Kind, "sent")
		m.accepted(sendCtx, store.SentMark{ID: j.row.ID, UserID: j.row.UserID, MessageID: j.msg.GetMessageID(),
			NoBounces: j.user != nil && j.user.HardBounces == 0})
	})
	if o.dies("sent") {
		m.crash()
	}
	if m.failed() != nil {
		return nil, false
	}
	stopped = ctx.Err() != nil
	var failed []failure
	sent, kinds := 0, map[string]int{}
	for i, j := range chunk {
		err := results[i]
		switch {
		case err == nil:
			sent++
			kinds[j.row.Kind]++
		case stopped && !errors.Is(err, mailer.ErrPermanent):
			release = append(release, j.row.ID)
		default:
			failed = append(failed, failure{j, err})
		}
	}
	o.settleFailures(rec, failed, ds)
	o.clearDestinations(rec, chunk, results, ds, began)
	if sent > 0 {
		o.cfg.Log.Info("emails sent", "count", sent, "item", kinds[store.KindItem], "digest", kinds[store.KindDigest],
			"notice", kinds[store.KindNotice])
	}
	return release, stopped
}

// settleMail is email's judgement of failed rows: each failure is judged
// by its cause (judgeSend) and settled as decide says: retried with the row's backoff,
// failed (refunded; a hard bounce only when the reader's address is dead)
// or, for the sender's own problems, put back behind a pause of its
// destination (slowDestination). Every failure the server answered for is
// recorded in mail_events (source smtp), in one statement.
func (o *Outbox) settleMail(ctx context.Context, fs []failure, ds *destinations) {
	var events []store.MailEvent
	blocked := map[string][]judged{}
	for _, f := range fs {
		o.countCause(model.ChannelEmail, mailer.FailureCause(f.cause), f)
		v, reply := judgeSend(f.cause)
		act := decide(v, errors.Is(f.cause, mailer.ErrTemporary))
		if act == slowDestination && f.j.domain == "" {
			act = retryLater // no domain to pause (cannot happen over SMTP)
		}
		if reply != nil {
			id := f.j.row.ID
			events = append(events, store.MailEvent{At: o.cfg.Clock.Now(), Domain: f.j.domain, Source: store.MailSourceSMTP,
				Kind: store.MailFailure, Reason: string(v.Reason), Party: string(v.Party), Severity: string(v.Severity),
				Status: replyStatus(reply), OutboxID: &id, Detail: reply.Msg})
		}
		switch act {
		case slowDestination:
			blocked[f.j.domain] = append(blocked[f.j.domain], judged{failure: f, v: v, reply: reply})
		case retryLater:
			o.retry(ctx, f.j, f.cause, v)
		default:
			o.fail(ctx, f.j, f.cause.Error(), act == failHard)
			o.count(f.j.row.Kind, "failed")
			o.cfg.Log.Warn("email failed", "outbox", f.j.row.ID, "kind", f.j.row.Kind, "to", f.j.row.Address, "err", f.cause,
				"reason", v.Reason, "party", v.Party, "bounce", act == failHard)
		}
	}
	if err := o.cfg.Store.RecordMailEvents(ctx, events); err != nil {
		o.cfg.Log.Error("record mail events", "count", len(events), "err", err)
	}
	for _, domain := range sortedKeys(blocked) {
		o.slowDestination(ctx, domain, blocked[domain], ds)
	}
}
