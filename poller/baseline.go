package poller

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/websub"
)

// Baselines records the documents people saw when they subscribed to
// feeds (a signup's or an OPML import's check fetched each to check it),
// by feed id, all in one transaction of a few statements
// (store.RecordPolls), so an import of thousands of feeds does not write
// them one by one. On a feed never parsed before a document's items
// become the first poll (seen, not mailed), so whatever the feed publishes
// next is new to whichever process polls it first; on a known feed its
// unknown items are new items, as in a poll. A document with its fetch
// (newitems.Document.Fetch) counts as a poll of the feed as well: the
// validators are kept and the next poll is scheduled as after a poll, so
// the publisher is not asked again at once, and then conditionally. Feeds
// that are missing or not active are left out. A document must have been
// parsed with its feed's URL as the base.
func (p *Poller) Baselines(ctx context.Context, docs map[int64]newitems.Document) error {
	if len(docs) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(docs))
	for id := range docs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	feeds, err := p.st.FeedsByID(ctx, ids)
	if err != nil {
		return fmt.Errorf("poller: baselines: %w", err)
	}
	hostMin, err := p.hostMinimums(ctx, feeds, docs)
	if err != nil {
		return fmt.Errorf("poller: baselines: %w", err)
	}
	now := p.clk.Now()
	var pls []*polledFeed
	var recs []store.PollRecord
	for _, id := range ids {
		f := feeds[id]
		if f == nil || f.State != store.FeedActive {
			continue
		}
		d := docs[id]
		pl, err := p.ingestRecord(ctx, f, ingestReport(f, ingestSignup, d.Bytes), d, ingestSignup, hostMin[f.HostKey()], now)
		if err != nil {
			return err
		}
		pls, recs = append(pls, pl), append(recs, pl.rec)
	}
	if len(recs) == 0 {
		return nil
	}
	outs, err := p.st.RecordPolls(ctx, "", recs)
	if err != nil {
		return fmt.Errorf("poller: baselines of %d feeds: %w", len(recs), err)
	}
	for i, pl := range pls {
		p.finish(ctx, pl, outs[i], nil)
	}
	return nil
}

// hostMinimums returns the operator's minimum interval of each host of the
// feeds whose document came with its fetch (one query; none without such
// a document), which their schedule honours as a poll's does.
func (p *Poller) hostMinimums(ctx context.Context, feeds map[int64]*store.Feed, docs map[int64]newitems.Document) (map[string]time.Duration, error) {
	var hosts []string
	seen := map[string]bool{}
	for id, d := range docs {
		if f := feeds[id]; f != nil && d.Fetch != nil && !seen[f.HostKey()] {
			seen[f.HostKey()] = true
			hosts = append(hosts, f.HostKey())
		}
	}
	if len(hosts) == 0 {
		return nil, nil
	}
	slices.Sort(hosts)
	rows, err := p.st.Hosts(ctx, hosts)
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Duration, len(rows))
	for h, r := range rows {
		out[h] = time.Duration(r.MinIntervalSeconds) * time.Second
	}
	return out, nil
}

// fetchedState makes pl, the record of document d that came with its
// fetch, count as a poll of the feed: the feed's columns after that fetch
// as Classify works them out for a poll (validators, last poll and
// success, schedule), deliver being how many of its items are new and
// delivered. The store writes them unless a poll or a ping came after the
// fetch (store.PollRecord.Fetched). A fetch that was no success (a
// caller's mistake) counts for the items only, and so does one that
// advertises a WebSub hub the feed has not taken up (newHub).
func (p *Poller) fetchedState(pl *polledFeed, d newitems.Document, hostMin time.Duration, deliver int, now time.Time) {
	c := Classify(pl.feed, hostMin, Answer{Resp: d.Fetch, Parsed: d.Feed, Delivered: deliver}, now, p.jitter())
	if k := c.Result.Kind; (k != OK && k != Unchanged) || newHub(pl.feed, d) {
		return
	}
	st := c.State
	st.URL = "" // a baseline moves no feed: its URL is the one the check found
	pl.rec.State, pl.rec.Fetched, pl.rec.FetchedAt = st, true, d.FetchedAt
	pl.rec.ElapsedMS = st.LastElapsedMS
	pl.header = d.Fetch.Header
	pl.rep.Reason, pl.rep.NextPollAt = st.PollReason, st.NextPollAt.UTC().Format(time.RFC3339)
}

// newHub reports whether document d advertises a WebSub hub (in its Link
// header fields or the document) that feed f has not taken up. Such a feed
// stays due at once, without validators: hubs are discovered by a poll of
// a followed feed (WebSubManager.OnPoll), which the feed is not yet when
// its baseline is written, and that poll must read the document. The one
// more GET buys the publisher a weekly poll once the hub is subscribed.
func newHub(f *store.Feed, d newitems.Document) bool {
	if f.WebSub().State != store.WebSubStateNone {
		return false
	}
	if isHTTP(d.Feed.HubURL) {
		return true
	}
	base, _ := url.Parse(d.Fetch.FinalURL)
	hubs, _ := websub.DiscoverFrom(base, d.Fetch.Header, nil, "")
	return len(hubs) > 0
}
