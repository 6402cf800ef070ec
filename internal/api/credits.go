package api

import (
	"net/http"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// balance is GET /api/v1/balance: the account's credits.
func (s *Server) balance(w http.ResponseWriter, r *http.Request, u *store.User) {
	writeJSON(w, http.StatusOK, map[string]int64{"balance": u.Balance})
}

// ledgerJSON is one change to the account's credits.
type ledgerJSON struct {
	ID           int64     `json:"id"`
	Kind         string    `json:"kind"`
	Amount       int64     `json:"amount"`
	BalanceAfter int64     `json:"balance_after"`
	Reason       string    `json:"reason"`
	CreatedAt    time.Time `json:"created_at"`
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
		func(e store.LedgerEntry) ledgerJSON {
			return ledgerJSON{ID: e.ID, Kind: e.Kind, Amount: e.Amount, BalanceAfter: e.BalanceAfter, Reason: e.Reason,
				CreatedAt: e.CreatedAt.UTC()}
		}))
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
