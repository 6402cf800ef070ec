package model

import "time"

// LedgerLine is one change to a person's credits as they see it: the JSON
// API's ledger pages and the account export both give this shape
// (docs/api.md, the OpenAPI document's LedgerEntry). CreatedAt is UTC.
//
// `feedmail credits` commands print it with the account's address and
// the entry's idempotency key added for the operator.
type LedgerLine struct {
	ID           int64     `json:"id"`
	Kind         string    `json:"kind"`
	Amount       int64     `json:"amount"`
	BalanceAfter int64     `json:"balance_after"`
	Reason       string    `json:"reason"`
	CreatedAt    time.Time `json:"created_at"`
}
