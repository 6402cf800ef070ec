package poller

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// polledFeed is a finished poll waiting to be written.
type polledFeed struct {
	feed   *store.Feed // the claimed row (shared with the claim's batch, not copied)
	rec    store.PollRecord
	rep    *Report
	parsed *newitems.Feed
	header http.Header
	kind   OutcomeKind
	// fetchFailure is the fetcher's kind of a fetch that got no answer
	// (timeout, connection, dns, tls …); "" when one came.
	fetchFailure string
	// own: write it on its own (it ends or moves the feed).
	own     bool
	elapsed time.Duration
	byIdent map[string]*store.NewItem
}

// triggerDue is the trigger of a pass's polls: the feed came due.
const triggerDue = "due"

// pollClaimed polls one feed claimed by PollDue and hands the result to w.
func (p *Poller) pollClaimed(ctx context.Context, j claimedFeed, w *pollWriter, q *runningPass) {
	var host store.Host
	if j.host != nil {
		host = *j.host
	}
	pl, err := p.pollOne(ctx, j.feed, host, triggerDue, q)
	if err != nil {
		p.log.Warn("poll failed", "feed", j.feed.ID, "url", j.feed.URL, "err", err)
		return
	}
	if pl == nil {
		return // given back
	}
	if pl.own {
		wctx, cancel := pollWriteContext(ctx)
		defer cancel()
		p.recordOne(wctx, pl)
		return
	}
	w.add(pl)
}

// pollWriteContext detaches a write from the caller's cancellation (a poll that
// finished is recorded even during shutdown) but bounds it; retries through
// a database restart stop before the lease ends anyway (recordPolls).
func pollWriteContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
}

// pollOne fetches claimed feed f and works out everything to write. It
// returns nil (and has given the feed back) when no request was made. q is
// the pass the poll belongs to (nil: a poll on its own: see acquire).
func (p *Poller) pollOne(ctx context.Context, f *store.Feed, hostRow store.Host, trigger string, q *runningPass) (*polledFeed, error) {
	host := f.HostKey()
	now := p.clk.Now()
	if budget, ok := p.leaseBudget(f, now); ok && budget < 0 {
		p.giveBack(ctx, f.ID, placeInLine(f, now), "", giveBackLeaseShort)
		return nil, nil
	}
	if until, why, ok := p.backedOff(host, hostRow); ok {
		p.giveBack(ctx, f.ID, p.afterBackoff(now, until), backedOffReason(host, until, why), giveBackBackedOff)
		return nil, nil
	}
	release, why := p.acquire(ctx, f, host, now, q)
	if release == nil {
		p.giveBack(ctx, f.ID, placeInLine(f, p.clk.Now()), "", why)
		return nil, nil
	}
	// The host may have been backed off while we waited for a slot.
	if until, why, ok := p.limiter.BackedOff(host); ok {
		release()
		now := p.clk.Now()
		p.giveBack(ctx, f.ID, p.afterBackoff(now, until), backedOffReason(host, until, why), giveBackBackedOff)
		return nil, nil
	}
	fetchedAt := p.clk.Now()
	if p.m != nil && trigger == triggerDue {
		// The poll's lag: how late its request went out against the feed's
		// next_poll_at (a feed given back above is not polled, not counted).
		p.m.PollLag.Observe(fetchedAt.Sub(f.NextPollAt).Seconds())
	}
	resp, ferr := p.client.Fetch(ctx, fetcher.Request{
		URL: f.URL, ValidatorURL: f.ValidatorURL, ETag: f.ETag, LastModified: f.LastModified,
		Subscribers: f.SubscriberCount,
	})
	release()
	if fetcher.KindOf(ferr) == fetcher.KindCanceled || (ferr != nil && ctx.Err() != nil) {
		p.giveBack(ctx, f.ID, p.clk.Now(), "", giveBackStopping)
		return nil, nil
	}
	return p.evaluate(ctx, f, hostRow, resp, ferr, trigger, fetchedAt)
}

