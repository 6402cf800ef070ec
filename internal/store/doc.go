// Package store owns the database: the gorm models, every query the other
// packages need (behind functions whose names say what they do), Open and
// migrations, claims with leases, and transactions. It must not know about
// HTTP or email, and holds no business rule of its own: the ledger's rules
// are billing's, applied here inside transactions.
//
// There is one file per aggregate, holding its gorm model and its queries
// (feeds, items, subscriptions, digests, outbox, ledger, …); a poll's write
// is pollwrite.go, the routing of a new item to email or digest fanout.go,
// and every difference between the two databases is the dialect type in
// dialect.go.
//
// Two databases are supported: Postgres (any number of feedmail processes)
// and SQLite (the embedded default, one process). All times are written in
// UTC; on SQLite they are stored as text in one fixed format, which sorts
// correctly only because of that.
package store
