package store

import (
	"testing"

	"github.com/feedmail/feedmail/migrations"
)

// TestRowsPerInsert: on SQLite an import's multi-row INSERT stays near
// 1,000 parameters (its driver's binding costs the square of them: 500
// subscriptions a statement took twice the CPU); Postgres takes psChunk.
func TestRowsPerInsert(t *testing.T) {
	lite, pg := &Store{Dialect: migrations.SQLite}, &Store{Dialect: migrations.Postgres}
	for _, width := range []int{6, 7, 9, subscriptionColumns, 2000} {
		n := lite.rowsPerInsert(width)
		if n < 1 || (n > 1 && n*width > 1000) {
			t.Errorf("SQLite, %d columns: %d rows a statement, want 1 or more and at most 1,000 parameters", width, n)
		}
		if got := pg.rowsPerInsert(width); got != psChunk {
			t.Errorf("Postgres, %d columns: %d rows, want %d", width, got, psChunk)
		}
	}
}
