package outbox

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/feedmail/feedmail/internal/bounce"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// Destination pauses (see docs/design.md, "Email"). A destination that
// refuses our mail for the sender's own sake (a blocklist, SPF/DKIM/DMARC,
// content, a rate limit) is paused as a whole, for every process, in the
// store's mail_destinations table: DestinationPause(streak), 5 min
// doubling up to 6 h. Each pass reads the rows of its claimed domains in
// one query; email to a paused domain goes back to the queue, due when the
// pause ends, unsent, unrendered and with no attempt counted; a send that
// gets through ends the domain's streak. Such an email is retried until
// RetryFor has passed on the clock since its destination first turned it
// away (outbox.blocked_since), then fails, refunded, counted against
// nobody.

// destinations is what one pass knows of its rows' recipient domains.
type destinations struct {
	// known: the domains' mail_destinations rows at the start of the pass
	// (paused, or with a pause that has ended): a delivery to one of them
	// ends its streak.
	known map[string]store.MailDestination
	// paused: the domains whose mail waits, as of now in this pass.
	paused map[string]store.MailDestination
	// pausedHere: domains this pass paused (their streak is not ended by
	// a delivery of the same pass that started before the refusal).
	pausedHere map[string]bool
}

// loadDestinations reads the destination rows of the pending jobs'
// domains (one query) and puts back the jobs whose domain is paused. The
// error is the store's.
func (o *Outbox) loadDestinations(ctx, rec context.Context, jobs []*job, now time.Time) (*destinations, error) {
	ds := &destinations{paused: map[string]store.MailDestination{}, pausedHere: map[string]bool{}}
	seen := map[string]bool{}
	var domains []string
	for _, j := range pending(jobs) {
		if j.domain != "" && !seen[j.domain] {
			seen[j.domain] = true
			domains = append(domains, j.domain)
		}
	}
	var err error
	if ds.known, err = o.cfg.Store.MailDestinations(ctx, domains); err != nil {
		return nil, err
	}
	for d, row := range ds.known {
		if row.PausedUntil.After(now) {
			ds.paused[d] = row
		}
	}
	o.putBack(rec, pending(jobs), ds, now)
	return ds, nil
}

// putBack settles the jobs whose destination is paused: each goes back to
// the queue, due when the pause ends, with no attempt counted (one
// statement per domain), or fails when its retry budget is spent. It
// returns the other jobs, still to send.
func (o *Outbox) putBack(ctx context.Context, jobs []*job, ds *destinations, now time.Time) []*job {
	var left []*job
	wait := map[string][]int64{}
	for _, j := range jobs {
		d, paused := ds.paused[j.domain]
		if !paused || j.done || j.err != nil {
			left = append(left, j)
			continue
		}
		j.done = true
		if o.blockedTooLong(j.row, now) {
			o.giveUp(ctx, j, d.Reason)
			continue
		}
		wait[j.domain] = append(wait[j.domain], j.row.ID)
		o.count(j.row.Kind, "deferred")
	}
	for _, domain := range sortedKeys(wait) {
		d := ds.paused[domain]
		note := fmt.Sprintf("waiting: mail to %s is paused until %s (%s: the sender's problem, not the reader's)",
			domain, d.PausedUntil.UTC().Format(time.RFC3339), d.Reason)
		if _, err := o.cfg.Store.DeferOutbox(ctx, o.cfg.Owner, wait[domain], d.PausedUntil, note); err != nil {
			o.cfg.Log.Error("put back email to a paused destination", "domain", domain, "err", err)
			continue
		}
		o.cfg.Log.Info("email put back: destination paused", "domain", domain, "count", len(wait[domain]),
			"until", d.PausedUntil, "reason", d.Reason)
	}
	return left
}

// judged is a failed send with its verdict and the SMTP reply judged.
type judged struct {
	failure
	v     bounce.Verdict
	reply *mailer.SendError
}

