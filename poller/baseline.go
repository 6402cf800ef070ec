package poller

import (
	"context"
	"fmt"
	"slices"

	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// Baselines is Baseline for many documents already parsed (an OPML
// import's checks), by feed id: each is recorded as Baseline records one,
// all in one transaction of a few statements (store.RecordPolls), so an
// import of thousands of feeds does not write them one by one. Feeds that
// are missing or not active are left out, as Baseline's caller leaves
// them. A document must have been parsed with its feed's URL as the base.
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
	now := p.clk.Now()
	var pls []*polledFeed
	var recs []store.PollRecord
	for _, id := range ids {
		f := feeds[id]
		if f == nil || f.State != store.FeedActive {
			continue
		}
		d := docs[id]
		pl, err := p.ingestRecord(ctx, f, ingestReport(f, ingestSignup, d.Bytes), d.Feed, ingestSignup, now)
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
