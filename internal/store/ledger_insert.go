package store

import "time"

// ledgerCols are the columns of ledger rows written in batches.
var ledgerCols = []psCol{{"user_id", "bigint"}, {"kind", "text"}, {"amount", "bigint"}, {"balance_after", "bigint"},
	{"idempotency_key", "text"}, {"reason", "text"}, {"created_at", "timestamptz"}}

// insertLedgerEntries builds one INSERT of entries (their IDs are not
// read back): the same text whatever their number on Postgres. The
// caller has locked their people's rows and checked their keys.
func (s *Store) insertLedgerEntries(entries []LedgerEntry) *psQuery {
	n := len(entries)
	users, kinds, amounts, afters := make([]int64, n), make([]string, n), make([]int64, n), make([]int64, n)
	keys, reasons, ats := make([]string, n), make([]string, n), make([]time.Time, n)
	for i, e := range entries {
		users[i], kinds[i], amounts[i], afters[i] = e.UserID, e.Kind, e.Amount, e.BalanceAfter
		keys[i], reasons[i], ats[i] = e.IdempotencyKey, e.Reason, utc(e.CreatedAt)
	}
	q := s.psNew().psRowsV(ledgerCols, []any{users, kinds, amounts, afters, keys, reasons, ats}, n)
	return q.sql("\nINSERT INTO ledger_entries (").names(ledgerCols).sql(")\nSELECT ").names(ledgerCols).sql(" FROM v")
}