// slowDestination handles the sender-side failures of one chunk to one
// domain: it pauses the domain for every process, alerts the operator (a
// warning per reason with the reply and what to fix, and
// feedmail_mail_sender_failures_total) and puts each email back, due when
// the pause ends, or fails it when its retry budget is spent. Nothing
// counts against the readers.
func (o *Outbox) slowDestination(ctx context.Context, domain string, fs []judged, ds *destinations) {
	now := o.cfg.Clock.Now()
	d, _, err := o.cfg.Store.PauseMailDestination(ctx, domain, string(fs[0].v.Reason), DestinationPause, destinationForget)
	if err != nil {
		o.cfg.Log.Error("pause mail destination", "domain", domain, "err", err)
		d = store.MailDestination{Domain: domain, PausedUntil: now.Add(DestinationPause(1)), Reason: string(fs[0].v.Reason), Failures: 1}
	}
	ds.paused[domain], ds.pausedHere[domain] = d, true
	byReason := map[bounce.Reason][]judged{}
	for _, f := range fs {
		byReason[f.v.Reason] = append(byReason[f.v.Reason], f)
		if o.cfg.Metrics != nil {
			o.cfg.Metrics.SenderFailures.WithLabelValues(string(f.v.Reason)).Inc()
		}
	}
	for _, r := range sortedKeys(byReason) {
		g := byReason[r]
		o.cfg.Log.Warn("mail refused for the sender's own reasons; destination paused, nothing counted against readers",
			"domain", domain, "reason", r, "reply", g[0].reply.Error(), "fix", r.Fix(), "emails", len(g),
			"paused_until", d.PausedUntil, "streak", d.Failures)
	}
	byNote := map[string][]int64{}
	for _, f := range fs {
		if o.blockedTooLong(f.j.row, now) {
			o.giveUp(ctx, f.j, string(f.v.Reason))
			continue
		}
		note := fmt.Sprintf("%v; mail to %s paused until %s", f.cause, domain, d.PausedUntil.UTC().Format(time.RFC3339))
		byNote[note] = append(byNote[note], f.j.row.ID)
		o.count(f.j.row.Kind, "retry")
	}
	for _, note := range sortedKeys(byNote) {
		if _, err := o.cfg.Store.DeferOutbox(ctx, o.cfg.Owner, byNote[note], d.PausedUntil, note); err != nil {
			o.cfg.Log.Error("schedule retry after the destination's pause", "domain", domain, "err", err)
		}
	}
}

// clearDestinations ends the streak of the domains of ds.known that
// accepted mail of chunk (results[i] nil) and that this pass did not pause
// itself; since is when the chunk's sending began, so a pause another
// process set meanwhile stands.
func (o *Outbox) clearDestinations(ctx context.Context, chunk []*job, results []error, ds *destinations, since time.Time) {
	var clear []string
	for i, j := range chunk {
		if _, known := ds.known[j.domain]; known && results[i] == nil && !ds.pausedHere[j.domain] {
			clear = append(clear, j.domain)
			delete(ds.known, j.domain)
		}
	}
	if len(clear) == 0 {
		return
	}
	if _, err := o.cfg.Store.ClearMailDestinations(ctx, clear, since); err != nil {
		o.cfg.Log.Error("end the streak of destinations that accept mail again", "domains", clear, "err", err)
		return
	}
	o.cfg.Log.Info("destinations accept mail again", "domains", clear)
}

// blockedTooLong reports whether row's destination has been turning it
// away for the sender's sake for RetryFor or more.
func (o *Outbox) blockedTooLong(row *store.OutboxRow, now time.Time) bool {
	return row.BlockedSince != nil && !now.Before(row.BlockedSince.Add(o.cfg.RetryFor))
}

// giveUp fails a row whose destination refused it for the sender's sake
// (reason) for longer than RetryFor: refunded, counted against nobody.
func (o *Outbox) giveUp(ctx context.Context, j *job, reason string) {
	o.fail(ctx, j, fmt.Sprintf("gave up: %s refused our mail for %v (%s: the sender's problem, not counted against the reader)",
		j.domain, o.cfg.RetryFor, reason), false)
	o.count(j.row.Kind, "failed")
	o.cfg.Log.Warn("email failed: its destination refused our mail for too long", "outbox", j.row.ID, "domain", j.domain,
		"reason", reason, "since", j.row.BlockedSince)
}

// sortedKeys returns m's keys in order, so that statements and logs come
// in a stable order.
func sortedKeys[K ~string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}
