package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"

	"gorm.io/gorm"
)

// Counting database round trips.
//
// The store reaches the database two ways: gorm's statement API (whose
// callbacks a plugin could count) and raw database/sql calls on the
// connection pool gorm holds (the poller's hot path), which no gorm
// callback sees. Both go through gorm.DB.Statement.ConnPool, so the bench
// replaces that pool with countingPool: every Exec, Query, QueryRow and
// Prepare is one trip, and so is each BEGIN (BeginTx), COMMIT and ROLLBACK.
// Statements inside a transaction go through countingTx the same way.
// Reading the rows of a large result may take more network reads than one;
// they count as one trip, as does a pgx prepare-and-execute of a statement
// text new to a connection.

// tripCounter counts round trips; safe for concurrent use.
type tripCounter struct{ n atomic.Int64 }

// wrap installs the counting pool on db (and the sessions made from it
// afterwards). It must run before db is shared.
func (c *tripCounter) wrap(db *gorm.DB) error {
	sqlDB, ok := db.Statement.ConnPool.(*sql.DB)
	if !ok {
		return fmt.Errorf("bench: cannot count round trips: the pool is a %T, not *sql.DB", db.Statement.ConnPool)
	}
	p := &countingPool{db: sqlDB, c: c}
	db.Config.ConnPool = p
	db.Statement.ConnPool = p
	return nil
}

// countingPool is a gorm.ConnPool over *sql.DB that counts.
type countingPool struct {
	db *sql.DB
	c  *tripCounter
}

var (
	_ gorm.ConnPool         = (*countingPool)(nil)
	_ gorm.ConnPoolBeginner = (*countingPool)(nil)
	_ gorm.GetDBConnector   = (*countingPool)(nil)
)

func (p *countingPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	p.c.n.Add(1)
	return p.db.PrepareContext(ctx, query)
}

func (p *countingPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	p.c.n.Add(1)
	return p.db.ExecContext(ctx, query, args...)
}

func (p *countingPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	p.c.n.Add(1)
	return p.db.QueryContext(ctx, query, args...)
}

func (p *countingPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	p.c.n.Add(1)
	return p.db.QueryRowContext(ctx, query, args...)
}

// BeginTx starts a transaction (one trip: BEGIN) whose statements count.
func (p *countingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	p.c.n.Add(1)
	tx, err := p.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &countingTx{tx: tx, db: p.db, c: p.c}, nil
}

// GetDBConn lets gorm.DB.DB() find the *sql.DB (Ping, Close, migrations).
func (p *countingPool) GetDBConn() (*sql.DB, error) { return p.db, nil }

// countingTx is a gorm.Tx over *sql.Tx that counts.
type countingTx struct {
	tx *sql.Tx
	db *sql.DB
	c  *tripCounter
}

var (
	_ gorm.Tx             = (*countingTx)(nil)
	_ gorm.GetDBConnector = (*countingTx)(nil)
)

func (t *countingTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	t.c.n.Add(1)
	return t.tx.PrepareContext(ctx, query)
}

func (t *countingTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	t.c.n.Add(1)
	return t.tx.ExecContext(ctx, query, args...)
}

func (t *countingTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	t.c.n.Add(1)
	return t.tx.QueryContext(ctx, query, args...)
}

func (t *countingTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	t.c.n.Add(1)
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (t *countingTx) StmtContext(ctx context.Context, stmt *sql.Stmt) *sql.Stmt {
	return t.tx.StmtContext(ctx, stmt)
}

func (t *countingTx) Commit() error {
	t.c.n.Add(1)
	return t.tx.Commit()
}

func (t *countingTx) Rollback() error {
	// A rollback after a commit is a no-op that sends nothing.
	err := t.tx.Rollback()
	if !errors.Is(err, sql.ErrTxDone) {
		t.c.n.Add(1)
	}
	return err
}

func (t *countingTx) GetDBConn() (*sql.DB, error) { return t.db, nil }
