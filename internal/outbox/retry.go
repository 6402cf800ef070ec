package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/bounce"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// failure is a row that was not sent, and why.
type failure struct {
	j     *job
	cause error
}

// settleFailures applies the rules to rows that were not sent: a
// cancelled row ends, uncounted; every other failure is settled by the
// row's way (way.settle), each way's failures at once. A row no way
// carries (wayOf) failed before any way could judge it, and is judged as
// email judges a failure without a reply (settleMail).
func (o *Outbox) settleFailures(ctx context.Context, fs []failure, ds *destinations) {
	byWay := map[way][]failure{}
	for _, f := range fs {
		if errors.Is(f.cause, ErrCancelled) {
			o.fail(ctx, f.j, "cancelled: "+f.cause.Error(), false)
			o.count(f.j.row.Kind, "cancelled")
			o.cfg.Log.Info("email cancelled", "outbox", f.j.row.ID, "kind", f.j.row.Kind, "reason", f.cause)
			continue
		}
		byWay[f.j.way] = append(byWay[f.j.way], f)
	}
	for _, w := range o.ways {
		if len(byWay[w]) > 0 {
			w.settle(ctx, byWay[w], ds)
		}
	}
	if len(byWay[nil]) > 0 {
		o.settleMail(ctx, byWay[nil], ds)
	}
}

// retry puts a row back with its own backoff after a temporary failure
// judged v, or fails it (refunded, not counted) once RetryFor is spent.
func (o *Outbox) retry(ctx context.Context, j *job, cause error, v bounce.Verdict) {
	row := j.row
	o.retryIn(ctx, j, cause, 0, o.cfg.Log.With("outbox", row.ID, "kind", row.Kind, "to", row.Address, "reason", v.Reason))
}

// retryIn is retry for any channel: the row's backoff, but not sooner
// than least (a wait the target asked for).
func (o *Outbox) retryIn(ctx context.Context, j *job, cause error, least time.Duration, log *slog.Logger) {
	row := j.row
	delay, ok := RetryDelay(row.Attempts+1, o.cfg.RetryFor)
	delay = max(delay, least)
	if !ok {
		o.fail(ctx, j, "gave up after "+strconv.Itoa(row.Attempts+1)+" attempts: "+cause.Error(), false)
		o.count(row.Kind, "failed")
		log.Warn("email failed: retries exhausted", "err", cause, "attempts", row.Attempts+1)
		return
	}
	if _, err := o.cfg.Store.RetryOutbox(ctx, o.cfg.Owner, row.ID, o.cfg.Clock.Now().Add(delay), cause.Error()); err != nil {
		log.Error("schedule retry", "err", err)
		return
	}
	o.count(row.Kind, "retry")
	log.Info("email will be retried", "err", cause, "in", delay, "attempt", row.Attempts+1)
}

// fail marks a row failed with reason, refunding its charge; hard counts
// a hard bounce against the reader's address.
func (o *Outbox) fail(ctx context.Context, j *job, reason string, hard bool) {
	// The store refunds whatever the row's credits: a row free to its
	// reader may have charged a feed's publisher (owner-paid), who is
	// refunded too.
	f := store.Failure{Owner: o.cfg.Owner, Row: j.row, Reason: reason, HardBounce: hard, BounceLimit: o.cfg.BounceLimit}
	r, err := o.cfg.Store.FailOutbox(ctx, f)
	if err != nil {
		o.cfg.Log.Error("record failed email", "outbox", j.row.ID, "err", err)
		return
	}
	if r.NowBouncing {
		o.cfg.Log.Warn("address marked bouncing", "user", j.row.UserID, "to", j.row.Address, "held", r.Held)
	}
}

// RetryDelay returns how long to wait after the attempt-th consecutive
// temporary failure of a row (1-based): RetryBase doubling per attempt,
// capped at RetryCap; the last wait is cut so that the retries end exactly
// when budget (the sum of all waits) is spent. ok is false once the budget
// is spent: the row fails. With the defaults there are 20 retries, the last
// 72 h after the first failure.
func RetryDelay(attempt int, budget time.Duration) (d time.Duration, ok bool) {
	var spent time.Duration
	for i := 1; i < attempt && spent < budget; i++ {
		spent += backoff(i)
	}
	if spent >= budget {
		return 0, false
	}
	return min(backoff(attempt), budget-spent), true
}

// backoff is the wait after the attempt-th failure: RetryBase doubling,
// capped at RetryCap.
func backoff(attempt int) time.Duration {
	return doubling(RetryBase, RetryCap, attempt)
}

// doubling returns base doubled n-1 times (n counted from 1), capped.
func doubling(base, ceiling time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 20 {
		return ceiling
	}
	return min(base<<(n-1), ceiling)
}

// classifyRender reads a renderer's error (see Renderer).
func classifyRender(err error) error {
	switch {
	case err == nil, errors.Is(err, ErrCancelled), errors.Is(err, mailer.ErrPermanent), errors.Is(err, mailer.ErrTemporary):
		return err
	case errors.Is(err, mailer.ErrEmptyDigest):
		return fmt.Errorf("%w: %w", ErrCancelled, err)
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %w", mailer.ErrPermanent, err)
	default:
		return fmt.Errorf("%w: %w", mailer.ErrTemporary, err)
	}
}
