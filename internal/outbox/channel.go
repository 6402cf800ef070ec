package outbox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"

	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// The channels of package channel (webhook, Slack, Discord, ntfy,
// Matrix: registered in package channels) as one way out of the outbox
// (way.go), beside email (email.go). Their rows take every
// other step as email does: claimed, held for credits, made to wait for
// their article, charged, retried with the same backoff, failed and
// refunded by the same code. The way does three things its own way:
// render (renderChannel: the channel's request for the post, in the
// subscription's format through the code email uses, or for the issue),
// send (deliverChannels: one request each, one target at a time, instead
// of the transport's chunks) and the judgement of a failure (the
// channel's Verdict instead of an SMTP reply: settleChannel). Its rows
// have no destination domain and are never held for a bouncing address.

// channelParallel is how many targets one pass delivers to at once.
const channelParallel = 8

// channelWay is the way out of every channel the configuration's
// registry (OutboxConfig.Channels) holds.
type channelWay struct{ o *Outbox }

func (w *channelWay) carries(name string) bool {
	_, ok := w.o.cfg.Channels.Get(name)
	return ok
}

func (w *channelWay) domain(*store.OutboxRow) string { return "" }

func (w *channelWay) loadsItem() bool { return true }

func (w *channelWay) render(ctx context.Context, j *job, in *renderInput) error {
	return classifyRender(w.o.renderChannel(ctx, j, in))
}

func (w *channelWay) send(ctx, rec context.Context, js []*job, _ *destinations) ([]int64, bool, error) {
	return w.o.deliverChannels(ctx, rec, js)
}

// settle settles each failure by its channel's verdict; one no target
// answered (a render error) is judged as email judges a failure without
// a reply: retried when temporary, else failed.
func (w *channelWay) settle(ctx context.Context, fs []failure, _ *destinations) {
	var plain []failure
	for _, f := range fs {
		if ce := (*channelError)(nil); errors.As(f.cause, &ce) {
			w.o.settleChannel(ctx, f.j, ce)
			continue
		}
		plain = append(plain, f)
	}
	if len(plain) > 0 {
		w.o.settleMail(ctx, plain, nil)
	}
}

// DeliveryID is the idempotency id of row's delivery, the same for every
// attempt: a webhook's webhook-id, a Matrix transaction id.
func DeliveryID(row *store.OutboxRow) string {
	return "feedmail-" + strconv.FormatInt(row.ID, 10)
}

// channelError is a failed channel delivery with its channel's verdict.
type channelError struct {
	v   channel.Verdict
	err error
}

func (e *channelError) Error() string { return e.err.Error() }
func (e *channelError) Unwrap() error { return e.err }

// renderChannel makes j's request for its channel: the post of an item
// row (in its subscription's format, with its article) or the issue of a
// digest row, to the target stored with the subscription or digest now. A
// row whose subscription ended, or whose channel changed since it was
// queued, is cancelled.
func (o *Outbox) renderChannel(ctx context.Context, j *job, in *renderInput) error {
	ch, ok := o.cfg.Channels.Get(j.row.Channel)
	if !ok {
		// Another process may know this channel: retry, don't fail.
		return fmt.Errorf("%w: no channel %q in this process", mailer.ErrTemporary, j.row.Channel)
	}
	d := channel.Delivery{ID: DeliveryID(j.row), At: in.now}
	switch j.row.Kind {
	case store.KindItem:
		it, ok := in.deliveries[j.row.ID]
		if !ok {
			return fmt.Errorf("%w: outbox %d: item or subscription no longer exists", mailer.ErrPermanent, j.row.ID)
		}
		sub := it.Subscription
		if sub.State != store.SubActive || sub.Channel != j.row.Channel {
			return fmt.Errorf("%w: subscription %d is %s by %s", ErrCancelled, sub.ID, sub.State, sub.Channel)
		}
		d.Target = channel.Target{URL: sub.Target, Secret: sub.ChannelSecret}
		p := mailer.PostOf(it, in.articles)
		d.Post = &p
		j.endName = it.Feed.Title
	case store.KindDigest:
		c, err := o.issueContent(ctx, j.row)
		if err != nil {
			return err
		}
		is := mailer.IssueOf(c)
		d.Target = channel.Target{URL: c.Digest.Target, Secret: c.Digest.ChannelSecret}
		d.Issue = &is
		j.digestID, j.endName = c.Digest.ID, c.Digest.Name
	default:
		return fmt.Errorf("%w: outbox %d: a %s cannot go by %s", mailer.ErrPermanent, j.row.ID, j.row.Kind, j.row.Channel)
	}
	req, err := ch.Render(d)
	if err != nil {
		return fmt.Errorf("%w: outbox %d: %w", mailer.ErrPermanent, j.row.ID, err)
	}
	j.ch, j.req = ch, req
	return nil
}

