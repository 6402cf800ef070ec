package store

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// dialect is every difference between Postgres and SQLite that the
// store's statements depend on: the rest of the package asks it, never
// which database runs.
type dialect struct{ pg bool }

// sqlDialect is the dialect of the store's database.
func (s *Store) sqlDialect() dialect { return dialect{pg: s.Postgres()} }

// hostLeases reports whether feeds are claimed through leases on their
// hosts (Postgres, where several processes poll; see ClaimDueFeeds) rather
// than by a lease on each feed alone (SQLite, one process).
func (d dialect) hostLeases() bool { return d.pg }

// arrayParams reports whether many rows travel as one array parameter per
// column (Postgres: unnest, = ANY) rather than as VALUES and IN lists of
// one placeholder per value (SQLite).
func (d dialect) arrayParams() bool { return d.pg }

// chunkOf is the chunk size for statements over n rows: psChunk with lists
// of placeholders; with array parameters, everything at once.
func (d dialect) chunkOf(n int) int {
	if d.arrayParams() {
		return max(n, 1)
	}
	return psChunk
}

// placeholder writes the n-th placeholder: $n, cast to pgType when given,
// on Postgres (untyped parameters in VALUES lists and SELECT lists resolve
// to text there); ? on SQLite.
func (d dialect) placeholder(b *strings.Builder, n int, pgType string) {
	if !d.pg {
		b.WriteByte('?')
		return
	}
	b.WriteString("$")
	b.WriteString(strconv.Itoa(n))
	if pgType != "" {
		b.WriteString("::")
		b.WriteString(pgType)
	}
}

// valuesParam is a gorm placeholder in a VALUES list: cast to pgType on
// Postgres, for the same reason.
func (d dialect) valuesParam(pgType string) string {
	if d.pg {
		return "CAST(? AS " + pgType + ")"
	}
	return "?"
}

// idsIn is the gorm condition "col IN ?" over ids with its argument: on
// Postgres "col = ANY(?)" with one array parameter, so that the text is
// the same whatever the number of ids and its prepared statement is
// reused; an IN list on SQLite.
func (d dialect) idsIn(col string, ids []int64) (string, any) {
	if d.arrayParams() {
		return col + " = ANY(?)", pgtype.Array[int64]{Elements: ids, Valid: true,
			Dims: []pgtype.ArrayDimension{{Length: int32(len(ids)), LowerBound: 1}}}
	}
	return col + " IN ?", ids
}

// forUpdateOf is the suffix that locks the rows of table alias a SELECT
// reads until the transaction ends. SQLite transactions are BEGIN
// IMMEDIATE (one writer at a time), so it needs none.
func (d dialect) forUpdateOf(alias string) string {
	if d.pg {
		return " FOR UPDATE OF " + alias
	}
	return ""
}

// lockOrderedBy is the suffix that locks the rows a SELECT reads (as
// forUpdateOf) taking the locks in col order, so two transactions never
// wait on each other in a cycle.
func (d dialect) lockOrderedBy(col string) string {
	if d.pg {
		return " ORDER BY " + col + " FOR UPDATE"
	}
	return ""
}

// lockRow makes a gorm query lock the row it reads (as forUpdateOf).
func (d dialect) lockRow(q *gorm.DB) *gorm.DB {
	if d.pg {
		return q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return q
}

// skipLocked is the row-locking suffix of a claim's inner SELECT: Postgres
// lets concurrent claimers pass over each other's rows; SQLite has one
// writer at a time, so the claiming UPDATE is atomic on its own.
func (d dialect) skipLocked() string {
	if d.pg {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// idInSelect is the condition "the row's id is one of those sub selects",
// for claiming UPDATEs whose sub picks a LIMITed batch of ids. On Postgres
// it is id = ANY(ARRAY(sub)): sub runs once, before the update, and the
// update reads its rows by primary key. Written id IN (sub), the generic
// plan of the prepared statement (the LIMIT unknown) hash-joined sub with
// a sequential scan of the whole table on every claim, and under
// concurrent claims an outbox claim of 100 rows was seen running for
// 49 s with 80,000 rows queued.
func (d dialect) idInSelect(sub string) string {
	if d.pg {
		return "id = ANY(ARRAY(" + sub + "))"
	}
	return "id IN (" + sub + ")"
}

// genericPlans is the statement that makes the rest of the current
// transaction run prepared statements on their generic plans (Postgres),
// "" where there is none (SQLite). Postgres otherwise plans anew each
// execution of a statement whose generic plan it judges costlier than a
// custom one, as it does for the routing joins over = ANY($n) arrays.
func (d dialect) genericPlans() string {
	if d.pg {
		return "SET LOCAL plan_cache_mode = force_generic_plan"
	}
	return ""
}

// addSeconds is the SQL expression of the time parameter plus a number
// of seconds: the first placeholder is the time, the second the seconds
// expression's parameter inside secs (which must contain one ?).
func (d dialect) addSeconds(secs string) string {
	if d.pg {
		return "?::timestamptz + make_interval(secs => " + secs + ")"
	}
	return "strftime('%Y-%m-%d %H:%M:%S+00:00', ?, '+' || (" + secs + ") || ' seconds')"
}

// domainExpr is the SQL of the lower-cased domain of outbox.to_addr (after
// its first "@"; addresses with more than one are not worth a regular
// expression in both dialects).
func (d dialect) domainExpr() string {
	if d.pg {
		return "lower(substr(to_addr, strpos(to_addr, '@') + 1))"
	}
	return "lower(substr(to_addr, instr(to_addr, '@') + 1))"
}

// valuesCTE builds "WITH name(cols) AS (VALUES (…), …)" for rows and returns
// it with its arguments, for gorm. Each placeholder is a valuesParam of its
// column's type (pgTypes).
func (s *Store) valuesCTE(name string, cols, pgTypes []string, rows [][]any) (string, []any) {
	d := s.sqlDialect()
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
			sb.WriteString(d.valuesParam(pgTypes[j]))
			args = append(args, v)
		}
		sb.WriteByte(')')
	}
	sb.WriteString(")")
	return sb.String(), args
}

// useGenericPlans runs genericPlans inside the caller's transaction on c:
// for transactions whose statements' plans do not depend on their
// arguments' values (rows by key, arrays of ids), so that each is planned
// once per connection, not once per execution.
func (s *Store) useGenericPlans(ctx context.Context, c gorm.ConnPool) error {
	q := s.sqlDialect().genericPlans()
	if q == "" {
		return nil
	}
	if _, err := c.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("generic plans: %w", err)
	}
	return nil
}

