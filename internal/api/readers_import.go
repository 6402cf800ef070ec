package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// POST /api/v1/operator/readers:import is `feedmail import-readers` over
// HTTP: the body is NDJSON, one person a line ({"email": …, "feeds":
// [{"url": …, "title": …, "folder": …}]}), read as it arrives and handed
// to the same use case (subscribe.Service.ImportReaders) a batch at a
// time, so memory stays flat whatever the size. A line that is not such
// an object is a malformed list, reported like any other problem; the
// answer, once the body is read and written, is the command's report
// with every problem listed.

// maxImportLine caps one line of an import body: a person with some
// thousands of feeds.
const maxImportLine = 1 << 20

// importIdle is how long an import waits for more of its body, and
// importWrite how long writing its answer may take: serve's own read and
// write timeouts are for small requests.
const (
	importIdle  = 60 * time.Second
	importWrite = 5 * time.Minute
)

// importLine is one line of the body.
type importLine struct {
	Email string       `json:"email"`
	Feeds []importFeed `json:"feeds"`
}

// importFeed is one feed of a line.
type importFeed struct {
	URL    string `json:"url"`
	Title  string `json:"title,omitempty"`
	Folder string `json:"folder,omitempty"`
}

// importReport is the answer: the command's counts and problems by
// kind, and every problem in the order found.
type importReport struct {
	Confirmed bool `json:"confirmed"`
	subscribe.ReadersSummary
	ByKind  map[string]int `json:"problems_by_kind"`
	Seconds float64        `json:"seconds"`
}

// errBody marks an error reading the request body (too large, cut off).
type errBody struct{ err error }

func (e errBody) Error() string { return "reading the body: " + e.err.Error() }
func (e errBody) Unwrap() error { return e.err }

// importReaders is the route's handler.
func (s *Server) importReaders(w http.ResponseWriter, r *http.Request) {
	opt, ok := importOptions(w, r)
	if !ok {
		return
	}
	spool, err := os.CreateTemp("", "feedmail-import-problems-*.ndjson")
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	sink := bufio.NewWriter(spool)
	enc := json.NewEncoder(sink)
	var sinkErr error
	rep := importReport{Confirmed: opt.Confirmed, ByKind: map[string]int{}}
	opt.Problem = func(p subscribe.ReaderProblem) {
		rep.ByKind[p.Kind]++
		if sinkErr == nil {
			sinkErr = enc.Encode(p)
		}
	}
	rc := http.NewResponseController(w)
	body := http.MaxBytesReader(w, r.Body, s.ImportMaxBytes)
	start := s.Clock.Now()
	sum, err := s.Subs.ImportReaders(r.Context(), ndjsonLists(body, func() { _ = rc.SetReadDeadline(time.Now().Add(importIdle)) }), opt)
	rep.ReadersSummary, rep.Seconds = sum, s.Clock.Now().Sub(start).Seconds()
	s.Log.Info("api: readers imported", "lists", sum.Lists, "readers", sum.Readers, "added", sum.Added,
		"problems", sum.Problems, "seconds", rep.Seconds, "err", err)
	if err == nil {
		err = errors.Join(sinkErr, sink.Flush())
	}
	_ = rc.SetWriteDeadline(time.Now().Add(importWrite))
	status, head := importAnswer(s, rep, err)
	if err := writeWithProblems(w, status, head, spool); err != nil {
		s.Log.Warn("api: could not send an import's report", "err", err)
	}
}

// importAnswer returns the status and the object of the answer to an
// import that ended with err (nil: 200 and the report). A body too large
// or cut off is a problem that carries the report of what was written
// before it; any other error is logged and is a 500 problem with it too.
func importAnswer(s *Server, rep importReport, err error) (int, any) {
	if err == nil {
		return http.StatusOK, rep
	}
	type withReport struct {
		problem
		Import importReport `json:"import"`
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, withReport{problem{Type: "about:blank", Title: "Request Entity Too Large",
			Status: http.StatusRequestEntityTooLarge, Detail: fmt.Sprintf(
				"the body is over %d bytes (FEEDMAIL_API_IMPORT_MAX_BYTES); the lines before the limit were imported (see import)",
				s.ImportMaxBytes)}, rep}
	case errors.As(err, new(errBody)):
		p := invalid("", "the body could not be read to its end; the lines before were imported (see import): "+err.Error())
		return http.StatusBadRequest, withReport{p, rep}
	}
	s.Log.Error("api: readers import failed", "err", err, "added", rep.Added)
	return http.StatusInternalServerError, withReport{problem{Type: "about:blank", Title: "Internal Server Error",
		Status: http.StatusInternalServerError,
		Detail: "feedmail hit an error; the batches before it were imported (see import)"}, rep}
}

