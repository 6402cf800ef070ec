package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/feedmail/feedmail/internal/api"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/internal/web"
)

// importReadersAPI: the import-readers scenario's people sent through the
// API (POST /api/v1/operator/readers:import?confirmed=1) as one NDJSON
// body, streamed as it is made, to serve's web handler on a loopback
// listener with serve's timeouts, authenticated with an operator token.
// Every thousandth person carries a malformed entry, which the answer
// must report. The bare loop is import-readers' own. Peak RSS is this
// process's: the server, and the client making the body line by line.
func (e *env) importReadersAPI(ctx context.Context) (Row, error) {
	n, nf := e.cfg.Readers, e.cfg.Feeds
	row := Row{Unit: "subscriptions", Count: 2 * n, Work: fmt.Sprintf(
		"%d readers (2 feeds each of %d; every 1000th with a bad entry) as NDJSON over HTTP to serve's handler: read, check, write %d a transaction, confirm, trial",
		n, nf, subscribe.DefaultReadersBatch)}
	base, err := e.bareReaders(ctx, n, nf)
	if err != nil {
		return row, fmt.Errorf("bare loop: %w", err)
	}
	row.Baseline = base
	plain, sum, err := api.NewOperatorToken()
	if err != nil {
		return row, err
	}
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"FEEDMAIL_OPERATOR_TOKEN_SHA256": sum, "FEEDMAIL_TRIAL_CREDITS": "100"}[k]
	})
	if err != nil {
		return row, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return row, err
	}
	// serve's timeouts (cmd/feedmail's listen): the import must outlive them.
	srv := &http.Server{Handler: web.New(web.Deps{Store: e.st, Config: cfg, Clock: e.clk, Log: e.cfg.Log}).Handler(),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	var sent atomic.Int64
	stop := e.progress("import-readers-api", func() string { return fmt.Sprintf("%d/%d people sent", sent.Load(), n) })
	var rep apiImportReport
	var heap heapPeak
	err = e.measure(ctx, &row, func(ctx context.Context) error {
		defer heap.start()()
		rep, err = postReaders(ctx, "http://"+ln.Addr().String(), plain, n, nf, &sent)
		return err
	})
	stop()
	if err != nil {
		return row, err
	}
	row.Note = fmt.Sprintf("%d readers (%.0f/s), %d subscriptions, %d problems; live heap %s before, %s at most",
		rep.Readers, float64(rep.Readers)/row.Elapsed.Seconds(), rep.Added, rep.Problems, mib(heap.before), mib(heap.most))
	if rep.Readers != n || rep.Added != 2*n || rep.Problems != n/1000 || len(rep.List) != n/1000 || rep.Notices != 0 {
		return row, checkf("%+v (%d problems listed), want %d readers, %d added, %d problems, no email", rep.ReadersSummary,
			len(rep.List), n, 2*n, n/1000)
	}
	return row, e.checkReaders(ctx, n)
}

// apiImportReport is the part of the import's answer the scenario checks.
type apiImportReport struct {
	subscribe.ReadersSummary
	List []subscribe.ReaderProblem `json:"problem_list"`
}

// postReaders sends n readers (the lists writeReaderLists writes, as
// NDJSON lines made while the body is sent) to the import route at base
// and returns its report; sent counts the lines written.
func postReaders(ctx context.Context, base, tok string, n, nf int, sent *atomic.Int64) (apiImportReport, error) {
	var rep apiImportReport
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeReaderLines(pw, n, nf, sent)) }()
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/api/v1/operator/readers:import?confirmed=1", pr)
	if err != nil {
		return rep, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rep, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return rep, fmt.Errorf("import answered %s: %s", resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return rep, fmt.Errorf("import's report: %w", err)
	}
	return rep, nil
}

// writeReaderLines writes reader i's line for each i under n: the same
// feeds, titles and folder as writeReaderLists' files, every thousandth
// with a mailto: entry.
func writeReaderLines(w io.Writer, n, nf int, sent *atomic.Int64) error {
	type feed struct {
		URL    string `json:"url"`
		Title  string `json:"title,omitempty"`
		Folder string `json:"folder,omitempty"`
	}
	type line struct {
		Email string `json:"email"`
		Feeds []feed `json:"feeds"`
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	for i := range n {
		fa, fb := readerFeeds(i, nf)
		l := line{Email: readerEmail(i), Feeds: []feed{{URL: readerFeedURL(fa), Title: fmt.Sprint("Feed ", fa), Folder: "Moved"},
			{URL: readerFeedURL(fb), Title: fmt.Sprint("Feed ", fb)}}}
		if i%1000 == 999 {
			l.Feeds = append(l.Feeds, feed{URL: "mailto:" + readerEmail(i)})
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
		sent.Add(1)
	}
	return bw.Flush()
}
