package subscribe

import (
	"context"
	"sync"

	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// importChunk is how many checked feeds the writer writes at most in one
// go. Under load chunks fill up; otherwise whatever has arrived is written
// at once.
const importChunk = 100

// importWriter takes checked feeds from any goroutine and writes them, in
// chunks, from its own.
type importWriter struct {
	run *importRun
	in  chan checked
	wg  sync.WaitGroup
}

// startWriter starts the run's writer. Close it once every feed is added.
func (run *importRun) startWriter(ctx context.Context) *importWriter {
	w := &importWriter{run: run, in: make(chan checked, importChunk)}
	w.wg.Go(func() { w.loop(ctx) })
	return w
}

// add hands c to the writer, waiting while it is a full chunk behind (the
// checks slow down to the pace of the writes instead of piling documents
// up in memory).
func (w *importWriter) add(c checked) { w.in <- c }

// close waits until everything added is written.
func (w *importWriter) close() {
	close(w.in)
	w.wg.Wait()
}

// loop writes what arrives, a chunk at a time, until close.
func (w *importWriter) loop(ctx context.Context) {
	batch := make([]checked, 0, importChunk)
	for c := range w.in {
		batch = append(batch[:0], c)
	fill:
		for len(batch) < importChunk {
			select {
			case c, ok := <-w.in:
				if !ok {
					break fill
				}
				batch = append(batch, c)
			default:
				break fill
			}
		}
		w.run.writeChunk(ctx, batch)
		clear(batch) // let the documents go
	}
}

// writeChunk records the feeds of batch, their baselines and the person's
// subscriptions, a few statements in all, and finishes every result: a
// feed the person turns out to have already (another address of it, or
// the list named it twice) is already there; after a store failure the
// whole chunk failed.
func (run *importRun) writeChunk(ctx context.Context, batch []checked) {
	if ctx.Err() != nil {
		run.failAll(batch, reasonStopped)
		return
	}
	urls := make([]string, len(batch))
	for k, c := range batch {
		urls[k] = c.found.URL
	}
	feeds, err := run.s.Store.EnsureFeeds(ctx, urls)
	if err != nil {
		run.failChunk(batch, err)
		return
	}
	metas := make([]store.FeedMeta, 0, len(batch))
	subs := make([]store.NewSubscription, 0, len(batch)) // the feeds marked in haveFeed now
	docs := map[int64]newitems.Document{}
	for k := range batch {
		c := &batch[k]
		f := feeds[c.found.URL]
		if c.found.Title == "" {
			c.found.Title = c.job.r.Title
		}
		metas = append(metas, store.FeedMeta{FeedID: f.ID, Title: c.found.Title, SiteURL: c.found.SiteURL})
		if c.job.r.Title == "" {
			c.job.r.Title = feedTitle(f, c.found.Title)
		}
		if run.haveFeed[f.ID] {
			c.job.r.Outcome = ImportAlready
			continue
		}
		run.haveFeed[f.ID] = true
		subs = append(subs, store.NewSubscription{FeedID: f.ID, Folder: c.job.r.folder})
		if c.doc != nil && f.State == store.FeedActive {
			docs[f.ID] = *c.doc
		}
	}
	if err := run.writeFeeds(ctx, metas, docs, subs); err != nil {
		for _, n := range subs {
			delete(run.haveFeed, n.FeedID) // not added after all
		}
		run.failChunk(batch, err)
		return
	}
	for _, c := range batch {
		if c.job.r.Outcome == "" {
			c.job.r.URL, c.job.r.Outcome = feeds[c.found.URL].URL, ImportAdded
		}
		run.finish(c.job.i, c.job.r)
	}
}

// writeFeeds writes a chunk's feed titles and sites, then its baselines,
// then its subscriptions: what the person saw is recorded before the
// subscriptions exist, so it is never "theirs" (see Service.feed).
func (run *importRun) writeFeeds(ctx context.Context, metas []store.FeedMeta, docs map[int64]newitems.Document, subs []store.NewSubscription) error {
	s := run.s
	if err := s.Store.SetFeedsMetaIfEmpty(ctx, metas); err != nil {
		return err
	}
	if s.Baseline != nil && len(docs) > 0 {
		if err := s.Baseline.Baselines(ctx, docs); err != nil {
			return err
		}
	}
	_, err := s.Store.SubscribeMany(ctx, run.userID, subs, run.opt.DigestID, run.opt.confirmedBy())
	return err
}

// feedTitle is the title to show for feed f: its stored title, else the
// one found, else its URL (as Service.feed gives it).
func feedTitle(f *store.Feed, found string) string {
	switch {
	case f.Title != "":
		return f.Title
	case found != "":
		return found
	}
	return f.URL
}

// failChunk reports every feed of batch as not saved after the store
// failure err (logged once for the chunk).
func (run *importRun) failChunk(batch []checked, err error) {
	if run.s.Log != nil {
		run.s.Log.Error("opml import: writing a chunk of feeds failed", "user", run.userID, "feeds", len(batch), "err", err)
	}
	run.failStore(err)
	run.failAll(batch, reasonNotSaved)
}

// failAll finishes every feed of batch as failed for reason.
func (run *importRun) failAll(batch []checked, reason string) {
	for _, c := range batch {
		c.job.r.Outcome, c.job.r.Reason = ImportFailed, reason
		run.finish(c.job.i, c.job.r)
	}
}
