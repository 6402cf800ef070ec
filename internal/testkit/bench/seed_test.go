package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// create sizes its batches by the model's columns: 1,000 feeds (about 50
// columns each, more than a fixed guess of 35 allowed) go into SQLite,
// whose statements take at most 32,766 parameters, and every row gets its
// id. The digest scenario's seeding once stopped there on SQLite.
func TestCreateBatchesWideRows(t *testing.T) {
	st := storetest.Open(t, storetest.Options{})
	now := time.Now().UTC()
	feeds := make([]store.Feed, 1000)
	for i := range feeds {
		feeds[i] = store.Feed{URL: "https://wide.example/" + strconv.Itoa(i), State: store.FeedActive,
			NextPollAt: now, CreatedAt: now, UpdatedAt: now}
	}
	if err := create(context.Background(), st, feeds, nil); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := st.DB.Model(&store.Feed{}).Count(&n).Error; err != nil || n != 1000 || feeds[999].ID == 0 {
		t.Fatalf("%d feeds stored (want 1000), last id %d, %v", n, feeds[999].ID, err)
	}
}
