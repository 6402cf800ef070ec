// Package model owns the plain value types that several packages share:
// a post's media as the feed gave it ([ItemMedia], [Enclosure]), a
// channel with its target ([ChannelChoice], [ChannelEmail]), a line of the
// credit ledger as people see it ([LedgerLine]) and the account export
// ([AccountExport]). The store reads and writes them, and the API, the
// command line, the mailer and the channels show or send them, without
// the channels importing the store.
//
// It must not do I/O, import gorm or any other feedmail package, or hold a
// rule beyond the shape of its values: their fields, their JSON and the
// text ItemMedia is kept as.
package model
