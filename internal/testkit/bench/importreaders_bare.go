package bench

import (
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/feedmail/feedmail/internal/store"
)

// bareBatch writes readers start..end-1 as the import would, with nothing
// but multi-row INSERTs (and one SELECT of the feeds already there):
// confirmed users with their trial balance, their trial grants, the
// feeds missing, the subscriptions.
func (e *env) bareBatch(tx *gorm.DB, start, end, nf int) error {
	now := e.clk.Now().UTC()
	var args []any
	for i := start; i < end; i++ {
		args = append(args, readerEmail(i), "UTC", now, now, true, 100)
	}
	users, err := insertReturning(tx, "users (email, timezone, created_at, confirmed_at, trial_granted, balance)", 6, args, "email")
	if err != nil {
		return err
	}
	args = args[:0]
	for _, id := range users {
		args = append(args, id, store.LedgerGrant, 100, 100, store.TrialKey(id), "trial credits", now)
	}
	if err := tx.Exec(valuesSQL("ledger_entries (user_id, kind, amount, balance_after, idempotency_key, reason, created_at)", 7, len(users)), args...).Error; err != nil {
		return err
	}
	feeds, err := e.bareFeeds(tx, start, end, nf)
	if err != nil {
		return err
	}
	args = args[:0]
	for i := start; i < end; i++ {
		fa, fb := readerFeeds(i, nf)
		for k, f := range []int{fa, fb} {
			folder := ""
			if k == 0 {
				folder = "Moved"
			}
			args = append(args, users[readerEmail(i)], feeds[readerFeedURL(f)], store.SubActive, now, now, now,
				store.ConfirmedByOperator, folder, "email", "", "full")
		}
	}
	return tx.Exec(valuesSQL("subscriptions (user_id, feed_id, state, created_at, requested_at, confirmed_at, confirmed_by, folder, channel, target, format)",
		11, 2*(end-start)), args...).Error
}

// bareFeeds returns the ids of the feeds of readers start..end-1 by URL,
// creating the missing ones.
func (e *env) bareFeeds(tx *gorm.DB, start, end, nf int) (map[string]int64, error) {
	var urls []string
	seen := map[string]bool{}
	for i := start; i < end; i++ {
		fa, fb := readerFeeds(i, nf)
		for _, f := range []int{fa, fb} {
			if u := readerFeedURL(f); !seen[u] {
				seen[u] = true
				urls = append(urls, u)
			}
		}
	}
	feeds := map[string]int64{}
	rows, err := tx.Raw("SELECT id, url FROM feeds WHERE url IN ?", urls).Rows()
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var u string
		if err := rows.Scan(&id, &u); err != nil {
			rows.Close()
			return nil, err
		}
		feeds[u] = id
	}
	rows.Close()
	now := e.clk.Now().UTC()
	var args []any
	for _, u := range urls {
		if _, ok := feeds[u]; !ok {
			args = append(args, u, store.HostOf(u), store.FeedActive, now, "new feed: first poll", now, now)
		}
	}
	if len(args) == 0 {
		return feeds, nil
	}
	made, err := insertReturning(tx, "feeds (url, host, state, next_poll_at, poll_reason, created_at, updated_at)", 7, args, "url")
	for u, id := range made {
		feeds[u] = id
	}
	return feeds, err
}

// valuesSQL is "INSERT INTO table (cols) VALUES (?, …), …" for n rows of
// width columns.
func valuesSQL(table string, width, n int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	return "INSERT INTO " + table + " VALUES " + strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
}

// insertReturning inserts the rows of args (width columns each) and
// returns the new ids by the value of column key.
func insertReturning(tx *gorm.DB, table string, width int, args []any, key string) (map[string]int64, error) {
	rows, err := tx.Raw(valuesSQL(table, width, len(args)/width)+" RETURNING id, "+key, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("insert into %s: %w", table, err)
	}
	defer rows.Close()
	out := make(map[string]int64, len(args)/width)
	for rows.Next() {
		var id int64
		var k string
		if err := rows.Scan(&id, &k); err != nil {
			return nil, err
		}
		out[k] = id
	}
	return out, rows.Err()
}
