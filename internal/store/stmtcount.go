package store

import (
	"context"
	"database/sql"
	"errors"

	"gorm.io/gorm"
)

// Counting statements (Options.OnStatement, the feedmail_db_statements_total
// metric).
//
// The store reaches the database two ways: gorm's statement API and raw
// database/sql calls on the pool gorm holds (the poller's hot path, see
// psConn), which no gorm callback sees. Both go through
// gorm.DB.Statement.ConnPool, so Open replaces that pool with countingPool:
// every Exec, Query, QueryRow and Prepare is one round trip, and so is each
// BEGIN, COMMIT and ROLLBACK.

// countPool installs a counting pool on db calling count once per round
// trip; it does nothing when the pool is not a *sql.DB.
func countPool(db *gorm.DB, count func()) {
	sqlDB, ok := db.Statement.ConnPool.(*sql.DB)
	if !ok || count == nil {
		return
	}
	p := &countingPool{db: sqlDB, n: count}
	db.Config.ConnPool = p
	db.Statement.ConnPool = p
}

// countingPool is a gorm.ConnPool over *sql.DB that counts.
type countingPool struct {
	db *sql.DB
	n  func()
}

var (
	_ gorm.ConnPool         = (*countingPool)(nil)
	_ gorm.ConnPoolBeginner = (*countingPool)(nil)
	_ gorm.GetDBConnector   = (*countingPool)(nil)
	_ gorm.Tx               = (*countingTx)(nil)
	_ gorm.GetDBConnector   = (*countingTx)(nil)
)

func (p *countingPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	p.n()
	return p.db.PrepareContext(ctx, query)
}

func (p *countingPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	p.n()
	return p.db.ExecContext(ctx, query, args...)
}

func (p *countingPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	p.n()
	return p.db.QueryContext(ctx, query, args...)
}

func (p *countingPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	p.n()
	return p.db.QueryRowContext(ctx, query, args...)
}

// BeginTx starts a transaction (one trip: BEGIN) whose statements count.
func (p *countingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	p.n()
	tx, err := p.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &countingTx{tx: tx, db: p.db, n: p.n}, nil
}

// GetDBConn lets gorm.DB.DB() find the *sql.DB (Ping, Close, migrations).
func (p *countingPool) GetDBConn() (*sql.DB, error) { return p.db, nil }

// countingTx is a gorm.Tx over *sql.Tx that counts.
type countingTx struct {
	tx *sql.Tx
	db *sql.DB
	n  func()
}

func (t *countingTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	t.n()
	return t.tx.PrepareContext(ctx, query)
}

func (t *countingTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	t.n()
	return t.tx.ExecContext(ctx, query, args...)
}

func (t *countingTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	t.n()
	return t.tx.QueryContext(ctx, query, args...)
}

func (t *countingTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	t.n()
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (t *countingTx) StmtContext(ctx context.Context, stmt *sql.Stmt) *sql.Stmt {
	return t.tx.StmtContext(ctx, stmt)
}

func (t *countingTx) Commit() error {
	t.n()
	return t.tx.Commit()
}

func (t *countingTx) Rollback() error {
	// A rollback after a commit is a no-op that sends nothing.
	err := t.tx.Rollback()
	if !errors.Is(err, sql.ErrTxDone) {
		t.n()
	}
	return err
}

func (t *countingTx) GetDBConn() (*sql.DB, error) { return t.db, nil }
