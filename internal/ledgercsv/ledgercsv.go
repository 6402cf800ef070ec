// Package ledgercsv writes a person's credit ledger as CSV, the one format
// the account page's download and `feedmail credits ledger --csv` share:
// a header row, then one row per entry, oldest first. Cells are quoted by
// encoding/csv, and a text cell a spreadsheet would read as a formula
// (starting with = + - @, a tab or a carriage return) gets a leading '
// (Cell).
//
// It must not query the database: callers hand it the entries in order.
package ledgercsv

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// Header is the first row.
var Header = []string{"time", "kind", "credits", "balance_after", "reason", "reference"}

// Writer writes ledger rows to an io.Writer.
type Writer struct {
	w *csv.Writer
}

// NewWriter writes the header row to w and returns a Writer for the
// entries.
func NewWriter(w io.Writer) (*Writer, error) {
	cw := csv.NewWriter(w)
	if err := cw.Write(Header); err != nil {
		return nil, fmt.Errorf("ledger csv: header: %w", err)
	}
	return &Writer{w: cw}, nil
}

// Write writes one entry: its time in RFC 3339 UTC, kind, signed amount
// ("+5000", "-1"), balance after, reason and reference (the entry's
// idempotency key: "purchase:<Checkout Session>" for a purchase).
func (w *Writer) Write(e store.LedgerEntry) error {
	amount := strconv.FormatInt(e.Amount, 10)
	if e.Amount > 0 {
		amount = "+" + amount
	}
	row := []string{e.CreatedAt.UTC().Format(time.RFC3339), Cell(e.Kind), amount,
		strconv.FormatInt(e.BalanceAfter, 10), Cell(e.Reason), Cell(e.IdempotencyKey)}
	if err := w.w.Write(row); err != nil {
		return fmt.Errorf("ledger csv: entry %d: %w", e.ID, err)
	}
	return nil
}

// Flush writes what is buffered and returns the first error met.
func (w *Writer) Flush() error {
	w.w.Flush()
	if err := w.w.Error(); err != nil {
		return fmt.Errorf("ledger csv: %w", err)
	}
	return nil
}

// Cell returns s as a text cell no spreadsheet runs as a formula: with a
// leading ' when it starts with = + - @, a tab or a carriage return.
func Cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