// psConn is the connection (or transaction) a Store runs raw SQL on.
func (s *Store) psConn(ctx context.Context) gorm.ConnPool {
	return s.DB.WithContext(ctx).Statement.ConnPool
}

// psQuery builds one SQL statement with placeholders of the store's dialect
// and runs it on raw database/sql, which the hot paths use because gorm's
// statement building costs more than the database for batches of thousands
// of arguments.
type psQuery struct {
	d    dialect
	b    strings.Builder
	args []any
}

func (s *Store) psNew() *psQuery { return &psQuery{d: s.sqlDialect()} }

// sql appends text.
func (q *psQuery) sql(parts ...string) *psQuery {
	for _, p := range parts {
		q.b.WriteString(p)
	}
	return q
}

// arg appends a placeholder for v (see dialect.placeholder).
func (q *psQuery) arg(v any, pgType string) *psQuery {
	q.args = append(q.args, v)
	q.d.placeholder(&q.b, len(q.args), pgType)
	return q
}

// in appends " IN (a, b, c)" with lists of placeholders and " =
// ANY($n::bigint[])" with array parameters (one parameter, one statement
// text whatever the count, so the prepared statement is reused).
func (q *psQuery) in(ids []int64) *psQuery { return inList(q, ids, "bigint") }

// inList is in for values of any type, pgType their Postgres type.
func inList[T any](q *psQuery, vals []T, pgType string) *psQuery {
	if q.d.arrayParams() {
		q.sql(" = ANY(")
		q.arg(vals, pgType+"[]")
		return q.sql(")")
	}
	q.sql(" IN (")
	for i, v := range vals {
		if i > 0 {
			q.b.WriteString(", ")
		}
		q.arg(v, pgType)
	}
	return q.sql(")")
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

// psScan runs q and returns its rows' single column.
func psScan[T any](ctx context.Context, c gorm.ConnPool, q *psQuery) ([]T, error) {
	rows, err := q.query(ctx, c)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// psChunk is how many rows go into one multi-row statement: well under the
// parameter limits of both databases (Postgres 65535, SQLite 32766) for the
// widest statement here (~24 columns).
const psChunk = 500

// psChunkOf is the dialect's chunk size for a statement over n rows.
func (s *Store) psChunkOf(n int) int { return s.sqlDialect().chunkOf(n) }

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

// psRowsV appends "WITH v(c1, …) AS …" holding n rows, arrays[k] (a
// slice of n values) being column cols[k]: psUnnestV where the dialect
// takes array parameters, so the text is the same for every n, a VALUES
// list otherwise.
func (q *psQuery) psRowsV(cols []psCol, arrays []any, n int) *psQuery {
	if q.d.arrayParams() {
		q.psUnnestV(cols, arrays)
		return q
	}
	vals := make([]reflect.Value, len(arrays))
	for k, a := range arrays {
		vals[k] = reflect.ValueOf(a)
	}
	q.sql("WITH v(").names(cols).sql(") AS (VALUES ")
	for i := range n {
		if i > 0 {
			q.sql(", ")
		}
		q.sql("(")
		for k := range cols {
			if k > 0 {
				q.sql(", ")
			}
			q.arg(vals[k].Index(i).Interface(), "")
		}
		q.sql(")")
	}
	return q.sql(")")
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
