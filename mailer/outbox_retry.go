package mailer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// settleFailure applies the rules to a row that was not sent: retry, fail
// (with refund and bounce count) or cancel.
func (o *Outbox) settleFailure(ctx context.Context, j *job, cause error) {
	row := j.row
	log := o.cfg.Log.With("outbox", row.ID, "kind", row.Kind, "to", row.ToAddr)
	switch {
	case errors.Is(cause, ErrCancelled):
		o.fail(ctx, j, "cancelled: "+cause.Error(), false)
		o.count(row.Kind, "cancelled")
		log.Info("email cancelled", "reason", cause)
		return
	case !errors.Is(cause, ErrTemporary):
		bounce := isHardBounce(cause)
		o.fail(ctx, j, cause.Error(), bounce)
		o.count(row.Kind, "failed")
		log.Warn("email failed", "err", cause, "bounce", bounce)
		return
	}
	delay, ok := RetryDelay(row.Attempts+1, o.cfg.RetryFor)
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

func (o *Outbox) fail(ctx context.Context, j *job, reason string, bounce bool) {
	f := store.Failure{Owner: o.cfg.Owner, Row: j.row, Reason: reason, HardBounce: bounce, BounceLimit: o.cfg.BounceLimit}
	if j.row.Credits > 0 {
		f.ChargeKey, f.RefundKey = outboxKeys(j.row)
	}
	r, err := o.cfg.Store.FailOutbox(ctx, f)
	if err != nil {
		o.cfg.Log.Error("record failed email", "outbox", j.row.ID, "err", err)
		return
	}
	if r.NowBouncing {
		o.cfg.Log.Warn("address marked bouncing", "user", j.row.UserID, "to", j.row.ToAddr, "held", r.Held)
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

func backoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 20 {
		return RetryCap
	}
	return min(RetryBase<<(attempt-1), RetryCap)
}

// isHardBounce reports a failure that counts against the address: an SMTP
// 5xx reply other than a policy or content rejection.
func isHardBounce(err error) bool {
	var se *SendError
	if !errors.As(err, &se) || se.Temporary || se.Code < 500 || se.Code > 599 {
		return false
	}
	ec := se.EnhancedCode
	return !strings.HasPrefix(ec, "5.7.") && !strings.HasPrefix(ec, "5.6.") && ec != "5.3.4"
}

// classifyRender reads a renderer's error (see Renderer).
func classifyRender(err error) error {
	switch {
	case err == nil, errors.Is(err, ErrCancelled), errors.Is(err, ErrPermanent), errors.Is(err, ErrTemporary):
		return err
	case errors.Is(err, ErrEmptyDigest):
		return fmt.Errorf("%w: %w", ErrCancelled, err)
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrPermanent, err)
	default:
		return fmt.Errorf("%w: %w", ErrTemporary, err)
	}
}
