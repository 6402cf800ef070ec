package bench

import (
	"bytes"
	"context"
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// importOPML: one person imports an OPML list of cfg.Feeds feeds nobody
// follows yet, spread round robin over the farm's hosts, through the use
// case `feedmail import-opml` runs (parse the list, subscribe.ImportOPML
// with the command's options: confirmed by the operator, stop on a store
// error). Every feed is fetched, parsed, recorded as the person's baseline
// and subscribed.
func (e *env) importOPML(ctx context.Context) (Row, error) {
	row := Row{Unit: "feeds", Work: fmt.Sprintf("OPML list of %d new feeds on %d hosts: parse, check (fetch, parse), baseline %d items, subscribe",
		e.cfg.Feeds, len(e.farms), e.cfg.Items)}
	doc, reqs, err := e.importList()
	if err != nil {
		return row, err
	}
	// The farm gzips a body on its first request (harness cost): an
	// untimed pass makes them, then the bare loop is timed.
	if _, err := e.bare(ctx, "bare warm-up", reqs); err != nil {
		return row, err
	}
	base, err := e.bareTimed(ctx, reqs, "net/http GET, 16 workers, bodies read", map[int]int{200: len(reqs)})
	if err != nil {
		return row, err
	}
	row.Baseline = base
	for _, fm := range e.farms {
		fm.Reset()
	}
	p, err := e.poller()
	if err != nil {
		return row, err
	}
	svc := &subscribe.Service{Store: e.st, Clock: e.clk, Baseline: p, Log: e.cfg.Log.With("role", "import"),
		Fetch: fetcher.New(fetcher.Config{BaseURL: benchBaseURL, AllowPrivate: true})}
	u, _, err := e.st.EnsureUser(ctx, "importer@bench.example")
	if err != nil {
		return row, err
	}
	var done atomic.Int64
	opt := importCommandOptions()
	opt.Progress = func(n, _ int, _ subscribe.ImportResult) { done.Store(int64(n)) }
	stop := e.progress("import", func() string { return fmt.Sprintf("%d/%d feeds", done.Load(), e.cfg.Feeds) })
	var rep subscribe.ImportReport
	var heap heapPeak
	err = e.measure(ctx, &row, func(ctx context.Context) error {
		defer heap.start()()
		outlines, err := opml.Parse(bytes.NewReader(doc))
		if err != nil {
			return err
		}
		rep, err = svc.ImportOPML(ctx, u, outlines, opt)
		return err
	})
	stop()
	if err != nil {
		return row, fmt.Errorf("import: %w", err)
	}
	row.Count = e.cfg.Feeds
	row.Note = fmt.Sprintf("%d added, %d already, %d failed", len(rep.Added), len(rep.Already), len(rep.Failed))
	if len(rep.Failed) > 0 {
		return row, checkf("%s; first failure: %s: %s", row.Note, rep.Failed[0].URL, rep.Failed[0].Reason)
	}
	if len(rep.Added) != e.cfg.Feeds {
		return row, checkf("%s, want %d added", row.Note, e.cfg.Feeds)
	}
	most := 0
	for _, fm := range e.farms {
		most = max(most, fm.MaxInFlight())
	}
	row.Note += fmt.Sprintf("; in flight to one host at most: %d; live heap %s before, %s at most",
		most, mib(heap.before), mib(heap.most))
	if most > subscribe.DefaultImportPerHost {
		return row, checkf("%d requests in flight to one host, want at most %d", most, subscribe.DefaultImportPerHost)
	}
	return row, e.checkImported(ctx, u.ID)
}

// heapPeak samples the live heap (what the last garbage collection kept)
// while an import runs: the farm's feeds are in it before, and what the
// import holds on top of them shows in the peak.
type heapPeak struct{ before, most int64 }

// start samples now and then every 20 ms until the returned stop.
func (h *heapPeak) start() (stop func()) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	read := func() int64 {
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[0].Value.Uint64())
	}
	h.before, h.most = read(), 0
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			h.most = max(h.most, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		h.most = max(h.most, read())
	}
}

// importCommandOptions are the options cmd/feedmail's import-opml passes
// with --confirmed.
func importCommandOptions() subscribe.ImportOptions {
	return subscribe.ImportOptions{Confirmed: true, KeepBouncing: true, StopOnError: true, PerFeed: 30 * time.Second}
}

// importList adds cfg.Feeds feeds to the farms (round robin over the
// hosts, formats in turn) and returns their OPML list and their requests
// for the bare loop.
func (e *env) importList() ([]byte, []bareReq, error) {
	outlines := make([]opml.Outline, e.cfg.Feeds)
	reqs := make([]bareReq, e.cfg.Feeds)
	for i := range outlines {
		ff := e.farmFor(i).AddFeed(farm.Spec{Format: farm.Format(i % 3), ItemCount: e.cfg.Items,
			ETag: farm.ETagStrong, LastModified: true, Gzip: true})
		outlines[i] = opml.Outline{XMLURL: ff.URL(), Title: fmt.Sprintf("Imported %d", i)}
		reqs[i] = bareReq{url: ff.URL()}
	}
	var b bytes.Buffer
	if err := opml.Write(&b, "feedbench import", outlines); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), reqs, nil
}

// checkImported checks that the person has one active subscription per
// imported feed and that each feed's items were recorded as seen.
func (e *env) checkImported(ctx context.Context, userID int64) error {
	var subs, items int64
	if err := e.st.DB.WithContext(ctx).Raw("SELECT COUNT(*) FROM subscriptions WHERE user_id = ? AND state = 'active'", userID).
		Scan(&subs).Error; err != nil {
		return err
	}
	if subs != int64(e.cfg.Feeds) {
		return checkf("%d active subscriptions, want %d", subs, e.cfg.Feeds)
	}
	if err := e.st.DB.WithContext(ctx).Raw(`SELECT COUNT(*) FROM items i JOIN subscriptions s ON s.feed_id = i.feed_id
WHERE s.user_id = ?`, userID).Scan(&items).Error; err != nil {
		return err
	}
	if want := int64(e.cfg.Feeds * e.cfg.Items); items != want {
		return checkf("%d items recorded as the baseline, want %d", items, want)
	}
	return nil
}