// issueContent loads the issue of a digest row that goes by a channel: a
// missing or empty issue, or one whose digest changed channel, is
// cancelled; a database error is temporary.
func (o *Outbox) issueContent(ctx context.Context, row *store.OutboxRow) (*store.IssueContent, error) {
	if row.IssueID == nil {
		return nil, fmt.Errorf("%w: outbox %d: digest row without an issue", mailer.ErrPermanent, row.ID)
	}
	c, err := o.cfg.Store.DigestIssueContent(ctx, *row.IssueID, mailer.DefaultPerFeed)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("%w: %w", ErrCancelled, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", mailer.ErrTemporary, err)
	case c.Digest.Channel != row.Channel:
		return nil, fmt.Errorf("%w: digest %d now goes by %s", ErrCancelled, c.Digest.ID, c.Digest.Channel)
	}
	for _, f := range c.Feeds {
		if len(f.Items) > 0 {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w: issue %d: %w", ErrCancelled, *row.IssueID, mailer.ErrEmptyDigest)
}

// deliverChannels delivers the channel jobs of a pass: one target's at a
// time in order (a service rate-limits per target), channelParallel
// targets at once. A target that asks to slow down gets its remaining
// deliveries of this pass retried with it. Each delivery made is handed to
// a marker (marker.go) as its 2xx comes, so a crash resends only the few
// whose marks were waiting, as for email. It settles the failures and
// returns the rows to give back because ctx ended, whether it ended, and
// a recording error.
func (o *Outbox) deliverChannels(ctx, rec context.Context, js []*job) (release []int64, stopped bool, err error) {
	if len(js) == 0 {
		return nil, false, nil
	}
	sendCtx, halt := context.WithCancel(ctx)
	defer halt()
	m := o.startMarker(rec, halt)
	results := make([]error, len(js))
	groups := map[string][]int{}
	var order []string
	for i, j := range js {
		k := targetKey(j.req.URL)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	sem := make(chan struct{}, channelParallel)
	var wg sync.WaitGroup
	for _, k := range order {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			o.deliverGroup(sendCtx, js, groups[k], results, m)
		})
	}
	wg.Wait()
	if o.dies("sent") {
		m.crash()
	}
	if err := m.close(); err != nil {
		return nil, false, err
	}
	stopped = ctx.Err() != nil
	var failed []failure
	sent := 0
	for i, j := range js {
		switch err := results[i]; {
		case err == nil:
			sent++
		case stopped && !errors.As(err, new(*channelError)):
			release = append(release, j.row.ID)
		default:
			failed = append(failed, failure{j, err})
		}
	}
	o.settleFailures(rec, failed, nil)
	if sent > 0 {
		o.cfg.Log.Info("deliveries made", "count", sent)
	}
	return release, stopped, nil
}

// deliverGroup delivers the jobs at idx (one target's) in order, each
// result to results and each delivery made to m. After a failure the
// channel judges worth a retry, the rest are not tried in this pass: they
// fail with the same verdict.
func (o *Outbox) deliverGroup(ctx context.Context, js []*job, idx []int, results []error, m *marker) {
	var slow *channelError
	for _, i := range idx {
		j := js[i]
		switch {
		case ctx.Err() != nil:
			results[i] = ctx.Err()
		case slow != nil:
			results[i] = &channelError{v: slow.v, err: fmt.Errorf("not tried: %w", slow.err)}
		default:
			err := j.ch.Deliver(ctx, o.cfg.HTTP, j.req)
			if err == nil {
				if o.dies("accepted") {
					m.crash()
					continue
				}
				o.count(j.row.Kind, "sent")
				m.accepted(ctx, store.SentMark{ID: j.row.ID, UserID: j.row.UserID, MessageID: DeliveryID(j.row), Channel: j.row.Channel})
				continue
			}
			if ctx.Err() != nil {
				results[i] = err
				continue
			}
			ce := &channelError{v: j.ch.Judge(err), err: err}
			results[i] = ce
			if ce.v.Action == channel.Retry {
				slow = ce
			}
		}
	}
}

// targetKey groups requests by target: scheme, host and path.
func targetKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// settleChannel settles one failed channel delivery by its verdict:
// retried with the row's backoff (and not before the service asked),
// failed and refunded, or, for a target that is gone, failed and its
// subscription (or digest) ended with a notice to its owner.
func (o *Outbox) settleChannel(ctx context.Context, j *job, ce *channelError) {
	log := o.cfg.Log.With("outbox", j.row.ID, "kind", j.row.Kind, "channel", j.row.Channel, "verdict", ce.v.Action)
	o.countCause(j.row.Channel, channel.FailureCause(ce.err), failure{j: j, cause: ce.err})
	switch ce.v.Action {
	case channel.Retry:
		o.retryIn(ctx, j, ce, ce.v.After, log)
		return
	case channel.Gone:
		o.fail(ctx, j, "target gone: "+ce.Error(), false)
		o.endGone(ctx, j, ce)
	default:
		o.fail(ctx, j, "target refused: "+ce.Error(), false)
	}
	o.count(j.row.Kind, "failed")
	log.Warn("delivery failed", "err", ce.err)
}

// endGone ends what a gone target served (the row's subscription, or the
// subscriptions of its digest) and queues the owner's notice, once.
func (o *Outbox) endGone(ctx context.Context, j *job, ce *channelError) {
	var err error
	what, id := "sub", int64(0)
	reason := "channel target gone: " + ce.Error()
	switch {
	case j.row.SubscriptionID != nil:
		id = *j.row.SubscriptionID
		_, err = o.cfg.Store.EndSubscription(ctx, id, reason)
	case j.digestID != 0:
		what, id = "digest", j.digestID
		_, err = o.cfg.Store.EndDigestSubscriptions(ctx, id, reason)
	default:
		return
	}
	if err != nil {
		o.cfg.Log.Error("end delivery to a gone target", "outbox", j.row.ID, "err", err)
		return
	}
	name := j.endName
	if name == "" {
		name = j.row.Channel + " delivery " + strconv.FormatInt(id, 10)
	}
	n := notices.TargetGone(&o.cfg.Links, o.cfg.Clock.Now(), j.row.UserID, j.row.Channel, name, ce.Error())
	if _, err := o.cfg.Store.QueueNotice(ctx, j.row.UserID, notices.TargetGoneKey(what, id), n); err != nil {
		o.cfg.Log.Error("queue target-gone notice", "outbox", j.row.ID, "err", err)
	}
}
