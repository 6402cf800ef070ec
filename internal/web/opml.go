package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
)

// Import outcomes.
const (
	ImportAdded   = "added"
	ImportAlready = "already"
	ImportFailed  = "failed"
)

// ImportResult is what happened to one feed of an OPML list.
type ImportResult struct {
	URL     string `json:"url"`
	Title   string `json:"title,omitempty"`
	Outcome string `json:"outcome"`          // ImportAdded, ImportAlready or ImportFailed
	Reason  string `json:"reason,omitempty"` // why it failed, in plain words
}

// ImportReport sorts the results of an import.
type ImportReport struct {
	Added   []ImportResult `json:"added"`
	Already []ImportResult `json:"already"`
	Failed  []ImportResult `json:"failed"`
}

// Importer adds the feeds of an OPML list to a person's subscriptions. Each
// new feed is fetched first (several at a time) so that the report can say
// which failed and why; feeds the person already has are not fetched.
type Importer struct {
	Store   *store.Store
	Fetcher *fetcher.Client
	// Parallel is how many feeds are fetched at once (default 4).
	Parallel int
	// PerFeed bounds each feed's check (default 15 s).
	PerFeed time.Duration
}

// ImportOptions say how imported feeds are delivered.
type ImportOptions struct {
	DigestID *int64 // nil: instant
	// Confirmed makes the subscriptions active at once (the person proved
	// the address, e.g. through their account link); otherwise they wait in
	// "pending".
	Confirmed bool
}

// Import checks and subscribes every outline. progress, when not nil, is
// called after each feed (from one goroutine at a time) with how many are
// done. Results keep the outlines' order. Only a store failure is an error.
func (im *Importer) Import(ctx context.Context, userID int64, outlines []opml.Outline, opt ImportOptions,
	progress func(done, total int, r ImportResult)) (ImportReport, error) {
	par := im.Parallel
	if par <= 0 {
		par = 4
	}
	per := im.PerFeed
	if per <= 0 {
		per = 15 * time.Second
	}
	have := map[string]bool{}
	subs, err := im.Store.SubscriptionsOfUser(ctx, userID)
	if err != nil {
		return ImportReport{}, fmt.Errorf("subscriptions of user %d: %w", userID, err)
	}
	for _, s := range subs {
		have[s.FeedURL] = true
	}

	results := make([]ImportResult, len(outlines))
	var (
		mu       sync.Mutex // guards done, firstErr, have and progress calls
		done     int
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, par)
	)
	finish := func(i int, r ImportResult) {
		mu.Lock()
		defer mu.Unlock()
		results[i] = r
		done++
		if progress != nil {
			progress(done, len(outlines), r)
		}
	}
	for i, o := range outlines {
		r := ImportResult{URL: o.XMLURL, Title: o.Title}
		u, msg := normalizeFeedURL(o.XMLURL)
		if msg != "" {
			r.Outcome, r.Reason = ImportFailed, "not a web address"
			finish(i, r)
			continue
		}
		r.URL = u
		mu.Lock()
		dup := have[u]
		have[u] = true // a repeated URL in the list counts as "already there"
		mu.Unlock()
		if dup {
			r.Outcome = ImportAlready
			finish(i, r)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			r.Outcome, r.Reason = ImportFailed, "not checked: the import was stopped"
			finish(i, r)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := im.one(ctx, userID, r, opt, per)
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				r.Outcome, r.Reason = ImportFailed, "feedmail could not save it"
			}
			finish(i, r)
		}()
	}
	wg.Wait()
	var rep ImportReport
	for _, r := range results {
		switch r.Outcome {
		case ImportAdded:
			rep.Added = append(rep.Added, r)
		case ImportAlready:
			rep.Already = append(rep.Already, r)
		default:
			rep.Failed = append(rep.Failed, r)
		}
	}
	return rep, firstErr
}

// one fetches and subscribes one feed.
func (im *Importer) one(ctx context.Context, userID int64, r ImportResult, opt ImportOptions, per time.Duration) (ImportResult, error) {
	fctx, cancel := context.WithTimeout(ctx, per)
	defer cancel()
	resp, err := im.Fetcher.Fetch(fctx, fetcher.Request{URL: r.URL})
	if err != nil {
		r.Outcome, r.Reason = ImportFailed, fetchProblem(err)
		return r, nil
	}
	if resp.Status < 200 || resp.Status > 299 {
		r.Outcome, r.Reason = ImportFailed, "the address answered "+statusText(resp.Status)
		return r, nil
	}
	f, err := parseFeed(resp.Body, resp.ContentType, resp.FinalURL)
	if err != nil {
		r.Outcome, r.Reason = ImportFailed, err.Error()
		return r, nil
	}
	feedURL := r.URL
	if resp.PermanentURL != "" {
		feedURL = resp.PermanentURL
	}
	feed, _, err := im.Store.EnsureFeed(ctx, feedURL)
	if err != nil {
		return r, err
	}
	title := f.Title
	if title == "" {
		title = r.Title
	}
	if err := im.Store.SetFeedMetaIfEmpty(ctx, feed.ID, title, f.SiteURL); err != nil {
		return r, err
	}
	if r.Title == "" {
		r.Title = title
	}
	existing, err := im.Store.SubscriptionsOfUser(ctx, userID)
	if err != nil {
		return r, err
	}
	for _, s := range existing {
		if s.FeedID == feed.ID {
			r.Outcome = ImportAlready
			return r, nil
		}
	}
	if _, err := im.Store.Subscribe(ctx, userID, feed.ID, opt.DigestID, opt.Confirmed); err != nil {
		return r, err
	}
	r.Outcome = ImportAdded
	return r, nil
}

