package web

import (
	"net/http"

	"github.com/feedmail/feedmail/internal/ledgercsv"
)

// accountLedger is GET /account/{token}/ledger.csv: the person's whole
// credit ledger as CSV (package ledgercsv, the same as `feedmail credits
// ledger --csv`), streamed as a download. A failure after the first bytes
// can only cut the download short; it is logged.
func (s *Server) accountLedger(w http.ResponseWriter, r *http.Request) {
	u, _, ok := s.accountUser(w, r)
	if !ok {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="feedmail-credits.csv"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	cw, err := ledgercsv.NewWriter(w)
	if err == nil {
		err = s.Store.EachLedgerEntry(r.Context(), u.ID, cw.Write)
	}
	if err == nil {
		err = cw.Flush()
	}
	if err != nil {
		s.Log.Error("ledger download cut short", "user", u.ID, "err", err)
	}
}
