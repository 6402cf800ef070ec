package main

import (
	"context"
	"flag"
	"io"

	"github.com/feedmail/feedmail/internal/ledgercsv"
	"github.com/feedmail/feedmail/internal/store"
)

// writeLedgerCSV writes userID's whole ledger to w as CSV (package
// ledgercsv), streaming it from the store.
func writeLedgerCSV(ctx context.Context, s *store.Store, userID int64, w io.Writer) error {
	cw, err := ledgercsv.NewWriter(w)
	if err != nil {
		return err
	}
	if err := s.EachLedgerEntry(ctx, userID, cw.Write); err != nil {
		return err
	}
	return cw.Flush()
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