// maxOPMLUpload caps the OPML upload request (the document may be up to
// opml.MaxBytes; the rest is multipart framing and the other fields).
const maxOPMLUpload = opml.MaxBytes + 1<<20

// maxWebImport is how many feeds one upload may hold: each is fetched while
// the person waits. Larger lists go through `feedmail import-opml`.
const maxWebImport = 300

// importData is the OPML import report page.
type importData struct {
	Token  string
	Report ImportReport
	Error  string
}

// accountImport is POST /account/{token}/opml (multipart: file, delivery).
// Feeds imported from the account page are confirmed at once: the account
// link proves the address.
func (s *Server) accountImport(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxOPMLUpload)
	d := importData{Token: tok}
	fail := func(status int, msg string) {
		d.Error = msg
		s.render(w, r, status, "import", "Import feeds", d)
	}
	if err := r.ParseMultipartForm(maxOPMLUpload); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			fail(http.StatusRequestEntityTooLarge, "That file is larger than 10 MB.")
			return
		}
		fail(http.StatusBadRequest, "Choose an OPML file to upload.")
		return
	}
	defer r.MultipartForm.RemoveAll()
	file, _, err := r.FormFile("file")
	if err != nil {
		fail(http.StatusUnprocessableEntity, "Choose an OPML file to upload.")
		return
	}
	defer file.Close()
	outlines, err := opml.Parse(file)
	if err != nil {
		switch {
		case errors.Is(err, opml.ErrNoFeeds):
			fail(http.StatusUnprocessableEntity, "That OPML file lists no feeds.")
		case errors.Is(err, opml.ErrTooLarge):
			fail(http.StatusRequestEntityTooLarge, "That OPML file is too large.")
		default:
			fail(http.StatusUnprocessableEntity, "That file is not an OPML subscription list feedmail can read.")
		}
		return
	}
	if len(outlines) > maxWebImport {
		fail(http.StatusUnprocessableEntity, "That list has "+strconv.Itoa(len(outlines))+" feeds; the web import takes up to "+
			strconv.Itoa(maxWebImport)+" at a time. Split the file, or ask the operator to use feedmail import-opml.")
		return
	}
	var opt ImportOptions
	opt.Confirmed = true
	if v := r.FormValue("delivery"); strings.HasPrefix(v, "digest-") {
		id, err := strconv.ParseInt(strings.TrimPrefix(v, "digest-"), 10, 64)
		if err != nil {
			fail(http.StatusUnprocessableEntity, "Pick a delivery.")
			return
		}
		if _, err := s.Store.AccountDigest(r.Context(), u.ID, id); err != nil {
			fail(http.StatusUnprocessableEntity, "Pick one of your digests.")
			return
		}
		opt.DigestID = &id
	}
	// Checking many feeds takes longer than the server's write timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(10 * time.Minute))
	im := &Importer{Store: s.Store, Fetcher: s.fetch, Parallel: 8, PerFeed: 15 * time.Second}
	rep, err := im.Import(r.Context(), u.ID, outlines, opt, nil)
	if err != nil {
		s.Log.Error("opml import", "user", u.ID, "err", err)
	}
	if len(rep.Added) > 0 {
		if _, err := s.personConfirmed(r.Context(), u.ID); err != nil {
			s.Log.Error("trial after import", "user", u.ID, "err", err)
		}
	}
	d.Report = rep
	s.render(w, r, http.StatusOK, "import", "Import report", d)
}

// accountExport is GET /account/{token}/opml: the person's feeds as OPML.
func (s *Server) accountExport(w http.ResponseWriter, r *http.Request) {
	u, _, ok := s.accountUser(w, r)
	if !ok {
		return
	}
	var buf bytes.Buffer
	if err := ExportOPML(r.Context(), s.Store, u, &buf); err != nil {
		s.serverError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/x-opml; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="feedmail-subscriptions.opml"`)
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// ExportOPML writes u's subscriptions (not ended) as an OPML 2.0 list.
func ExportOPML(ctx context.Context, st *store.Store, u *store.User, w io.Writer) error {
	subs, err := st.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		return fmt.Errorf("subscriptions of user %d: %w", u.ID, err)
	}
	outs := make([]opml.Outline, 0, len(subs))
	for _, s := range subs {
		outs = append(outs, opml.Outline{Title: s.FeedTitle, XMLURL: s.FeedURL})
	}
	return opml.Write(w, "feedmail subscriptions of "+u.Email, outs)
}
