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
// How a statement is written depends on what it says, one way for each:
//
//   - gorm chains on the models (Take, Find, Create, UpdateColumns, Delete,
//     Pluck, with Where conditions) read and write the rows of one table by
//     key or by plain conditions; a conditional UPDATE's RowsAffected is
//     its answer;
//   - SQL text with ? placeholders through gorm (DB.Exec, DB.Raw) says what
//     a chain cannot say plainly: joins and sub-selects, INSERT … SELECT,
//     ON CONFLICT, UPDATE … FROM, RETURNING, CASE, aggregates, a value
//     computed from columns (n = n + 1, a = b), and the UPDATEs of claims
//     and leases (lease_owner or lease_until in the WHERE);
//   - psQuery (dialect.go) builds the batch statements of the hot paths (a
//     poll's write, the fan-out, the mailer's charges and sent marks) and
//     runs them on database/sql, with the dialect's placeholders and, on
//     Postgres, array parameters, so that a statement has one text
//     whatever the number of rows (a gorm read by many ids takes
//     dialect.idsIn for the same reason). Transactions of such statements
//     start with useGenericPlans, so Postgres plans each once per
//     connection. The two statements of the Postgres feed claim run there
//     too, their $n placeholders numbered by hand because each is used
//     more than once.
//
// TestSQLTextOnlyWhereTheRuleAllows fails on SQL text given to Exec or Raw
// that uses none of the constructs above.
//
// A condition several statements share is one function next to its
// aggregate (pausedSQL in pause.go, polledSQL in feeds.go), never spelled
// out again; a difference between the databases is a method of dialect
// (dialect.go), never a test of which database runs inside a query.
//
// Two databases are supported: Postgres (any number of feedmail processes)
// and SQLite (the embedded default, one process). All times are written in
// UTC; on SQLite they are stored as text in one fixed format, which sorts
// correctly only because of that.
package store