// placeInLine is when a claimed feed given back unpolled, because its
// host stayed busy past the lease's budget or no worker reached it in
// time, is due again: when it was due (now at the latest), so that the
// next pass, oldest first, takes it before the feeds that came due after
// it. Due a minute later instead, it went behind every feed coming due
// meanwhile, and a host kept busy by hung requests starved the same feeds
// pass after pass. A give-back comes only after such a wait, so the feed
// is not claimed again and again at once.
func placeInLine(f *store.Feed, now time.Time) time.Time {
	if f.NextPollAt.IsZero() || f.NextPollAt.After(now) {
		return now
	}
	return f.NextPollAt
}

// backedOff reports whether host is backed off, by this process's limiter
// or by the hosts table.
func (p *Poller) backedOff(host string, row store.Host) (time.Time, string, bool) {
	if until, why, ok := p.limiter.BackedOff(host); ok {
		return until, why, true
	}
	if row.BackoffUntil != nil && row.BackoffUntil.After(p.clk.Now()) {
		p.limiter.BackOff(host, *row.BackoffUntil, row.BackoffReason)
		return *row.BackoffUntil, row.BackoffReason, true
	}
	return time.Time{}, "", false
}

// backedOffReason is the poll reason of a feed given back because its host
// is backed off until until, for why.
func backedOffReason(host string, until time.Time, why string) string {
	return "host " + host + " backed off until " + until.UTC().Format(time.RFC3339) + ": " + why
}

// afterBackoff is when a feed of a backed-off host is due: the end of the
// back-off plus up to 10 % of the wait.
func (p *Poller) afterBackoff(now, until time.Time) time.Time {
	wait := until.Sub(now)
	return until.Add(time.Duration(float64(wait) * jitterFraction * p.jitter()))
}

// evaluate turns a fetch into the record to write, in named steps:
//
//  1. parse the body when it is new (pure);
//  2. selectItems: which parsed items are new (a store read);
//  3. Classify: outcome, feed columns, schedule (pure);
//  4. recordHostBackoff after a 429 or a 503 with Retry-After (a store
//     write outside the poll's transaction, see there);
//  5. followMove after a permanent redirect: move the feed, or merge it
//     into the feed that has its new URL (a store read to find that feed);
//  6. the notices of a feed that this poll ends (410, blacklisting).
//
// Everything else is written by the poll's recording transaction
// (store.RecordPoll or RecordPolls) from the returned polledFeed. fetchedAt
// is when the request went out (a ping queued since asks for one more poll).
func (p *Poller) evaluate(ctx context.Context, f *store.Feed, hostRow store.Host, resp *fetcher.Response, ferr error, trigger string, fetchedAt time.Time) (*polledFeed, error) {
	now := p.clk.Now()
	a := Answer{Resp: resp, Err: ferr}
	if needsParse(f, resp, ferr) {
		a.Parsed, a.ParseErr = newitems.Parse(resp.Body, resp.ContentType, resp.FinalURL)
	}
	var items []store.NewItem
	var edits []store.ItemEdit
	if a.Parsed != nil {
		var err error
		// The fetch is done: a database away for a moment must not cost
		// it (the feed would stay leased, its posts late).
		_, err = store.RetryTransient(ctx, p.leaseLeft(f), func(ctx context.Context) error {
			var err error
			items, edits, a.Delivered, err = p.selectItems(ctx, *f, a.Parsed, now)
			return err
		})
		if err != nil {
			p.giveBack(ctx, f.ID, now.Add(time.Minute), "", giveBackDBError)
			return nil, err
		}
	}
	c := Classify(f, time.Duration(hostRow.MinIntervalSeconds)*time.Second, a, now, p.jitter())
	if c.Result.Kind == Refused {
		p.log.Warn("feed refused: on a private or local network; FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1 allows them",
			"feed", f.ID, "url", f.URL, "err", ferr)
	}
	if c.Result.Kind == OK && c.Warning != "" {
		p.log.Info("feed parsed with a warning", "feed", f.ID, "url", f.URL, "partial", c.Partial,
			"items", len(a.Parsed.Items), "warning", c.Warning)
	}
	if until := c.Decision.HostBackoffUntil; !until.IsZero() {
		p.recordHostBackoff(ctx, f, resp.Status, until)
	}
	pl := &polledFeed{feed: f, rep: newReport(f, resp, trigger), parsed: a.Parsed, header: resp.Header,
		kind: c.Result.Kind, elapsed: resp.Elapsed}
	if ferr != nil {
		pl.fetchFailure = string(fetcher.KindOf(ferr))
	}
	pl.rec.Items, pl.rec.Edits = items, edits
	if c.MovedTo != "" {
		p.followMove(ctx, pl, &c)
	}
	switch {
	case c.NewlyGone:
		pl.rec.End = p.endNotice(*f, true)
		pl.own = true
	case c.NewlyBlacklisted:
		pl.rec.End = p.endNotice(*f, false)
		pl.own = true
	}
	pl.complete(&c, resp, now)
	pl.rec.FetchedAt = fetchedAt
	return pl, nil
}

