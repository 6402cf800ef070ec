package poller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// ErrBusy is returned by PollFeed when another worker holds the feed's lease
// (it is being polled right now).
var ErrBusy = errors.New("poller: feed is being polled by another worker")

// Report says what one poll did, for `feedmail poll`, logs and hooks. It is
// JSON-encoded as is.
type Report struct {
	FeedID  int64  `json:"feed_id"`
	Trigger string `json:"trigger,omitempty"` // why it was polled: "due", "manual", "ping", "websub", …
	URL     string `json:"url"`
	// FinalURL is the URL of the last hop when redirects were followed.
	FinalURL  string     `json:"final_url,omitempty"`
	Redirects []Redirect `json:"redirects,omitempty"`
	// MovedTo is the feed's new URL after a permanent redirect to a feed.
	MovedTo string `json:"moved_to,omitempty"`
	// MergedInto is the feed this one was merged into (its URL moved to a
	// feed that already existed).
	MergedInto  int64      `json:"merged_into,omitempty"`
	Status      int        `json:"status"`
	Outcome     string     `json:"outcome"`
	Conditional bool       `json:"conditional"`
	Sent        Validators `json:"validators_sent"`
	Received    Validators `json:"validators_received"`
	Bytes       int64      `json:"bytes"`
	ElapsedMS   int64      `json:"elapsed_ms"`
	Title       string     `json:"title,omitempty"`
	// NewItems are the items seen for the first time and delivered.
	NewItems []ReportItem `json:"new_items"`
	// Ignored are the items seen for the first time and not delivered, with
	// the rule that ignored them.
	Ignored     []ReportItem `json:"ignored_items"`
	Emails      int64        `json:"emails_queued"`
	DigestItems int64        `json:"digest_items_queued"`
	Notices     int          `json:"notices_queued,omitempty"`
	NextPollAt  string       `json:"next_poll_at,omitempty"` // RFC 3339
	Reason      string       `json:"reason"`
	State       string       `json:"state"`
	// HubURL and SelfURL are the WebSub links the document declares.
	HubURL  string `json:"hub,omitempty"`
	SelfURL string `json:"self,omitempty"`
	// Error is what went wrong: the fetch or parse failure, a host back-off
	// that kept the poll from happening, a lost lease.
	Error string `json:"error,omitempty"`
	// Polled is false when no request was made (host backed off, shutdown).
	Polled bool `json:"polled"`
}

// Validators are an ETag and a Last-Modified value, as sent or received.
type Validators struct {
	ETag         string `json:"etag"`
	LastModified string `json:"last_modified"`
}

