package digest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/dbwait"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
)

// Worker defaults.
const (
	DefaultLease = 2 * time.Minute
	DefaultBatch = 500
	DefaultEvery = time.Second
	// badScheduleRetry is how long a digest whose stored schedule no longer
	// parses waits before it is looked at again (its items stay queued).
	badScheduleRetry = time.Hour
)

// Config configures a Worker. Store and Owner are required.
type Config struct {
	Store *store.Store
	// Owner names this worker in leases; unique per process (host-pid).
	Owner string
	Clock clock.Clock
	Log   *slog.Logger
	// Metrics may be nil.
	Metrics *metrics.Metrics
	// DBWait, if set, is told the outcome of each round (role "digest"):
	// it logs the database going away and coming back.
	DBWait *dbwait.Process
	// Lease is how long a claimed digest stays with this worker (default
	// DefaultLease); a worker that dies gives its digests back after it.
	Lease time.Duration
	// Batch is how many digests one transaction assembles (default
	// DefaultBatch).
	Batch int
	// Every is how often Run looks for due digests (default DefaultEvery;
	// the shortest schedule, "@every 10s", needs no finer grain).
	Every time.Duration
}

// Worker assembles digest issues when their slots come: it claims due
// digests, turns each slot's waiting items into one issue and one outbox
// email (package store does the writing, in one transaction per batch), and
// moves every digest to its next slot. It never sends mail itself; the
// mailer's outbox worker does, with the Renderer of this package.
type Worker struct {
	cfg Config
}

// NewWorker checks cfg and fills in defaults.
func NewWorker(cfg Config) (*Worker, error) {
	if cfg.Store == nil {
		return nil, errors.New("digest worker: no store")
	}
	if cfg.Owner == "" {
		return nil, errors.New("digest worker: no lease owner")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	setDefault(&cfg.Lease, DefaultLease)
	setDefault(&cfg.Batch, DefaultBatch)
	setDefault(&cfg.Every, DefaultEvery)
	return &Worker{cfg: cfg}, nil
}

// Run assembles due digests every cfg.Every until ctx ends, then returns
// ctx's error. Failures are logged and retried on the next round.
func (w *Worker) Run(ctx context.Context) error {
	t := time.NewTicker(w.cfg.Every)
	defer t.Stop()
	for {
		if _, err := w.AssembleDue(ctx); ctx.Err() == nil && !w.cfg.DBWait.Pass("digest", err) && err != nil {
			w.cfg.Log.Error("digest: assembling due slots failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// AssembleDue assembles every digest whose slot has come at the clock's
// now, batch by batch, and returns the number of new issues queued (digests
// with nothing waiting, and items joining an issue held for credits, queue
// none). Tests drive it with a fake clock.
func (w *Worker) AssembleDue(ctx context.Context) (int, error) {
	issued := 0
	for {
		if err := ctx.Err(); err != nil {
			return issued, err
		}
		now := w.cfg.Clock.Now()
		claimed, err := w.cfg.Store.ClaimDueDigests(ctx, w.cfg.Owner, w.cfg.Lease, now, w.cfg.Batch)
		if err != nil {
			return issued, err
		}
		if len(claimed) == 0 {
			return issued, nil
		}
		res, err := w.assembleBatch(ctx, claimed, now)
		issued += res.Issued
		if err != nil {
			return issued, err
		}
		if len(claimed) < w.cfg.Batch {
			return issued, nil
		}
	}
}

// assembleBatch plans and assembles one claimed batch. When the batch's
// transaction fails it tries each digest on its own, so one digest that
// cannot be assembled does not hold up the others; its lease then runs out
// and it is tried again.
func (w *Worker) assembleBatch(ctx context.Context, claimed []store.Digest, now time.Time) (store.AssembleResult, error) {
	var p planner
	plans := make([]store.SlotPlan, 0, len(claimed))
	for _, d := range claimed {
		plan, err := p.plan(d, now)
		if err != nil {
			w.cfg.Log.Error("digest: cannot parse its schedule; trying again later", "digest", d.ID,
				"schedule", d.Schedule, "zone", d.Timezone, "err", err)
			plan = store.SlotPlan{DigestID: d.ID, Next: now.Add(badScheduleRetry)}
		}
		plans = append(plans, plan)
	}
	res, err := w.assemble(ctx, plans, now)
	if err == nil {
		w.record(res)
		return res, nil
	}
	if ctx.Err() != nil || len(plans) == 1 {
		return res, err
	}
	w.cfg.Log.Warn("digest: batch failed; assembling one by one", "digests", len(plans), "err", err)
	var total store.AssembleResult
	var failed int
	var firstErr error
	for _, plan := range plans {
		r, err := w.assemble(ctx, []store.SlotPlan{plan}, now)
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
			w.cfg.Log.Error("digest: assembling failed", "digest", plan.DigestID, "slot", plan.Slot, "err", err)
			continue
		}
		w.record(r)
		total.Issued += r.Issued
		total.Joined += r.Joined
		total.Empty += r.Empty
		total.Skipped += r.Skipped
		total.Credits += r.Credits
		total.IssueIDs = append(total.IssueIDs, r.IssueIDs...)
	}
	if failed > 0 {
		return total, fmt.Errorf("%d of %d digests failed, first: %w", failed, len(plans), firstErr)
	}
	return total, nil
}

// assemble writes plans (digests claimed at claimedAt) in one transaction.
// While the database is away for a moment (a restart, a cut connection) it
// tries again for as long as the claim's lease lasts, less a margin, so a
// restart does not leave the digests leased and their issues late.
func (w *Worker) assemble(ctx context.Context, plans []store.SlotPlan, claimedAt time.Time) (store.AssembleResult, error) {
	budget := w.cfg.Lease - w.cfg.Clock.Now().Sub(claimedAt) - assembleRetrySafety
	var res store.AssembleResult
	tries, err := store.RetryTransient(ctx, budget, func(ctx context.Context) error {
		var err error
		res, err = w.cfg.Store.AssembleDigestIssues(ctx, w.cfg.Owner, plans, billing.DigestCharge)
		return err
	})
	if tries > 1 {
		w.cfg.Log.Warn("digest: database away while assembling; retried", "digests", len(plans), "tries", tries, "err", err)
	}
	return res, err
}

// assembleRetrySafety is how long before the lease ends assembly stops
// retrying.
const assembleRetrySafety = 5 * time.Second

func (w *Worker) record(res store.AssembleResult) {
	if res.Issued > 0 && w.cfg.Metrics != nil {
		w.cfg.Metrics.DigestsSent.Add(float64(res.Issued))
	}
	if res.Issued+res.Joined+res.Skipped > 0 {
		w.cfg.Log.Info("digest: slots assembled", "issued", res.Issued, "credits", res.Credits,
			"joined_held", res.Joined, "empty", res.Empty, "skipped", res.Skipped)
	} else if res.Empty > 0 {
		w.cfg.Log.Debug("digest: empty slots passed", "empty", res.Empty)
	}
}

// setDefault sets *v to def when *v is zero or negative (a config field
// left unset).
func setDefault[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
