package poller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// ErrBusy is returned by PollFeed when another worker holds the feed's lease
// (it is being polled right now).
var ErrBusy = errors.New("poller: feed is being polled by another worker")

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
		p.giveBack(ctx, f.ID, p.clk.Now(), "", giveBackDBError)
		return nil, fmt.Errorf("poller: %w", err)
	}
	if until, why, ok := p.backedOff(host, rows[host]); ok {
		now := p.clk.Now()
		reason := backedOffReason(host, until, why)
		next := p.afterBackoff(now, until)
		p.giveBack(ctx, f.ID, next, reason, giveBackBackedOff)
		return &Report{FeedID: f.ID, Trigger: trigger, URL: f.URL, State: f.State, Reason: reason,
			NextPollAt: next.UTC().Format(time.RFC3339), Error: reason,
			NewItems: []ReportItem{}, Ignored: []ReportItem{}}, nil
	}
	pl, err := p.pollOne(ctx, f, rows[host], trigger, nil)
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
	err = p.recordOne(wctx, pl)
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
	return p.ingest(ctx, feedID, body, contentType, ingestPush)
}

// ingestSource says where a document recorded without a poll came from: the
// report's trigger and outcome, and the poll log's reason.
type ingestSource struct{ trigger, outcome, reason string }

var (
	ingestPush   = ingestSource{"websub", "pushed", "content pushed by the WebSub hub"}
	ingestSignup = ingestSource{"signup", "baseline", "fetched at signup: the items a new subscriber saw"}
)

// ingest is Ingest: src names the source.
func (p *Poller) ingest(ctx context.Context, feedID int64, body []byte, contentType string, src ingestSource) (*Report, error) {
	f, err := p.st.FeedByID(ctx, feedID)
	if err != nil {
		return nil, fmt.Errorf("poller: ingest: %w", err)
	}
	now := p.clk.Now()
	rep := ingestReport(f, src, int64(len(body)))
	parsed, err := newitems.Parse(body, contentType, f.URL)
	if err != nil {
		rep.Error = parseFailureText(err) + ": " + pollOneLine(err.Error())
		return rep, fmt.Errorf("poller: ingest into feed %d: %w", feedID, err)
	}
	pl, err := p.ingestRecord(ctx, f, rep, newitems.Document{Feed: parsed}, src, 0, now)
	if err != nil {
		return nil, err
	}
	out, err := p.st.RecordPoll(ctx, "", pl.rec)
	p.finish(ctx, pl, out, err)
	if err != nil {
		return rep, fmt.Errorf("poller: ingest into feed %d: %w", feedID, err)
	}
	return rep, nil
}

// ingestReport starts the report of a document recorded without a poll.
func ingestReport(f *store.Feed, src ingestSource, bytes int64) *Report {
	rep := &Report{FeedID: f.ID, Trigger: src.trigger, URL: f.URL, Status: http.StatusOK, Outcome: src.outcome,
		Bytes: bytes, State: f.State, NewItems: []ReportItem{}, Ignored: []ReportItem{}, Reason: f.PollReason}
	if f.State == store.FeedActive {
		rep.NextPollAt = f.NextPollAt.UTC().Format(time.RFC3339)
	}
	return rep
}

// ingestRecord decides what a parsed document recorded without a poll
// writes for feed f (the items it has not recorded, the title, site and
// newest date) and returns it ready for the store, as a push record. A
// document a fetch of the feed's own brought (d.Fetch) also counts as a
// poll of it (fetchedState); hostMin is then the operator's minimum
// interval for the feed's host.
func (p *Poller) ingestRecord(ctx context.Context, f *store.Feed, rep *Report, d newitems.Document, src ingestSource, hostMin time.Duration, now time.Time) (*polledFeed, error) {
	parsed := d.Feed
	rep.Title, rep.HubURL, rep.SelfURL = parsed.Title, parsed.HubURL, parsed.SelfURL
	if parsed.Warning != nil {
		rep.Warning = pollOneLine(parsed.Warning.Text)
	}
	items, edits, deliver, err := p.selectItems(ctx, *f, parsed, now)
	if err != nil {
		return nil, fmt.Errorf("poller: ingest into feed %d: %w", f.ID, err)
	}
	st := store.FeedState{Title: parsed.Title, SiteURL: parsed.SiteURL, PrimedAt: &now,
		NewestItemDate: newestItemDate(parsed.Items, now)}
	if deliver > 0 {
		st.LastNewItemAt = &now
	}
	pl := &polledFeed{feed: f, rep: rep, parsed: parsed, kind: OK, rec: store.PollRecord{
		FeedID: f.ID, At: now, URL: f.URL, Status: http.StatusOK, Outcome: src.outcome, Bytes: rep.Bytes,
		Reason: src.reason, Items: items, Edits: edits, State: st, Push: true,
	}}
	if d.Fetch != nil {
		p.fetchedState(pl, d, hostMin, deliver, now)
	}
	return pl, nil
}