// recordHostBackoff backs f's host off until until, in this process's
// limiter and in the hosts table. The table is written at once, outside
// the poll's transaction: the back-off is about the host, not the feed, so
// it must hold even when the poll's write waits in a batch or is lost with
// its lease, and other processes must learn of it before they ask the host
// again. A failure is logged: this process still honours the back-off.
func (p *Poller) recordHostBackoff(ctx context.Context, f *store.Feed, status int, until time.Time) {
	host := f.HostKey()
	why := strconv.Itoa(status) + " from " + f.URL
	p.limiter.BackOff(host, until, why)
	if err := p.st.BackOffHost(ctx, host, until, why); err != nil {
		p.log.Warn("recording host back-off failed", "host", host, "err", err)
	}
}

// followMove handles a successful poll that was permanently redirected to
// c.MovedTo. It reads whether a feed with that URL exists (before the
// poll's transaction, which does the move or merge): if one does, this
// feed is merged into it (its items are not recorded: the surviving feed
// delivers them); if none does, this feed takes the new URL. Either way the
// poll is written on its own. A failed lookup is logged and the feed stays.
func (p *Poller) followMove(ctx context.Context, pl *polledFeed, c *Classification) {
	f, to := pl.feed, c.MovedTo
	target, err := p.st.FeedByURL(ctx, to)
	switch {
	case err == nil && target.ID != f.ID:
		pl.rec.MergeInto = target.ID
		pl.rec.Items, pl.rec.Edits = nil, nil
		c.State.State = store.FeedMerged
		c.State.PollReason = "moved permanently to " + to + ": merged into feed " + strconv.FormatInt(target.ID, 10)
		pl.rep.MergedInto = target.ID
		pl.own = true
	case errors.Is(err, store.ErrNotFound):
		c.State.URL = to
		c.State.PollReason += "; moved permanently to " + to
		pl.rep.MovedTo = to
		pl.own = true
	case err != nil:
		p.log.Warn("looking up a redirect target failed", "feed", f.ID, "url", to, "err", err)
	}
}

// complete fills the poll's record and report from its classification.
func (pl *polledFeed) complete(c *Classification, resp *fetcher.Response, now time.Time) {
	rep, rec := pl.rep, &pl.rec
	rep.Outcome = outcomeName(c.Result.Kind)
	if c.Partial {
		rep.Outcome = outcomePartial
	}
	if pl.parsed != nil {
		rep.Title, rep.HubURL, rep.SelfURL = pl.parsed.Title, pl.parsed.HubURL, pl.parsed.SelfURL
	}
	rec.FeedID = pl.feed.ID
	rec.At = now
	rec.URL = pl.feed.URL
	rec.Status = resp.Status
	rec.Outcome = rep.Outcome
	rec.Conditional = resp.Conditional
	rec.Bytes = resp.WireBytes
	rec.ElapsedMS = int(resp.Elapsed.Milliseconds())
	rec.State = c.State
	rec.Fold = c.Fold
	if c.LastError != "" {
		rep.Error = c.LastError
	}
	if c.Warning != "" && c.Result.Kind == OK {
		// A 304 or an unchanged body carries the warning in the feed's
		// state only: its poll_log line is not about a document read now.
		rep.Warning = c.Warning
		rec.Reason = warningLogLine(c.Warning, c.Partial, c.State.PollReason)
	}
	rep.State = c.State.State
	rep.Reason = c.State.PollReason
	if c.State.State == StateActive {
		rep.NextPollAt = c.State.NextPollAt.UTC().Format(time.RFC3339)
	}
}
