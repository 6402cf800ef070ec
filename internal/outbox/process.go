package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// process takes claimed rows through bouncing, render, charge, send and
// record. ctx bounds the work before recording; rec bounds recording (it
// outlives the caller's context and ends shortly before the lease does).
func (o *Outbox) process(ctx, rec context.Context, rows []store.OutboxRow, now time.Time) error {
	jobs := make([]*job, len(rows))
	for i := range rows {
		j := &job{row: &rows[i]}
		if j.way, j.err = o.wayOf(j.row); j.way != nil {
			j.domain = j.way.domain(j.row)
		}
		jobs[i] = j
	}
	// Step 1: who each row goes to; email of posts to bouncing addresses
	// waits.
	if err := o.loadRecipients(ctx, rec, jobs); err != nil {
		o.release(rec, jobs)
		return err
	}
	// Step 1b: rows to a destination paused for the sender's sake go
	// back, unsent.
	ds, err := o.loadDestinations(ctx, rec, jobs, now)
	if err != nil {
		o.release(rec, jobs)
		return err
	}
	// Step 2: render every row still to send, by its way.
	o.render(ctx, jobs, now)
	// Step 3: charge paid rows before anything goes out.
	if err := o.charge(ctx, jobs); err != nil {
		o.release(rec, jobs)
		return err
	}
	if o.dies("charged") {
		return errCrashed
	}
	// Step 4: each way hands its rows over and records them.
	release, stopped, err := o.sendWays(ctx, rec, pending(jobs), ds)
	if err != nil {
		return err
	}
	// Step 5: render failures are settled after the sends, with the same
	// rules; what the context stopped goes back to the queue.
	stopped = stopped || ctx.Err() != nil
	release = append(release, o.settleRenderFailures(rec, jobs, stopped, ds)...)
	if len(release) > 0 {
		if err := o.recordRetry(rec, "release unsent emails", func(ctx context.Context) error {
			_, err := o.cfg.Store.ReleaseOutbox(ctx, o.cfg.Owner, release)
			return err
		}); err != nil {
			return fmt.Errorf("release unsent emails: %w", err)
		}
	}
	return nil
}

// recordFor is how long a write that records work done (or gives rows
// back) is retried while the database is away: a restart or a failover
// of the database must not make mail already handed over go out again.
// It may outlast the lease: nobody claims while the database is away, and
// once it is back a write on a row another worker took is refused.
const recordFor = 5 * time.Minute

// recordRetry runs a recording write, retrying it while the database is
// away for a moment (store.Transient) until rec ends, so that a restart of
// the database does not lose the record of mail already handed over (which
// would go out again after the lease). what names the write in the log.
func (o *Outbox) recordRetry(rec context.Context, what string, write func(context.Context) error) error {
	budget := time.Until(deadlineOf(rec))
	tries, err := store.RetryTransient(rec, budget, write)
	if tries > 1 {
		o.cfg.Log.Warn("database away while recording; retried", "what", what, "tries", tries, "err", err)
	}
	return err
}

// deadlineOf is ctx's deadline, or recordFor from now when it has none.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(recordFor)
}

// pending returns the jobs neither settled nor failed so far.
func pending(jobs []*job) []*job {
	var out []*job
	for _, j := range jobs {
		if !j.done && j.err == nil {
			out = append(out, j)
		}
	}
	return out
}

// loadRecipients attaches each job's person (a missing one fails the row)
// and holds the rows that the bounce hold (store.WaitsForBouncing) says
// wait for a bouncing address. Holds are recorded with rec; the error is the
// lookup's.
func (o *Outbox) loadRecipients(ctx, rec context.Context, jobs []*job) error {
	userIDs := make([]int64, len(jobs))
	for i, j := range jobs {
		userIDs[i] = j.row.UserID
	}
	users, err := o.cfg.Store.UsersByIDs(ctx, userIDs)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		j.user = users[j.row.UserID]
		if j.user == nil {
			j.err = fmt.Errorf("%w: user %d: %w", mailer.ErrPermanent, j.row.UserID, store.ErrNotFound)
			continue
		}
		if store.WaitsForBouncing(j.row.Kind, j.row.Channel, j.user.BouncingSince) {
			o.holdBouncing(rec, j)
		}
	}
	return nil
}

// charge charges the rendered rows in one transaction and settles those
// held for credits or whose lease was lost. It returns the store's error.
func (o *Outbox) charge(ctx context.Context, jobs []*job) error {
	paidJobs := pending(jobs)
	paid := make([]*store.OutboxRow, len(paidJobs))
	for i, j := range paidJobs {
		paid[i] = j.row
	}
	outcomes, err := o.cfg.Store.ChargeOutbox(ctx, o.cfg.Owner, paid, o.creditNotice)
	if err != nil {
		return err
	}
	var charged int64
	for i, j := range paidJobs {
		j.outcome = outcomes[i]
		switch j.outcome {
		case store.Charged:
			charged += int64(j.row.Credits)
		case store.HeldForCredits:
			j.done = true
			o.count(j.row.Kind, "held")
		case store.LeaseLost:
			j.done = true
		}
	}
	if charged > 0 && o.cfg.Metrics != nil {
		o.cfg.Metrics.CreditsCharged.Add(float64(charged))
	}
	o.warnLow(ctx, paidJobs)
	return nil
}

// markSent records marks as sent, through a database away for a moment.
func (o *Outbox) markSent(rec context.Context, marks []store.SentMark) error {
	// A retry after a try whose first statement landed finds those rows
	// sent already: the most rows any try recorded is the count.
	var n int64
	if err := o.recordRetry(rec, "mark sent", func(ctx context.Context) error {
		m, err := o.cfg.Store.MarkOutboxSent(ctx, o.cfg.Owner, marks)
		n = max(n, m)
		return err
	}); err != nil {
		return fmt.Errorf("record %d sent emails: %w", len(marks), err)
	} else if n < int64(len(marks)) {
		o.cfg.Log.Warn("sent emails whose lease had passed to another worker", "sent", len(marks), "recorded", n)
	}
	return nil
}

// settleRenderFailures applies the failure rules to rows whose render
// failed, and returns those to give back because the pass was stopped
// (temporary failures are not counted then).
func (o *Outbox) settleRenderFailures(rec context.Context, jobs []*job, stopped bool, ds *destinations) (release []int64) {
	var failed []failure
	for _, j := range jobs {
		switch {
		case j.done || j.err == nil:
		case stopped && !errors.Is(j.err, mailer.ErrPermanent) && !errors.Is(j.err, ErrCancelled):
			release = append(release, j.row.ID)
		default:
			failed = append(failed, failure{j, j.err})
		}
	}
	o.settleFailures(rec, failed, ds)
	return release
}

// release gives every unsettled row back when a pass cannot go on,
// retrying through a database that is away (recordRetry): the pass most
// often fails because the database went away, and a row not given back
// waits for its whole lease (minutes) before anyone sends it.
func (o *Outbox) release(rec context.Context, jobs []*job) {
	var ids []int64
	for _, j := range jobs {
		if !j.done {
			ids = append(ids, j.row.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	if err := o.recordRetry(rec, "release claimed emails", func(ctx context.Context) error {
		_, err := o.cfg.Store.ReleaseOutbox(ctx, o.cfg.Owner, ids)
		return err
	}); err != nil {
		o.cfg.Log.Error("release claimed emails", "err", err)
	}
}
