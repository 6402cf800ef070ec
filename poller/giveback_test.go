package poller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/poller"
)

// TestGiveBacksOfABackedOffHost claims 300 feeds of a host that asked to
// be left alone, with 16 workers giving them back together: every one is
// given back exactly as alone (due after the back-off, its reason said,
// its lease cleared), none is fetched or lost, and a second pass at the
// same time finds nothing due.
func TestGiveBacksOfABackedOffHost(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(wkT0)
	s := wkOpen(t, clk)
	urls := make([]string, 300)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://backed.example/feed/%d", i)
	}
	wkBulkFollow(t, s, urls, nil, wkT0)
	until := wkT0.Add(time.Hour)
	if err := s.BackOffHost(ctx, "backed.example", until, "429 Too Many Requests"); err != nil {
		t.Fatal(err)
	}
	p := wkPoller(t, s, clk, "gb", func(c *poller.Config) { c.Concurrency = 16 })
	n, err := p.PollDue(ctx)
	if err != nil || n != len(urls) {
		t.Fatalf("first pass: claimed %d, err %v; want %d", n, err, len(urls))
	}
	checks := []struct {
		what  string
		where string
		args  []any
	}{
		{"due after the back-off", "next_poll_at >= ?", []any{until}},
		{"lease cleared", "lease_owner = '' AND lease_until IS NULL", nil},
		{"reason names the back-off", "poll_reason LIKE ?", []any{"host backed.example backed off until %"}},
		{"never polled", "last_polled_at IS NULL", nil},
	}
	for _, c := range checks {
		if got := wkCount(t, s, "feeds", c.where, c.args...); got != int64(len(urls)) {
			t.Errorf("%s: %d of %d feeds", c.what, got, len(urls))
		}
	}
	if got := wkCount(t, s, "poll_log", "1 = 1"); got != 0 {
		t.Errorf("%d poll_log lines for feeds never fetched", got)
	}
	if n, err := p.PollDue(ctx); err != nil || n != 0 {
		t.Errorf("second pass at the same time claimed %d (err %v), want 0", n, err)
	}
}
