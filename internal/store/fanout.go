package store

import (
	"context"

	"gorm.io/gorm"
)

// psCountByFeed runs a fan-out INSERT … RETURNING item_id and counts the
// rows per record.
func (s *Store) psCountByFeed(ctx context.Context, c gorm.ConnPool, q *psQuery, itemFeed map[int64]int64,
	idx map[int64]int, add func(*PollOutcome), outs []PollOutcome) error {
	rows, err := q.query(ctx, c)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var itemID int64
		if err := rows.Scan(&itemID); err != nil {
			return err
		}
		if i, ok := idx[itemFeed[itemID]]; ok {
			add(&outs[i])
		}
	}
	return rows.Err()
}
