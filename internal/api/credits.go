package api

import (
	"net/http"

	"github.com/feedmail/feedmail/internal/store"
)

// balance is GET /api/v1/balance: the account's credits.
func (s *Server) balance(w http.ResponseWriter, r *http.Request, u *store.User) {
	writeJSON(w, http.StatusOK, map[string]int64{"balance": u.Balance})
}

// ledger is GET /api/v1/ledger: the account's ledger, newest first, a
// page at a time.
func (s *Server) ledger(w http.ResponseWriter, r *http.Request, u *store.User) {
	p, ok := readPage(w, r)
	if !ok {
		return
	}
	rows, err := s.Store.LedgerPage(r.Context(), u.ID, p.last, p.limit+1)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	writeJSON(w, http.StatusOK, pageOf(rows, p.limit, func(e store.LedgerEntry) int64 { return e.ID },
		store.LedgerEntry.Line))
}

// export is GET /api/v1/export: everything kept about the account, the
// same JSON as the account page's download and `feedmail account export`.
func (s *Server) export(w http.ResponseWriter, r *http.Request, u *store.User) {
	ex, err := s.Store.ExportAccount(r.Context(), u)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	b, err := ex.JSON()
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