// Redirect is one redirect followed.
type Redirect struct {
	Status int    `json:"status"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// ReportItem is an item in a Report.
type ReportItem struct {
	Title string `json:"title"`
	Link  string `json:"link,omitempty"`
	Rule  string `json:"rule,omitempty"`
}

// polled is a finished poll waiting to be written.
type polledFeed struct {
	feed   *store.Feed // the claimed row (shared with the claim's batch, not copied)
	rec    store.PollRecord
	rep    *Report
	parsed *newitems.Feed
	header http.Header
	kind   OutcomeKind
	// own: write it on its own (it ends or moves the feed).
	own     bool
	elapsed time.Duration
	byIdent map[string]*store.NewItem
}

// pollClaimed polls one feed claimed by PollDue and hands the result to w.
func (p *Poller) pollClaimed(ctx context.Context, j claimedFeed, w *pollWriter) {
	var host store.Host
	if j.host != nil {
		host = *j.host
	}
	pl, err := p.pollOne(ctx, j.feed, host, "due")
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
		out, err := p.st.RecordPoll(wctx, p.cfg.Owner, pl.rec)
		p.finish(wctx, pl, out, err)
		return
	}
	w.add(pl)
}

// pollWriteContext detaches a write from the caller's cancellation (a poll that
// finished is recorded even during shutdown) but bounds it.
func pollWriteContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// giveBack returns a claimed feed without polling it.
func (p *Poller) giveBack(ctx context.Context, id int64, next time.Time, reason string) {
	wctx, cancel := pollWriteContext(ctx)
	defer cancel()
	if _, err := p.st.DeferFeed(wctx, id, p.cfg.Owner, next, reason); err != nil {
		p.log.Warn("giving back a feed failed", "feed", id, "err", err)
		return
	}
	p.unhold(id)
}

// pollOne fetches claimed feed f and works out everything to write. It
// returns nil (and has given the feed back) when no request was made.
func (p *Poller) pollOne(ctx context.Context, f *store.Feed, hostRow store.Host, trigger string) (*polledFeed, error) {
	host := f.HostKey()
	now := p.clk.Now()
	if f.LeaseUntil != nil && now.Add(p.client.Config().Timeout+5*time.Second).After(*f.LeaseUntil) {
		p.giveBack(ctx, f.ID, now.Add(time.Minute), "")
		return nil, nil
	}
	if until, why, ok := p.backedOff(host, hostRow); ok {
		p.giveBack(ctx, f.ID, p.afterBackoff(now, until), backedOffReason(host, until, why))
		return nil, nil
	}
	release, err := p.acquireHost(ctx, f, host, now)
	if err != nil {
		next := p.clk.Now()
		if ctx.Err() == nil {
			next = next.Add(time.Minute) // the host was busy for too long
		}
		p.giveBack(ctx, f.ID, next, "")
		return nil, nil
	}
	// The host may have been backed off while we waited for a slot.
	if until, why, ok := p.limiter.BackedOff(host); ok {
		release()
		now := p.clk.Now()
		p.giveBack(ctx, f.ID, p.afterBackoff(now, until), backedOffReason(host, until, why))
		return nil, nil
	}
	resp, ferr := p.client.Fetch(ctx, fetcher.Request{
		URL: f.URL, ValidatorURL: f.ValidatorURL, ETag: f.ETag, LastModified: f.LastModified,
		Subscribers: f.SubscriberCount,
	})
	release()
	if fetcher.KindOf(ferr) == fetcher.KindCanceled || (ferr != nil && ctx.Err() != nil) {
		p.giveBack(ctx, f.ID, p.clk.Now(), "")
		return nil, nil
	}
	return p.evaluate(ctx, f, hostRow, resp, ferr, trigger)
}

// acquireHost takes a request slot for f's host. Waiting for a slot of a
// busy host must not outlast the lease: another process could then claim
// the feed and fetch it too. (A free slot is taken without making a timer.)
func (p *Poller) acquireHost(ctx context.Context, f *store.Feed, host string, now time.Time) (func(), error) {
	if ctx.Err() == nil {
		if release, ok := p.limiter.TryAcquire(host); ok {
			return release, nil
		}
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if f.LeaseUntil != nil {
		actx, cancel = context.WithTimeout(ctx, f.LeaseUntil.Sub(now)-p.client.Config().Timeout-5*time.Second)
	}
	defer cancel()
	return p.limiter.Acquire(actx, host)
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

// evaluate turns a fetch into the record to write.
func (p *Poller) evaluate(ctx context.Context, f *store.Feed, hostRow store.Host, resp *fetcher.Response, ferr error, trigger string) (*polledFeed, error) {
	now := p.clk.Now()
	pl := &polledFeed{feed: f, header: resp.Header, elapsed: resp.Elapsed}
	rep := &Report{
		FeedID: f.ID, Trigger: trigger, URL: f.URL, Status: resp.Status, Conditional: resp.Conditional,
		Sent:     Validators{ETag: resp.SentETag, LastModified: resp.SentLastModified},
		Received: Validators{ETag: resp.ETag, LastModified: resp.LastModified},
		Bytes:    resp.WireBytes, ElapsedMS: resp.Elapsed.Milliseconds(), Polled: true,
		NewItems: []ReportItem{}, Ignored: []ReportItem{},
	}
	if resp.FinalURL != f.URL {
		rep.FinalURL = resp.FinalURL
	}
	for _, h := range resp.Redirects {
		rep.Redirects = append(rep.Redirects, Redirect{Status: h.Status, From: h.From, To: h.To})
	}
	pl.rep = rep

	res := Result{Status: resp.Status, Header: resp.Header, Elapsed: resp.Elapsed}
	var lastError string
	switch {
	case ferr != nil:
		res.Kind, res.Failure = Failure, failureText(ferr)
		lastError = pollOneLine(ferr.Error())
	case resp.Status == http.StatusNotModified:
		res.Kind = NotModified
	case resp.Status >= 200 && resp.Status <= 299:
		if f.PrimedAt != nil && f.BodyHash != "" && resp.BodyHash == f.BodyHash {
			res.Kind = Unchanged
			break
		}
		parsed, perr := newitems.Parse(resp.Body, resp.ContentType, resp.FinalURL)
		if perr != nil {
			res.Kind, res.Failure = Failure, parseFailureText(perr)
			lastError = pollOneLine(perr.Error())
			break
		}
		res.Kind = OK
		pl.parsed = parsed
	default:
		res.Kind = HTTPError
		lastError = strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status)
	}
	pl.kind = res.Kind
	rep.Outcome = outcomeName(res.Kind)

	// Validators, kept per final URL; taken from every 200 that is a feed
	// and from every 304 that carries new ones.
	st := store.FeedState{
		ValidatorURL: f.ValidatorURL, ETag: f.ETag, LastModified: f.LastModified, BodyHash: f.BodyHash,
		LastPolledAt: &now, LastStatus: resp.Status, LastError: lastError,
		LastElapsedMS: int(resp.Elapsed.Milliseconds()), LastSuccessAt: f.LastSuccessAt, PrimedAt: f.PrimedAt,
		LastNewItemAt: f.LastNewItemAt, NewestItemDate: f.NewestItemDate,
	}
	switch res.Kind {
	case OK, Unchanged:
		st.ValidatorURL, st.ETag, st.LastModified, st.BodyHash = resp.FinalURL, resp.ETag, resp.LastModified, resp.BodyHash
	case NotModified:
		if resp.ETag != "" || resp.LastModified != "" {
			st.ValidatorURL = resp.FinalURL
		}
		if resp.ETag != "" {
			st.ETag = resp.ETag
		}
		if resp.LastModified != "" {
			st.LastModified = resp.LastModified
		}
	}
	res.HasETag, res.HasLastModified = st.ETag != "", st.LastModified != ""
	if res.Kind.success() {
		st.LastSuccessAt = &now
	}

	// New items.
	if pl.parsed != nil {
		rep.Title, rep.HubURL, rep.SelfURL = pl.parsed.Title, pl.parsed.HubURL, pl.parsed.SelfURL
		st.Title, st.SiteURL = pl.parsed.Title, pl.parsed.SiteURL
		items, deliver, err := p.selectItems(ctx, *f, pl.parsed, now)
		if err != nil {
			p.giveBack(ctx, f.ID, now.Add(time.Minute), "")
			return nil, err
		}
		pl.rec.Items = items
		res.NewItems = deliver > 0
		if f.PrimedAt == nil {
			st.PrimedAt = &now
			if f.LastNewItemAt == nil {
				if d := newestItemDate(pl.parsed.Items, now); d != nil && !d.After(now) {
					st.LastNewItemAt = d
				}
			}
		} else if deliver > 0 {
			st.LastNewItemAt = &now
		}
		if d := newestItemDate(pl.parsed.Items, now); d != nil && (st.NewestItemDate == nil || d.After(*st.NewestItemDate)) {
			st.NewestItemDate = d
		}
	}

	hist := History{
		ConsecutiveErrors: f.ConsecutiveErrors, FirstSeenAt: f.CreatedAt,
		WebSubActive:    store.WebSubActive(f, now),
		HostMinInterval: time.Duration(hostRow.MinIntervalSeconds) * time.Second,
	}
	if f.ErrorsSince != nil {
		hist.ErrorsSince = *f.ErrorsSince
	}
	if f.LastNewItemAt != nil {
		hist.LastNewItemAt = *f.LastNewItemAt
	}
	dec := Schedule(hist, res, now, p.jitter())
	if !dec.HostBackoffUntil.IsZero() {
		host := f.HostKey()
		why := strconv.Itoa(resp.Status) + " from " + f.URL
		p.limiter.BackOff(host, dec.HostBackoffUntil, why)
		if err := p.st.BackOffHost(ctx, host, dec.HostBackoffUntil, why); err != nil {
			p.log.Warn("recording host back-off failed", "host", host, "err", err)
		}
	}
	st.State, st.NextPollAt, st.PollReason = dec.State, dec.NextPoll, dec.Reason
	st.ConsecutiveErrors = dec.ConsecutiveErrors
	if !dec.ErrorsSince.IsZero() {
		es := dec.ErrorsSince
		st.ErrorsSince = &es
	}

	// Permanent redirects.
	if res.Kind.success() && resp.PermanentURL != "" && resp.PermanentURL != f.URL {
		target, err := p.st.FeedByURL(ctx, resp.PermanentURL)
		switch {
		case err == nil && target.ID != f.ID:
			pl.rec.MergeInto = target.ID
			pl.rec.Items = nil
			st.State = store.FeedMerged
			st.PollReason = "moved permanently to " + resp.PermanentURL + ": merged into feed " + strconv.FormatInt(target.ID, 10)
			rep.MergedInto = target.ID
			pl.own = true
		case errors.Is(err, store.ErrNotFound):
			st.URL = resp.PermanentURL
			st.PollReason += "; moved permanently to " + resp.PermanentURL
			rep.MovedTo = resp.PermanentURL
			pl.own = true
		case err != nil:
			p.log.Warn("looking up a redirect target failed", "feed", f.ID, "url", resp.PermanentURL, "err", err)
		}
	}

	// Gone, blacklisted: tell the subscribers.
	switch {
	case st.State == StateGone && f.State != store.FeedGone:
		pl.rec.End = p.endNotice(*f, pl.parsed, true)
		pl.own = true
	case st.State == StateBlacklisted && f.State != store.FeedBlacklisted:
		pl.rec.End = p.endNotice(*f, pl.parsed, false)
		pl.own = true
	}

	pl.rec.FeedID = f.ID
	pl.rec.At = now
	pl.rec.URL = f.URL
	pl.rec.Status = resp.Status
	pl.rec.Outcome = rep.Outcome
	pl.rec.Conditional = resp.Conditional
	pl.rec.Bytes = resp.WireBytes
	pl.rec.ElapsedMS = int(resp.Elapsed.Milliseconds())
	pl.rec.State = st
	pl.rec.Fold = repeatsLastLine(f, res.Kind, lastError, resp, &st, now)
	if lastError != "" {
		rep.Error = lastError
	}
	rep.State = st.State
	rep.Reason = st.PollReason
	if st.State == StateActive {
		rep.NextPollAt = st.NextPollAt.UTC().Format(time.RFC3339)
	}
	return pl, nil
}

// LogRunMax is the longest a run of identical polls goes without a new
// poll_log line: with PollLogRetention (7 days) every feed polled in the
// last day keeps a line to show.
const LogRunMax = 24 * time.Hour

// repeatsLastLine reports whether this poll repeats the feed's newest
// poll_log line, so that it is counted (store.PollRecord.Fold) instead of
// logged: a 304 after a 304, neither with an error, without redirects
// (so the URL stays) or a change of state, while that line is a poll's and
// less than LogRunMax old. Such a poll also changes no column but those
// store.PollRecord.Fold allows: a 304 leaves the body, its hash, the items'
// dates and the title alone, and with no error before or now the error
// streak is empty on both sides (checked too, as Fold promises it).
func repeatsLastLine(f *store.Feed, kind OutcomeKind, lastError string, resp *fetcher.Response, st *store.FeedState, now time.Time) bool {
	return kind == NotModified && lastError == "" && f.LastStatus == http.StatusNotModified && f.LastError == "" &&
		len(resp.Redirects) == 0 && st.State == f.State && st.URL == "" &&
		f.ConsecutiveErrors == 0 && f.ErrorsSince == nil && st.ConsecutiveErrors == 0 && st.ErrorsSince == nil &&
		f.LoggedAt != nil && now.Sub(*f.LoggedAt) < LogRunMax
}

// selectItems finds the items of parsed that the feed has not recorded
// (one query) and decides which are delivered: none on the feed's first
// successful parse, else newitems.Select's verdicts.
func (p *Poller) selectItems(ctx context.Context, f store.Feed, parsed *newitems.Feed, now time.Time) ([]store.NewItem, int, error) {
	if len(parsed.Items) == 0 {
		return nil, 0, nil
	}
	if f.PrimedAt == nil {
		// First parse: everything is recorded as seen and nothing mailed, so
		// there is no need to ask which items are known (one that is, say,
		// copied here by a merge is skipped by the insert's ON CONFLICT).
		out := make([]store.NewItem, len(parsed.Items))
		for i, it := range parsed.Items {
			out[i] = toStoreItem(it, store.IgnoredFirstPoll)
		}
		return out, 0, nil
	}
	ids := make([]string, len(parsed.Items))
	for i, it := range parsed.Items {
		ids[i] = it.Identity
	}
	known, err := p.st.KnownIdentities(ctx, f.ID, ids)
	if err != nil {
		return nil, 0, err
	}
	var cands []newitems.Item
	for _, it := range parsed.Items {
		if !known[it.Identity] {
			cands = append(cands, it)
		}
	}
	if len(cands) == 0 {
		return nil, 0, nil
	}
	out := make([]store.NewItem, len(cands))
	deliver := 0
	var newest time.Time
	if f.NewestItemDate != nil {
		newest = *f.NewestItemDate
	}
	for i, v := range newitems.Select(cands, parsed.Items, newest, now) {
		out[i] = toStoreItem(v.Item, string(v.Ignored))
		if v.Deliver() {
			deliver++
		}
	}
	return out, deliver, nil
}

func toStoreItem(it newitems.Item, rule string) store.NewItem {
	ni := store.NewItem{Identity: it.Identity, GUID: it.GUID, Link: it.Link, Title: it.Title,
		Content: it.ContentHTML, Author: it.Author, IgnoredRule: rule}
	if !it.Published.IsZero() {
		t := it.Published
		ni.PublishedAt = &t
	}
	return ni
}

// maxItemFuture is how far in the future an item date may be and still count
// for newest_item_date.
const maxItemFuture = 24 * time.Hour

// newestDate is the newest item date not more than maxItemFuture after now.
func newestItemDate(items []newitems.Item, now time.Time) *time.Time {
	var best time.Time
	for _, it := range items {
		if d := it.Published; !d.IsZero() && !d.After(now.Add(maxItemFuture)) && d.After(best) {
			best = d
		}
	}
	if best.IsZero() {
		return nil
	}
	return &best
}

// endNotice builds the notices to subscribers of a feed that is gone (410)
// or blacklisted.
func (p *Poller) endNotice(f store.Feed, parsed *newitems.Feed, gone bool) *store.FeedEnd {
	name := f.Title
	if name == "" {
		name = f.URL
	}
	feedID := strconv.FormatInt(f.ID, 10)
	end := &store.FeedEnd{}
	var subject, text, key string
	if gone {
		end.EndSubscriptions = true
		end.EndedReason = "the feed answered 410 Gone"
		key = "gone:" + feedID + ":"
		subject = "A feed you follow is gone: " + name
		text = "The feed " + name + " (" + f.URL + ") answered \"410 Gone\": its publisher removed it for good.\n\n" +
			"Your subscription to it has ended and no credits will be used for it. " +
			"If the site has a new feed, you can subscribe to that one."
	} else {
		since := ""
		if f.ErrorsSince != nil {
			since = f.ErrorsSince.UTC().Format("2006-01-02")
		}
		key = "blacklisted:" + feedID + ":" + since + ":"
		subject = "A feed you follow has stopped working: " + name
		text = "For more than 90 days the feed " + name + " (" + f.URL + ") has answered nothing but errors " +
			"(last: " + f.LastError + "), so feedmail stopped polling it.\n\n" +
			"Your subscription is kept: if the publisher fixes the feed and pings feedmail, delivery resumes."
	}
	end.NoticeKey = func(userID int64) string { return key + strconv.FormatInt(userID, 10) }
	end.Notice = func(userID int64) store.Notice {
		n := store.Notice{Subject: subject, Text: text}
		if l := p.cfg.Links; l != nil {
			now := p.clk.Now()
			n.Links = append(n.Links, store.NoticeLink{Label: "Why (feed status)", URL: l.Status(f.URL)})
			if l.Tokens != nil {
				n.Links = append(n.Links, store.NoticeLink{Label: "Your subscriptions", URL: l.Account(userID, now)})
			}
		}
		return n
	}
	return end
}

// finish updates the report, metrics and hook after a write.
func (p *Poller) finish(ctx context.Context, pl *polledFeed, out store.PollOutcome, err error) {
	rep := pl.rep
	if err == nil || errors.Is(err, store.ErrLeaseLost) {
		p.unhold(pl.feed.ID)
	}
	if p.m != nil {
		p.m.Polls.WithLabelValues(rep.Outcome, strconv.Itoa(rep.Status)).Inc()
		if pl.elapsed > 0 {
			p.m.PollSeconds.Observe(pl.elapsed.Seconds())
		}
	}
	if err != nil {
		if rep.Error == "" {
			rep.Error = pollOneLine(err.Error())
		}
		if errors.Is(err, store.ErrLeaseLost) {
			p.log.Warn("poll not recorded: lease lost", "feed", pl.feed.ID, "url", pl.feed.URL)
		} else {
			p.log.Error("recording a poll failed", "feed", pl.feed.ID, "url", pl.feed.URL, "err", err)
		}
		return
	}
	// Item lists are for readers of the report (PollFeed's caller, the
	// hook); a pass of PollDue without a hook only counts them.
	lists := pl.rep.Trigger != "due" || p.cfg.AfterPoll != nil
	if lists && pl.byIdent == nil && len(pl.rec.Items) > 0 {
		pl.byIdent = make(map[string]*store.NewItem, len(pl.rec.Items))
		for i := range pl.rec.Items {
			pl.byIdent[pl.rec.Items[i].Identity] = &pl.rec.Items[i]
		}
	}
	for _, it := range out.Items {
		if lists {
			ri := ReportItem{Rule: it.IgnoredRule}
			if ni := pl.byIdent[it.Identity]; ni != nil {
				ri.Title, ri.Link = ni.Title, ni.Link
			}
			if it.IgnoredRule == "" {
				rep.NewItems = append(rep.NewItems, ri)
			} else {
				rep.Ignored = append(rep.Ignored, ri)
			}
		}
		if p.m != nil {
			switch it.IgnoredRule {
			case "":
				p.m.Items.WithLabelValues("new", "").Inc()
			case store.IgnoredFirstPoll:
				p.m.Items.WithLabelValues("first_poll", "").Inc()
			default:
				p.m.Items.WithLabelValues("ignored", it.IgnoredRule).Inc()
			}
		}
	}
	rep.Emails, rep.DigestItems, rep.Notices = out.Emails, out.DigestItems, out.Notices
	if p.cfg.AfterPoll != nil {
		p.cfg.AfterPoll(ctx, PollEvent{Feed: *pl.feed, Report: rep, Header: pl.header, Parsed: pl.parsed, Result: out})
	}
}

// PollFeed polls one feed now, whatever its schedule or state, claiming it
// by id (it fails with ErrBusy while another worker polls it), and returns
// what happened once it is recorded. trigger says why ("manual", "ping",
// "websub", …) and goes into the Report. A backed-off host is still not
// asked: the Report then says so (Polled false) and the feed is due when
// the back-off ends.
func (p *Poller) PollFeed(ctx context.Context, feedID int64, trigger string) (*Report, error) {
	// A feed a pass of this poller holds is being polled (on Postgres a pass
	// holds it through its host, which ClaimFeedForPoll does not refuse to
	// the same owner); cmu keeps a pass from claiming it in between.
	p.cmu.Lock()
	var f *store.Feed
	err := fmt.Errorf("held by a pass of this poller: %w", store.ErrNotFound)
	if !p.holds(feedID) {
		f, err = p.st.ClaimFeedForPoll(ctx, feedID, p.cfg.Owner, p.cfg.Lease, p.clk.Now())
	}
	p.cmu.Unlock()
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			if _, ferr := p.st.FeedByID(ctx, feedID); ferr != nil {
				return nil, fmt.Errorf("poller: %w", ferr)
			}
			return nil, fmt.Errorf("poll feed %d: %w", feedID, ErrBusy)
		}
		return nil, fmt.Errorf("poller: %w", err)
	}
	host := f.HostKey()
	rows, err := p.st.Hosts(ctx, []string{host})
	if err != nil {
		p.giveBack(ctx, f.ID, p.clk.Now(), "")
		return nil, fmt.Errorf("poller: %w", err)
	}
	if until, why, ok := p.backedOff(host, rows[host]); ok {
		now := p.clk.Now()
		reason := backedOffReason(host, until, why)
		next := p.afterBackoff(now, until)
		p.giveBack(ctx, f.ID, next, reason)
		return &Report{FeedID: f.ID, Trigger: trigger, URL: f.URL, State: f.State, Reason: reason,
			NextPollAt: next.UTC().Format(time.RFC3339), Error: reason,
			NewItems: []ReportItem{}, Ignored: []ReportItem{}}, nil
	}
	pl, err := p.pollOne(ctx, f, rows[host], trigger)
	if err != nil {
		return nil, fmt.Errorf("poll feed %d: %w", feedID, err)
	}
	if pl == nil {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("poll feed %d: %w", feedID, err)
		}
		return nil, fmt.Errorf("poll feed %d: not polled (lease too short or host backed off)", feedID)
	}
	wctx, cancel := pollWriteContext(ctx)
	defer cancel()
	out, err := p.st.RecordPoll(wctx, p.cfg.Owner, pl.rec)
	p.finish(wctx, pl, out, err)
	if err != nil {
		return pl.rep, fmt.Errorf("poll feed %d: %w", feedID, err)
	}
	return pl.rep, nil
}

// Ingest records content a WebSub hub pushed for feed feedID through the
// same parse → select → record path as a poll. It changes no validator, no
// schedule and no error streak (only title, newest dates and the items); it
// takes no lease, so a push is never refused because a poll is running (the
// unique keys keep the two from recording an item twice). A body that is not
// a feed is an error and changes nothing. Hubs often push only the new
// entries: the 10th-newest rule then looks at the pushed document alone
// (and does not apply to fewer than 10 dated items); the one-year and
// 7-day rules apply as in a poll. A push to a feed never parsed before
// counts as its first poll (everything seen, nothing mailed).
func (p *Poller) Ingest(ctx context.Context, feedID int64, body []byte, contentType string) (*Report, error) {
	f, err := p.st.FeedByID(ctx, feedID)
	if err != nil {
		return nil, fmt.Errorf("poller: ingest: %w", err)
	}
	now := p.clk.Now()
	rep := &Report{FeedID: f.ID, Trigger: "websub", URL: f.URL, Status: http.StatusOK, Outcome: "pushed",
		Bytes: int64(len(body)), State: f.State, NewItems: []ReportItem{}, Ignored: []ReportItem{},
		Reason: f.PollReason}
	if f.State == store.FeedActive {
		rep.NextPollAt = f.NextPollAt.UTC().Format(time.RFC3339)
	}
	parsed, err := newitems.Parse(body, contentType, f.URL)
	if err != nil {
		rep.Error = parseFailureText(err) + ": " + pollOneLine(err.Error())
		return rep, fmt.Errorf("poller: ingest into feed %d: %w", feedID, err)
	}
	rep.Title, rep.HubURL, rep.SelfURL = parsed.Title, parsed.HubURL, parsed.SelfURL
	items, deliver, err := p.selectItems(ctx, *f, parsed, now)
	if err != nil {
		return nil, fmt.Errorf("poller: ingest into feed %d: %w", feedID, err)
	}
	st := store.FeedState{Title: parsed.Title, SiteURL: parsed.SiteURL, PrimedAt: &now,
		NewestItemDate: newestItemDate(parsed.Items, now)}
	if deliver > 0 {
		st.LastNewItemAt = &now
	}
	pl := &polledFeed{feed: f, rep: rep, parsed: parsed, kind: OK, rec: store.PollRecord{
		FeedID: f.ID, At: now, URL: f.URL, Status: http.StatusOK, Outcome: "pushed", Bytes: int64(len(body)),
		Reason: "content pushed by the WebSub hub", Items: items, State: st, Push: true,
	}}
	out, err := p.st.RecordPoll(ctx, "", pl.rec)
	p.finish(ctx, pl, out, err)
	if err != nil {
		return rep, fmt.Errorf("poller: ingest into feed %d: %w", feedID, err)
	}
	return rep, nil
}

// outcomeName is the poll_log and metrics name of a kind.
func outcomeName(k OutcomeKind) string {
	switch k {
	case OK:
		return "ok"
	case Unchanged:
		return "unchanged"
	case NotModified:
		return "not_modified"
	case HTTPError:
		return "http_error"
	}
	return "failure"
}

// failureText is the short, public description of a fetch failure that
// starts the reason ("timeout: penalty 2 h (2nd consecutive error)").
func failureText(err error) string { return fetcher.Describe(err).Reason }

// parseFailureText describes a body that did not parse as a feed.
func parseFailureText(err error) string {
	switch {
	case errors.Is(err, newitems.ErrNotAFeed):
		return "not a feed"
	case errors.Is(err, newitems.ErrInvalidFeed):
		return "feed parse error"
	}
	return "undecodable feed"
}

// oneLine folds an error message onto one line.
func pollOneLine(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if r := []rune(s); len(r) > 500 {
		s = string(r[:500]) + "…"
	}
	return s
}
