package bench

import (
	"bytes"
	"context"
	"fmt"
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
	doc, err := e.importList()
	if err != nil {
		return row, err
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
	err = e.measure(ctx, &row, func(ctx context.Context) error {
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
	return row, e.checkImported(ctx, u.ID)
}

// importCommandOptions are the options cmd/feedmail's import-opml passes
// with --confirmed.
func importCommandOptions() subscribe.ImportOptions {
	return subscribe.ImportOptions{Confirmed: true, KeepBouncing: true, StopOnError: true, Parallel: 8, PerFeed: 30 * time.Second}
}

// importList adds cfg.Feeds feeds to the farms (round robin over the
// hosts, formats in turn) and returns their OPML list.
func (e *env) importList() ([]byte, error) {
	outlines := make([]opml.Outline, e.cfg.Feeds)
	for i := range outlines {
		ff := e.farmFor(i).AddFeed(farm.Spec{Format: farm.Format(i % 3), ItemCount: e.cfg.Items,
			ETag: farm.ETagStrong, LastModified: true, Gzip: true})
		// No folders: a folder is an outline too, and a list holds at most
		// opml.MaxOutlines (10,000) of them.
		outlines[i] = opml.Outline{XMLURL: ff.URL(), Title: fmt.Sprintf("Imported %d", i)}
	}
	var b bytes.Buffer
	if err := opml.Write(&b, "feedbench import", outlines); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
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
