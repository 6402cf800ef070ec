package lowbalance

import (
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
)

// storedHistory is the History the product passes (cmd/feedmail): the
// stored history of package subscribe, on clk.
func storedHistory(s *store.Store, clk clock.Clock) FeedHistory {
	return (&subscribe.Service{Store: s, Clock: clk}).StoredHistoryFiltered
}

// TestNewNeedsHistory: a pass without a way to read history is refused
// at once, not when its first line comes due.
func TestNewNeedsHistory(t *testing.T) {
	if _, err := New(Config{Store: &store.Store{}}); err == nil {
		t.Fatal("New without History: no error")
	}
}