// importOptions reads the media type and the query (confirmed, batch);
// it answers the request itself and returns false when they are wrong.
func importOptions(w http.ResponseWriter, r *http.Request) (subscribe.ReadersOptions, bool) {
	opt := subscribe.ReadersOptions{Batch: subscribe.DefaultReadersBatch}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || (mt != "application/x-ndjson" && mt != "application/jsonl") {
			writeProblem(w, problem{Status: http.StatusUnsupportedMediaType,
				Detail: "send the body as application/x-ndjson: one JSON object a line"})
			return opt, false
		}
	}
	q := r.URL.Query()
	switch q.Get("confirmed") {
	case "", "0", "false":
	case "1", "true":
		opt.Confirmed = true
	default:
		writeProblem(w, invalid("confirmed", "confirmed is 1 or 0 (true or false)"))
		return opt, false
	}
	if v := q.Get("batch"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeProblem(w, invalid("batch", "batch is a whole number of people per transaction, 1 to 10000"))
			return opt, false
		}
		opt.Batch = n
	}
	return opt, true
}

// ndjsonLists yields the lists of an NDJSON body, one a line (blank lines
// skipped), named "line N". A line that is no importLine (or is longer
// than maxImportLine) is yielded with Err set, and with its email when
// one can be read, for the import to report; an error reading the body
// is yielded as errBody and ends it. alive is called as lines come (it
// pushes the connection's read deadline on).
func ndjsonLists(body io.Reader, alive func()) iter.Seq2[subscribe.ReaderList, error] {
	return func(yield func(subscribe.ReaderList, error) bool) {
		br := bufio.NewReaderSize(body, maxImportLine)
		var pushed time.Time
		for n := 1; ; n++ {
			if now := time.Now(); now.Sub(pushed) > time.Second { // the socket's deadline is wall time
				alive()
				pushed = now
			}
			line, long, err := readLine(br)
			if err != nil && !errors.Is(err, io.EOF) {
				yield(subscribe.ReaderList{}, errBody{err})
				return
			}
			if long || len(bytes.TrimSpace(line)) > 0 {
				if !yield(parseLine(line, long, n), nil) {
					return
				}
			}
			if err != nil { // io.EOF
				return
			}
		}
	}
}

// readLine returns the next line of br without its newline; long is set
// (and the line dropped) when it is over maxImportLine. err is io.EOF
// after the last line.
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	line, err = br.ReadSlice('\n')
	for errors.Is(err, bufio.ErrBufferFull) {
		long = true
		_, err = br.ReadSlice('\n')
	}
	if long {
		line = nil
	}
	return bytes.TrimSuffix(line, []byte("\n")), long, err
}

// parseLine reads line n into a list.
func parseLine(line []byte, long bool, n int) subscribe.ReaderList {
	src := "line " + strconv.Itoa(n)
	if long {
		return subscribe.ReaderList{Source: src, Err: fmt.Errorf("%w: the line is over %d bytes", opml.ErrMalformed, maxImportLine)}
	}
	var l importLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	err := dec.Decode(&l)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value on the line")
	}
	if err != nil {
		var named struct{ Email string }
		_ = json.Unmarshal(line, &named) // name the person when the line is JSON at all
		return subscribe.ReaderList{Email: named.Email, Source: src,
			Err: fmt.Errorf("the line is not {\"email\": …, \"feeds\": [{\"url\": …}]}: %v", err)}
	}
	outs := make([]opml.Outline, len(l.Feeds))
	for i, f := range l.Feeds {
		outs[i] = opml.Outline{XMLURL: f.URL, Title: f.Title, Folder: f.Folder}
	}
	return subscribe.ReaderList{Email: l.Email, Source: src, Outlines: outs}
}

// writeWithProblems writes head (a JSON object) with status, adding the
// member "problem_list": every problem spooled (JSON lines), in order.
func writeWithProblems(w http.ResponseWriter, status int, head any, spool *os.File) error {
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	if status != http.StatusOK {
		w.Header().Set("Content-Type", problemJSONType)
	}
	w.WriteHeader(status)
	bw := bufio.NewWriter(w)
	bw.Write(b[:len(b)-1])
	bw.WriteString(`,"problem_list":[`)
	sc := bufio.NewScanner(spool)
	sc.Buffer(make([]byte, 64<<10), 4*maxImportLine)
	for i := 0; sc.Scan(); i++ {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(sc.Bytes())
	}
	bw.WriteString("]}\n")
	return errors.Join(sc.Err(), bw.Flush())
}
