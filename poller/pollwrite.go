package poller

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// pollWriter batches finished polls into few transactions
// (store.RecordPolls): it takes whatever has accumulated, up to
// Config.WriteBatch, writes it, and repeats. Under load batches fill up;
// when polls trickle in, each is written as soon as the previous write ends.
type pollWriter struct {
	p    *Poller
	ctx  context.Context
	in   chan *polledFeed
	done chan struct{}

	mu  sync.Mutex
	err error
}

func (p *Poller) newPollWriter(ctx context.Context) *pollWriter {
	w := &pollWriter{p: p, ctx: ctx, in: make(chan *polledFeed, p.cfg.WriteBatch), done: make(chan struct{})}
	go w.run()
	return w
}

// add queues a finished poll for writing.
func (w *pollWriter) add(pl *polledFeed) { w.in <- pl }

// close writes what is queued and returns the first error that made a write
// fail as a whole (individual lost leases are not errors).
func (w *pollWriter) close() error {
	close(w.in)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *pollWriter) run() {
	defer close(w.done)
	batch := make([]*polledFeed, 0, w.p.cfg.WriteBatch)
	for pl := range w.in {
		batch = append(batch[:0], pl)
	fill:
		for len(batch) < w.p.cfg.WriteBatch {
			select {
			case next, ok := <-w.in:
				if !ok {
					break fill
				}
				batch = append(batch, next)
			default:
				break fill
			}
		}
		w.flush(batch)
	}
}

// flush writes one batch, retrying through a database away for a moment
// (recordPolls); if the transaction still fails as a whole it writes the
// polls one by one, so one bad row does not lose the others.
func (w *pollWriter) flush(batch []*polledFeed) {
	ctx, cancel := pollWriteContext(w.ctx)
	defer cancel()
	recs := make([]store.PollRecord, len(batch))
	for i, pl := range batch {
		recs[i] = pl.rec
	}
	outs, err := w.p.recordPolls(ctx, batch, recs)
	if err == nil {
		for i, pl := range batch {
			var ferr error
			if outs[i].Lost {
				ferr = store.ErrLeaseLost
			}
			w.p.finish(ctx, pl, outs[i], ferr)
		}
		return
	}
	if len(batch) > 1 {
		w.p.log.Warn("batched poll write failed; writing one by one", "polls", len(batch), "err", err)
	}
	var firstErr error
	for _, pl := range batch {
		out, err := w.p.st.RecordPoll(ctx, w.p.cfg.Owner, pl.rec)
		w.p.finish(ctx, pl, out, err)
		if err != nil && !errors.Is(err, store.ErrLeaseLost) && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = firstErr
		}
		w.mu.Unlock()
	}
}

// recordPolls writes recs (the polls of batch) in one transaction. While
// the database is away for a moment (a restart, a cut connection) it tries
// again, for as long as the first of the batch's leases lasts less a
// margin: the polls' results are not lost, the feeds are not left leased
// for their posts to arrive late, and no try outlives a lease (after it,
// another poller may poll the feed again).
func (p *Poller) recordPolls(ctx context.Context, batch []*polledFeed, recs []store.PollRecord) ([]store.PollOutcome, error) {
	budget := time.Duration(-1)
	for i, pl := range batch {
		if left := p.leaseLeft(pl.feed); i == 0 || left < budget {
			budget = left
		}
	}
	var outs []store.PollOutcome
	tries, err := store.RetryTransient(ctx, budget, func(ctx context.Context) error {
		var err error
		outs, err = p.st.RecordPolls(ctx, p.cfg.Owner, recs)
		return err
	})
	if tries > 1 {
		p.log.Warn("database away while recording polls; retried", "polls", len(recs), "tries", tries, "err", err)
	}
	return outs, err
}

// recordOne writes one poll (recordPolls) and finishes it; it returns the
// write's error, store.ErrLeaseLost when the lease was lost.
func (p *Poller) recordOne(ctx context.Context, pl *polledFeed) error {
	var out store.PollOutcome
	outs, err := p.recordPolls(ctx, []*polledFeed{pl}, []store.PollRecord{pl.rec})
	if err == nil {
		if out = outs[0]; out.Lost {
			err = store.ErrLeaseLost
		}
	}
	p.finish(ctx, pl, out, err)
	return err
}

// writeRetrySafety is how long before a lease ends a write stops retrying.
const writeRetrySafety = 5 * time.Second

// leaseLeft is how long work on claimed feed f may retry the database:
// until writeRetrySafety before its lease ends (0 without a lease).
func (p *Poller) leaseLeft(f *store.Feed) time.Duration {
	if f.LeaseUntil == nil {
		return 0
	}
	return f.LeaseUntil.Sub(p.clk.Now()) - writeRetrySafety
}

// logPoll writes the line an operator reads for a recorded poll: at info a
// poll that failed or was refused (with its reason) and one that found new
// posts (with what it queued); every other poll at debug.
func (p *Poller) logPoll(pl *polledFeed, out store.PollOutcome) {
	rep := pl.rep
	newItems := 0
	for _, it := range out.Items {
		if it.IgnoredRule == "" {
			newItems++
		}
	}
	attrs := []any{"feed", pl.feed.ID, "url", pl.feed.URL, "trigger", rep.Trigger, "outcome", rep.Outcome, "status", rep.Status}
	switch {
	case pl.kind == HTTPError || pl.kind == Failure || pl.kind == Refused:
		p.log.Info("poll failed", append(attrs, "error", rep.Error, "next", rep.Reason)...)
	case newItems > 0 || out.Edited > 0:
		attrs = append(attrs, "posts", newItems, "edited", out.Edited, "emails", out.Emails, "digest_items", out.DigestItems)
		if out.Filtered > 0 {
			attrs = append(attrs, "filtered", out.Filtered)
		}
		p.log.Info("new posts", attrs...)
	default:
		p.log.Debug("polled", append(attrs, "next", rep.Reason)...)
	}
}

// finish updates the report, metrics and hook after a write.
func (p *Poller) finish(ctx context.Context, pl *polledFeed, out store.PollOutcome, err error) {
	rep := pl.rep
	if err == nil || errors.Is(err, store.ErrLeaseLost) {
		p.unhold(pl.feed.ID)
	}
	if p.m != nil {
		p.m.Polls.WithLabelValues(rep.Outcome, strconv.Itoa(rep.Status)).Inc()
		if pl.fetchFailure != "" {
			p.m.PollFetchFailures.WithLabelValues(pl.fetchFailure).Inc()
		}
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
	lists := pl.rep.Trigger != triggerDue || p.cfg.AfterPoll != nil
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
	rep.Emails, rep.DigestItems, rep.Notices, rep.Edited = out.Emails, out.DigestItems, out.Notices, out.Edited
	p.logPoll(pl, out)
	if p.cfg.AfterPoll != nil {
		p.cfg.AfterPoll(ctx, PollEvent{Feed: *pl.feed, Report: rep, Header: pl.header, Parsed: pl.parsed, Result: out})
	}
}
