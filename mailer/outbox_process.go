package mailer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/store"
)

// process takes claimed rows through bouncing, render, charge, send and
// record. ctx bounds the work before recording; parent is the caller's;
// leaseEnd is when the claim's lease ends, on the wall clock.
func (o *Outbox) process(ctx, parent context.Context, rows []store.OutboxEmail, now, leaseEnd time.Time) error {
	jobs := make([]*job, len(rows))
	for i := range rows {
		jobs[i] = &job{row: &rows[i]}
		if !byChannel(&rows[i]) {
			jobs[i].domain = store.AddressDomain(rows[i].ToAddr)
		}
	}
	// Recording must happen even when the caller's context ends now, and
	// goes on through a database that is away for a moment (recordRetry)
	// until shortly before the lease ends.
	rec, cancelRec := context.WithDeadline(context.WithoutCancel(parent), leaseEnd.Add(-recordSafety))
	defer cancelRec()

	// Step 1: who each row goes to; paid rows to bouncing addresses wait.
	if err := o.loadRecipients(ctx, rec, jobs); err != nil {
		o.release(rec, jobs)
		return err
	}
	// Step 1b: email to a destination paused for the sender's sake goes
	// back, unsent.
	ds, err := o.loadDestinations(ctx, rec, jobs, now)
	if err != nil {
		o.release(rec, jobs)
		return err
	}
	// Step 2: compose every message still to send.
	o.render(ctx, jobs, now)
	// Step 3: charge paid rows before anything goes out.
	if err := o.charge(ctx, jobs); err != nil {
		o.release(rec, jobs)
		return err
	}
	if o.dies("charged") {
		return errCrashed
	}
	// Step 4: send and record, chunk by chunk; deliveries by other
	// channels one by one.
	email, other := splitByChannel(pending(jobs))
	release, stopped, err := o.deliverChannels(ctx, rec, other)
	if err != nil {
		return err
	}
	back, stoppedMail, err := o.sendAll(ctx, rec, email, ds)
	if err != nil {
		return err
	}
	release, stopped = append(release, back...), stopped || stoppedMail
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

// recordSafety is how long before the lease ends recording gives up: a
// write after the lease is refused, and another worker may have claimed
// the rows by then.
const recordSafety = 5 * time.Second

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

// deadlineOf is ctx's deadline, or now when it has none.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now()
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

// splitByChannel parts jobs into email and other channels.
func splitByChannel(jobs []*job) (email, other []*job) {
	for _, j := range jobs {
		if j.req != nil {
			other = append(other, j)
		} else {
			email = append(email, j)
		}
	}
	return email, other
}

// loadRecipients attaches each job's person (a missing one fails the row)
// and holds paid rows whose address is marked bouncing. Holds are recorded
// with rec; the error is the lookup's.
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
			j.err = fmt.Errorf("%w: user %d: %w", ErrPermanent, j.row.UserID, store.ErrNotFound)
			continue
		}
		if j.row.Credits > 0 && j.user.BouncingSince != nil && !byChannel(j.row) {
			o.holdBouncing(rec, j)
		}
	}
	return nil
}

// charge charges the rendered rows in one transaction and settles those
// held for credits or whose lease was lost. It returns the store's error.
func (o *Outbox) charge(ctx context.Context, jobs []*job) error {
	paidJobs := pending(jobs)
	paid := make([]*store.OutboxEmail, len(paidJobs))
	for i, j := range paidJobs {
		paid[i] = j.row
	}
	outcomes, err := o.cfg.Store.ChargeOutbox(ctx, o.cfg.Owner, paid, outboxKeys, o.creditNotice)
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

// sendAll sends in chunks of MarkEvery and records each chunk's accepted
// mail before the next goes out: a crash between acceptance and recording
// can duplicate at most one chunk, not the whole batch. Email to a domain
// a chunk got paused waits for the pause instead of being sent. It
// returns the rows to give back unsent, and whether ctx stopped the
// sending.
func (o *Outbox) sendAll(ctx, rec context.Context, send []*job, ds *destinations) (release []int64, stopped bool, err error) {
	for from := 0; from < len(send); from += o.cfg.MarkEvery {
		chunk := send[from:min(from+o.cfg.MarkEvery, len(send))]
		if stopped = stopped || ctx.Err() != nil; stopped {
			for _, j := range chunk {
				release = append(release, j.row.ID)
			}
			continue
		}
		if chunk = o.putBack(rec, chunk, ds, o.cfg.Clock.Now()); len(chunk) == 0 {
			continue
		}
		var back []int64
		back, stopped, err = o.sendChunk(ctx, rec, chunk, ds)
		if err != nil {
			return nil, stopped, err
		}
		release = append(release, back...)
	}
	return release, stopped, nil
}

// sendChunk hands one chunk to the transport, settles its failures and
// marks its accepted rows sent. It returns the rows to give back (not sent
// because ctx ended), whether ctx ended, and a recording error.
func (o *Outbox) sendChunk(ctx, rec context.Context, chunk []*job, ds *destinations) (release []int64, stopped bool, err error) {
	msgs := make([]*mail.Msg, len(chunk))
	for i, j := range chunk {
		msgs[i] = j.msg
	}
	began := o.cfg.Clock.Now()
	results := o.cfg.Transport.Send(ctx, msgs)
	if o.dies("sent") {
		return nil, false, errCrashed
	}
	stopped = ctx.Err() != nil
	var marks []store.SentMark
	var failed []failure
	for i, j := range chunk {
		err := results[i]
		switch {
		case err == nil:
			marks = append(marks, store.SentMark{ID: j.row.ID, UserID: j.row.UserID, MessageID: j.msg.GetMessageID()})
			o.count(j.row.Kind, "sent")
		case stopped && !errors.Is(err, ErrPermanent):
			release = append(release, j.row.ID)
		default:
			failed = append(failed, failure{j, err})
		}
	}
	o.settleFailures(rec, failed, ds)
	if err := o.markSent(rec, marks); err != nil {
		return nil, stopped, err
	}
	o.clearDestinations(rec, chunk, results, ds, began)
	if len(marks) > 0 {
		kinds := map[string]int{}
		for i, j := range chunk {
			if results[i] == nil {
				kinds[j.row.Kind]++
			}
		}
		o.cfg.Log.Info("emails sent", "count", len(marks), "item", kinds[store.KindItem], "digest", kinds[store.KindDigest],
			"notice", kinds[store.KindNotice])
	}
	return release, stopped, nil
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
		case stopped && !errors.Is(j.err, ErrPermanent) && !errors.Is(j.err, ErrCancelled):
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
