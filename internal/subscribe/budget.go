package subscribe

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/ratelimit"
)

// Budget is how many feeds feedmail does not know yet a person or a
// client may still have fetched (package web keeps one per account and
// one per client address, an hour's worth, shared by the signup form,
// the API and the OPML upload). Take spends one before each such check.
// A nil Budget is no limit: the operator's commands.
type Budget interface {
	Take(ctx context.Context) (ratelimit.Result, error)
}

// BudgetError says the budget is spent: Wait is how long until one more
// check would be allowed.
type BudgetError struct{ Wait time.Duration }

func (e *BudgetError) Error() string {
	return "feedmail has checked many new feeds for you in the last hour; try again in " + minutesWords(e.Wait)
}

// minutesWords is d rounded up to whole minutes, in words.
func minutesWords(d time.Duration) string {
	m := int((d + time.Minute - 1) / time.Minute)
	if m <= 1 {
		return "a minute"
	}
	return strconv.Itoa(m) + " minutes"
}

// spend takes one check from b: nil when allowed (or b is nil), a
// *BudgetError when spent, or the store's error.
func spend(ctx context.Context, b Budget) error {
	if b == nil {
		return nil
	}
	r, err := b.Take(ctx)
	if err != nil {
		return fmt.Errorf("fetch budget: %w", err)
	}
	if !r.OK {
		return &BudgetError{Wait: r.Wait}
	}
	return nil
}
