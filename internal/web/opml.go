package web

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// maxOPMLUpload caps the OPML upload request (the document may be up to
// opml.MaxBytes; the rest is multipart framing and the other fields).
const maxOPMLUpload = opml.MaxBytes + 1<<20

// maxWebImport is how many feeds one upload may hold: each is fetched while
// the person waits. Larger lists go through `feedmail import-opml`.
const maxWebImport = 300

// tooManyForWeb is the error shown for a list of n feeds, more than
// maxWebImport.
func tooManyForWeb(n int) string {
	return "That list has " + strconv.Itoa(n) + " feeds; the web import takes up to " + strconv.Itoa(maxWebImport) +
		" at a time. Split the file, or ask the operator to use feedmail import-opml."
}

// importData is the OPML import report page.
type importData struct {
	Token  string
	Report subscribe.ImportReport
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
	var many *opml.TooManyFeedsError
	if err != nil {
		switch {
		case errors.Is(err, opml.ErrNoFeeds):
			fail(http.StatusUnprocessableEntity, "That OPML file lists no feeds.")
		case errors.As(err, &many):
			fail(http.StatusUnprocessableEntity, tooManyForWeb(many.Feeds))
		case errors.Is(err, opml.ErrTooLarge):
			fail(http.StatusRequestEntityTooLarge, "That OPML file is too large.")
		default:
			fail(http.StatusUnprocessableEntity, "That file is not an OPML subscription list feedmail can read.")
		}
		return
	}
	if len(outlines) > maxWebImport {
		fail(http.StatusUnprocessableEntity, tooManyForWeb(len(outlines)))
		return
	}
	// Each feed fetched spends the account's and the client's budget of
	// new feeds; the ones past it fail, saying when to try again.
	opt := subscribe.ImportOptions{Confirmed: true, ConfirmedBy: store.ConfirmedByAccount, Parallel: 8, PerFeed: 15 * time.Second,
		Budget: s.fetchBudget(r, u.ID)}
	switch v := r.FormValue("delivery"); {
	case v == "" || v == deliveryInstant:
	case !strings.HasPrefix(v, "digest-"):
		fail(http.StatusUnprocessableEntity, "Pick a delivery: instant or one of your digests.")
		return
	default:
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
	// Store failures are logged by the use case; the report shows them.
	d.Report, _ = s.subs.ImportOPML(r.Context(), u, outlines, opt)
	s.render(w, r, http.StatusOK, "import", "Import report", d)
}

// accountExport is GET /account/{token}/opml: the person's feeds as OPML.
func (s *Server) accountExport(w http.ResponseWriter, r *http.Request) {
	u, _, ok := s.accountUser(w, r)
	if !ok {
		return
	}
	var buf bytes.Buffer
	if err := subscribe.ExportOPML(r.Context(), s.Store, u, &buf); err != nil {
		s.serverError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/x-opml; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="feedmail-subscriptions.opml"`)
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}
