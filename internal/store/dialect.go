package store

import (
	"context"
	"database/sql"
	"sort"
	"strconv"
	"strings"

	"gorm.io/gorm"
)

// The statement builder and the differences between Postgres and SQLite.

// valuesCTE builds "WITH name(cols) AS (VALUES (…), …)" for rows and returns
// it with its arguments. On Postgres each placeholder is cast to its column's
// type (pgTypes), because untyped parameters in VALUES resolve to text.
func (s *Store) valuesCTE(name string, cols, pgTypes []string, rows [][]any) (string, []any) {
	var sb strings.Builder
	sb.WriteString("WITH " + name + "(" + strings.Join(cols, ", ") + ") AS (VALUES ")
	args := make([]any, 0, len(rows)*len(cols))
	for i, r := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for j, v := range r {
			if j > 0 {
				sb.WriteString(", ")
			}
			if s.Postgres() {
				sb.WriteString("CAST(? AS " + pgTypes[j] + ")")
			} else {
				sb.WriteByte('?')
			}
			args = append(args, v)
		}
		sb.WriteByte(')')
	}
	sb.WriteString(")")
	return sb.String(), args
}

// caseUpdate builds "UPDATE table SET [extra, ]col = CASE id WHEN ? THEN ?
// … ELSE col END WHERE id IN ?" for per-row values in one statement. The
// caller supplies extra's arguments before the returned ones.
func outboxCaseUpdate(table, col string, vals map[int64]any, extra string) (string, []any) {
	ids := make([]int64, 0, len(vals))
	for id := range vals {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	var b strings.Builder
	args := make([]any, 0, 2*len(ids)+1)
	b.WriteString("UPDATE " + table + " SET ")
	if extra != "" {
		b.WriteString(extra + ", ")
	}
	b.WriteString(col + " = CASE id")
	for _, id := range ids {
		b.WriteString(" WHEN ? THEN ?")
		args = append(args, id, vals[id])
	}
	b.WriteString(" ELSE " + col + " END WHERE id IN ?")
	args = append(args, ids)
	return b.String(), args
}

// psConn is the connection (or transaction) a Store runs raw SQL on.
func (s *Store) psConn(ctx context.Context) gorm.ConnPool {
	return s.DB.WithContext(ctx).Statement.ConnPool
}

// psQuery builds one SQL statement with placeholders of the store's dialect
// ($n on Postgres, ? on SQLite). Raw database/sql is used on the hot path:
// gorm's statement building costs more than the database for batches of
// thousands of arguments.
type psQuery struct {
	pg   bool
	b    strings.Builder
	args []any
}

func (s *Store) psNew() *psQuery { return &psQuery{pg: s.Postgres()} }

// sql appends text.
func (q *psQuery) sql(parts ...string) *psQuery {
	for _, p := range parts {
		q.b.WriteString(p)
	}
	return q
}

// arg appends a placeholder for v, cast to pgType on Postgres (untyped
// parameters in VALUES lists and SELECT lists resolve to text there).
func (q *psQuery) arg(v any, pgType string) *psQuery {
	q.args = append(q.args, v)
	if q.pg {
		q.b.WriteString("$")
		q.b.WriteString(strconv.Itoa(len(q.args)))
		if pgType != "" {
			q.b.WriteString("::")
			q.b.WriteString(pgType)
		}
	} else {
		q.b.WriteByte('?')
	}
	return q
}

// ids appends "(a, b, c)".
func (q *psQuery) ids(ids []int64) *psQuery {
	q.b.WriteByte('(')
	for i, id := range ids {
		if i > 0 {
			q.b.WriteString(", ")
		}
		q.arg(id, "bigint")
	}
	q.b.WriteByte(')')
	return q
}

// in appends " IN (a, b, c)" on SQLite and " = ANY($n::bigint[])" on
// Postgres (one parameter, one statement text whatever the count, so the
// prepared statement is reused).
func (q *psQuery) in(ids []int64) *psQuery {
	if q.pg {
		q.sql(" = ANY(")
		q.arg(ids, "bigint[]")
		return q.sql(")")
	}
	q.sql(" IN ")
	return q.ids(ids)
}

func (q *psQuery) String() string { return q.b.String() }

func (q *psQuery) exec(ctx context.Context, c gorm.ConnPool) (int64, error) {
	res, err := c.ExecContext(ctx, q.String(), q.args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q *psQuery) query(ctx context.Context, c gorm.ConnPool) (*sql.Rows, error) {
	return c.QueryContext(ctx, q.String(), q.args...)
}

// psChunk is how many rows go into one multi-row statement: well under the
// parameter limits of both databases (Postgres 65535, SQLite 32766) for the
// widest statement here (~21 columns).
const psChunk = 500

// psChunkOf is the chunk size for statements over many rows: psChunk on
// SQLite; on Postgres, where arrays carry the rows in a few parameters,
// everything at once.
func (s *Store) psChunkOf(n int) int {
	if s.Postgres() {
		return max(n, 1)
	}
	return psChunk
}

// psCol is a column of a VALUES or unnest list, with its Postgres type.
type psCol struct{ name, pgType string }

// psUnnestV appends "WITH v AS (SELECT * FROM unnest($1::t1[], …) AS v(c1,
// …))": one array parameter per column (arrays[k] holds column cols[k]),
// so the statement text is the same for every batch size and Postgres
// plans it once per connection.
func (q *psQuery) psUnnestV(cols []psCol, arrays []any) {
	q.sql("WITH v AS (SELECT * FROM unnest(")
	for k, col := range cols {
		if k > 0 {
			q.sql(", ")
		}
		q.arg(arrays[k], col.pgType+"[]")
	}
	q.sql(") AS v(").names(cols).sql("))")
}

// names appends the names of cols, separated by commas.
func (q *psQuery) names(cols []psCol) *psQuery {
	for k, col := range cols {
		if k > 0 {
			q.sql(", ")
		}
		q.sql(col.name)
	}
	return q
}

// skipLocked is the row-locking suffix of a claim's inner SELECT: Postgres lets
// concurrent claimers pass over each other's rows; SQLite has one writer at a
// time, so the claiming UPDATE is atomic on its own.
func (s *Store) skipLocked() string {
	if s.Postgres() {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}
