package mailer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
)

// The outbox worker.
//
// One pass ([Outbox.SendDue]) claims up to Batch due rows with a lease and
// takes each through these steps:
//
//  1. Paid rows (credits > 0) of an address marked bouncing are held
//     (store.HoldBouncing); they wait for the mark to be cleared.
//  2. Render: the row's kind picks a [Renderer] ("item" and "notice" are
//     built in; "digest" is registered by the digest package). A renderer
//     error ends the row without sending when it says there is nothing to
//     send (e.g. the person unsubscribed since it was queued), fails it when
//     it is permanent, and is retried otherwise (see [Renderer]); so is an
//     unknown kind, which another process may know.
//  3. Charge (reserve by charging): paid rows are charged in one transaction
//     (store.ChargeOutbox) under billing.KeyOutboxCharge — one key per row,
//     so a row charged by an earlier attempt is not charged again. Rows the
//     balance cannot cover are held for credits, and the person gets one
//     free notice per shortage with a link to buy credits; credits arriving
//     release them (store ledger). Charging comes before sending so that
//     nothing goes out unpaid, and a process that dies after charging leaves
//     a row that is claimed again when its lease runs out and sent without a
//     second charge.
//  4. Send the rest through the Transport, MarkEvery messages at a time,
//     with a deadline inside the lease so no other worker can claim a row
//     while it is still being sent.
//  5. Record, whatever the caller's context does meanwhile (a shutdown
//     must not forget what was sent): each chunk's accepted rows are marked
//     sent in one statement before the next chunk goes out; a temporary failure (SMTP 4xx, dropped connection,
//     timeout) is retried with exponential backoff — 1 min doubling, capped
//     at 6 h — until 3 days of retrying are spent, then failed; a permanent
//     failure (SMTP 5xx) fails the row. Failed and expired rows that were
//     charged are refunded once (billing.KeyOutboxRefund). Rows not sent
//     because the context ended are released at once, with no attempt
//     counted.
//
// Bounces: each 5xx reply to an address counts as a hard bounce except
// policy and content rejections (enhanced codes 5.6.x, 5.7.x and 5.3.4,
// which say nothing about the mailbox); accepted mail resets the count, so
// it counts consecutive failures. At BounceLimit (3) the address is marked
// bouncing (users.bouncing_since): its queued paid rows are held and no
// paid mail is sent to it until the mark is cleared by store.ClearBouncing,
// which the web calls when the person confirms a subscription again (they
// proved the address reads mail) and `feedmail subscribe --confirmed`
// calls for the operator. Granting credits does not clear it. Free notices
// still go to a bouncing address: the confirmation that clears the mark is
// one of them.
//
// Held rows expire (state "expired") once HoldFor (30 days) has passed
// since they were queued, counted from created_at so that releases and
// re-holds never extend the wait.
//
// Duplicates: a row can go out twice only if the process dies (or loses
// its database) after the server accepted the message and before the row
// was marked sent. Accepted mail is recorded every MarkEvery messages, so
// that is at most one chunk of MarkEvery; the Message-ID is the same on
// both copies, so mail clients thread or drop the second. Nothing is
// charged twice in any case.

// Renderer composes the email of one outbox row. Its errors are read as:
// wrapping [ErrCancelled] or [ErrEmptyDigest] — nothing to send, the row
// ends without a charge; wrapping [ErrPermanent] or store.ErrNotFound — the
// row fails; anything else (a database hiccup, say) — retried like a
// temporary delivery failure, with backoff, for up to RetryFor.
type Renderer func(ctx context.Context, row *store.OutboxEmail) (*mail.Msg, error)

// ErrCancelled, wrapped in a renderer's error, ends a row without sending
// it and without counting a failure (the delivery no longer applies).
var ErrCancelled = errors.New("delivery cancelled")

// errCrashed is returned by SendDue when a test hook stopped it mid-pass,
// as if the process had died.
var errCrashed = errors.New("outbox: simulated crash")

// Defaults of OutboxConfig.
const (
	DefaultBatch        = 100
	DefaultLease        = 5 * time.Minute
	DefaultPollInterval = time.Second
	DefaultHoldFor      = 30 * 24 * time.Hour
	DefaultRetryFor     = 72 * time.Hour
	DefaultBounceLimit  = 3
	DefaultMarkEvery    = 50
	// RetryBase and RetryCap shape the backoff after temporary failures.
	RetryBase = time.Minute
	RetryCap  = 6 * time.Hour
)

// OutboxConfig configures an Outbox. Store, Transport and Sender are
// required; zero values elsewhere take the defaults above.
type OutboxConfig struct {
	Store     *store.Store
	Transport Transport
	Sender    Sender
	// Links makes the account, unsubscribe, status and credits URLs. With
	// a nil Tokens signer, emails carry no signed links (tests only).
	Links   links.Links
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// Owner names this worker in leases (e.g. "host-pid").
	Owner string
	// Batch is the most rows claimed per pass; Lease how long they are
	// this worker's.
	Batch int
	Lease time.Duration
	// Renderers add or replace renderers by outbox kind (e.g. "digest").
	Renderers map[string]Renderer
	// PollInterval is how long Run waits when nothing is due.
	PollInterval time.Duration
	// Workers is how many passes Run keeps going at once (default 2, so
	// one batch is sent while the next is claimed and rendered).
	Workers int
	// MarkEvery is how many messages are handed to the transport at once
	// before their outcome is recorded (default 50): the most a crash right
	// after the server accepted them can send twice.
	MarkEvery int
	// HoldFor is the longest a paid email waits (for credits, or for a
	// bouncing address) counted from when it was queued; RetryFor the
	// longest temporary failures are retried; BounceLimit the consecutive
	// hard bounces that mark an address bouncing.
	HoldFor     time.Duration
	RetryFor    time.Duration
	BounceLimit int
}

// Outbox sends queued email.
type Outbox struct {
	cfg       OutboxConfig
	renderers map[string]Renderer
	wake      chan struct{}

	mu         sync.Mutex
	lastExpire time.Time
	lastDepth  time.Time

	// crash, when set (tests), is asked at each step of a pass ("claimed",
	// "charged", "sent"); true stops the pass there without recording
	// anything, as a process dying at that point would.
	crash func(step string) bool
}

// NewOutbox returns a worker for cfg.
func NewOutbox(cfg OutboxConfig) (*Outbox, error) {
	if cfg.Store == nil || cfg.Transport == nil {
		return nil, errors.New("outbox: Store and Transport are required")
	}
	if strings.TrimSpace(cfg.Sender.Address) == "" {
		return nil, errors.New("outbox: Sender.Address is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Owner == "" {
		cfg.Owner = "mailer"
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.MarkEvery <= 0 {
		cfg.MarkEvery = DefaultMarkEvery
	}
	if cfg.HoldFor <= 0 {
		cfg.HoldFor = DefaultHoldFor
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = DefaultRetryFor
	}
	if cfg.BounceLimit <= 0 {
		cfg.BounceLimit = DefaultBounceLimit
	}
	o := &Outbox{cfg: cfg, wake: make(chan struct{}, 1)}
	o.renderers = map[string]Renderer{store.KindNotice: o.renderNotice}
	for k, r := range cfg.Renderers {
		if r != nil {
			o.renderers[k] = r
		}
	}
	o.warmUp()
	return o, nil
}

// warmUp composes and serializes one message of each built-in form before
// any worker goroutine exists. It front-loads template parsing, and it
// fills the process-wide caches that templates fill on first use (reflect's
// function layouts, behind a sync.Map) from this goroutine, so that
// concurrent renders later only read them. Under the race detector with
// some packages built uninstrumented (scripts/test.sh), sync.Map's
// synchronisation can be invisible and a first fill from two goroutines at
// once is reported as a race. Errors are ignored: real rows report theirs.
func (o *Outbox) warmUp() {
	s := o.cfg.Sender
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	footer := Footer{FeedTitle: "Warm-up", FeedURL: "https://example.com/feed", SiteURL: "https://example.com/",
		ManageURL: "https://example.com/account/x", UnsubscribeURL: "https://example.com/unsubscribe/x",
		UnsubscribeMailto: "mailto:unsubscribe@example.com?subject=x", StatusURL: "https://example.com/status"}
	html := `<p>Text <a href="/a">link</a> <b>bold</b><br>line</p><ul><li>one</li></ul><ol><li>two</li></ol>` +
		`<blockquote><p>quote</p></blockquote><pre>code</pre><img src="/i.png" alt="alt">`
	var msgs []*mail.Msg
	if m, err := s.Item(ItemEmail{To: "warm@example.com", FeedTitle: "Warm-up", FeedURL: footer.FeedURL, ListID: s.FeedListID(1),
		MessageID: s.ItemMessageID(1, 1), Date: date, ItemTitle: "Title", ItemLink: "https://example.com/p", ItemHTML: html,
		Author: "Author", Published: date, Footer: footer}); err == nil {
		msgs = append(msgs, m)
	}
	if m, err := s.Digest(DigestEmail{To: "warm@example.com", DigestName: "Morning", MessageID: s.MessageID("digest.0"), Date: date,
		Feeds: []DigestFeed{
			{Title: "A", SiteURL: "https://a.example.com/", Items: []DigestItem{{Title: "1", Link: "https://a.example.com/1", ExcerptHTML: html, Published: date}}},
			{Title: "B", SiteURL: "https://b.example.com/", Items: []DigestItem{{Title: "2", Link: "https://b.example.com/2", ExcerptHTML: "x"}, {Title: "3"}}},
		}, Footer: footer, ListID: s.DigestListID(1)}); err == nil {
		msgs = append(msgs, m)
	}
	if m, err := s.Notice(NoticeEmail{To: "warm@example.com", Subject: "Warm-up", Text: "One.\n\nTwo\nlines.",
		Links:     []Link{{Label: "A", URL: "https://example.com/a"}, {Label: "B", URL: "https://example.com/b"}},
		MessageID: s.MessageID("notice.0"), Date: date}); err == nil {
		msgs = append(msgs, m)
	}
	for _, m := range msgs {
		_, _ = Render(m)
	}
}

// Wake makes a waiting Run look for due email now (e.g. after queueing).
func (o *Outbox) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Run sends due email until ctx ends, then returns nil. Database errors are
// logged and retried after a pause; they do not stop the worker.
func (o *Outbox) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for i := range o.cfg.Workers {
		wg.Go(func() { o.loop(ctx, i) })
	}
	wg.Wait()
	return nil
}

func (o *Outbox) loop(ctx context.Context, worker int) {
	pause := o.cfg.PollInterval
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for ctx.Err() == nil {
		if worker == 0 {
			o.refreshDepths(ctx)
		}
		n, err := o.SendDue(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			o.cfg.Log.Error("outbox pass failed", "err", err)
			pause = min(max(2*pause, o.cfg.PollInterval), time.Minute)
		case n >= o.cfg.Batch:
			pause = o.cfg.PollInterval
			continue // more is waiting
		default:
			pause = o.cfg.PollInterval
		}
		timer.Reset(pause)
		select {
		case <-ctx.Done():
			return
		case <-o.wake:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// refreshDepths updates the queue-depth gauges every 15 s.
func (o *Outbox) refreshDepths(ctx context.Context) {
	if o.cfg.Metrics == nil {
		return
	}
	now := o.cfg.Clock.Now()
	o.mu.Lock()
	due := o.lastDepth.IsZero() || now.Sub(o.lastDepth) >= 15*time.Second
	if due {
		o.lastDepth = now
	}
	o.mu.Unlock()
	if !due {
		return
	}
	d, err := o.cfg.Store.OutboxDepths(ctx)
	if err != nil {
		o.cfg.Log.Warn("outbox depths", "err", err)
		return
	}
	for k, v := range d {
		o.cfg.Metrics.QueueDepth.WithLabelValues(k).Set(float64(v))
	}
}

// job is one claimed row on its way through a pass.
type job struct {
	row     *store.OutboxEmail
	user    *store.User
	msg     *mail.Msg
	err     error // render error
	outcome store.ChargeOutcome
	done    bool // settled before sending (held, failed, cancelled, lease lost)
}

// SendDue runs one pass: expire held email if due, claim, render, charge,
// send and record. It returns how many rows it claimed.
func (o *Outbox) SendDue(ctx context.Context) (int, error) {
	now := o.cfg.Clock.Now()
	if err := o.expireHeld(ctx, now); err != nil {
		o.cfg.Log.Warn("expire held email", "err", err)
	}
	rows, err := o.cfg.Store.ClaimOutbox(ctx, o.cfg.Owner, o.cfg.Lease, now, o.cfg.Batch)
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, nil
	}
	// Oldest first, so that a short balance pays for the earliest mail
	// (UPDATE … RETURNING has no order).
	sort.Slice(rows, func(a, b int) bool {
		if !rows[a].CreatedAt.Equal(rows[b].CreatedAt) {
			return rows[a].CreatedAt.Before(rows[b].CreatedAt)
		}
		return rows[a].ID < rows[b].ID
	})
	if o.dies("claimed") {
		return len(rows), errCrashed
	}
	// The send must end well inside the lease, or another worker could
	// claim a row that is still on the wire.
	margin := min(o.cfg.Lease/5, time.Minute)
	sendCtx, cancel := context.WithTimeout(ctx, o.cfg.Lease-margin)
	defer cancel()
	return len(rows), o.process(sendCtx, ctx, rows, now)
}

func (o *Outbox) dies(step string) bool { return o.crash != nil && o.crash(step) }

// process takes claimed rows through bouncing, render, charge, send and
// record. ctx bounds the work before recording; parent is the caller's.
func (o *Outbox) process(ctx, parent context.Context, rows []store.OutboxEmail, now time.Time) error {
	jobs := make([]*job, len(rows))
	userIDs := make([]int64, len(rows))
	for i := range rows {
		jobs[i] = &job{row: &rows[i]}
		userIDs[i] = rows[i].UserID
	}
	// Recording must happen even when the caller's context ends now.
	rec, cancelRec := context.WithTimeout(context.WithoutCancel(parent), 30*time.Second)
	defer cancelRec()

	users, err := o.cfg.Store.UsersByIDs(ctx, userIDs)
	if err != nil {
		o.release(rec, jobs)
		return err
	}
	for _, j := range jobs {
		j.user = users[j.row.UserID]
		if j.user == nil {
			j.err = fmt.Errorf("%w: user %d: %w", ErrPermanent, j.row.UserID, store.ErrNotFound)
			continue
		}
		if j.row.Credits > 0 && j.user.BouncingSince != nil {
			j.done = true
			if ok, err := o.cfg.Store.HoldOutbox(rec, o.cfg.Owner, j.row.ID, store.HoldBouncing); err != nil {
				o.cfg.Log.Error("hold for bouncing address", "outbox", j.row.ID, "err", err)
			} else if ok {
				o.count(j.row.Kind, "held")
			}
		}
	}
	o.render(ctx, jobs, now)

	var paid []*store.OutboxEmail
	var paidJobs []*job
	for _, j := range jobs {
		if !j.done && j.err == nil {
			paid = append(paid, j.row)
			paidJobs = append(paidJobs, j)
		}
	}
	outcomes, err := o.cfg.Store.ChargeOutbox(ctx, o.cfg.Owner, paid, outboxKeys, o.creditNotice)
	if err != nil {
		o.release(rec, jobs)
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
	if o.dies("charged") {
		return errCrashed
	}

	var send []*job
	for _, j := range jobs {
		if !j.done && j.err == nil {
			send = append(send, j)
		}
	}
	// Send in chunks and record each chunk's accepted mail before the next
	// goes out: a crash between acceptance and recording can duplicate at
	// most one chunk, not the whole batch.
	var release []int64
	stopped := false
	for from := 0; from < len(send); from += o.cfg.MarkEvery {
		chunk := send[from:min(from+o.cfg.MarkEvery, len(send))]
		if stopped = stopped || ctx.Err() != nil; stopped {
			for _, j := range chunk {
				release = append(release, j.row.ID)
			}
			continue
		}
		msgs := make([]*mail.Msg, len(chunk))
		for i, j := range chunk {
			msgs[i] = j.msg
		}
		results := o.cfg.Transport.Send(ctx, msgs)
		if o.dies("sent") {
			return errCrashed
		}
		stopped = ctx.Err() != nil
		var marks []store.SentMark
		for i, j := range chunk {
			err := results[i]
			switch {
			case err == nil:
				marks = append(marks, store.SentMark{ID: j.row.ID, UserID: j.row.UserID, MessageID: j.msg.GetMessageID()})
				o.count(j.row.Kind, "sent")
			case stopped && !errors.Is(err, ErrPermanent):
				release = append(release, j.row.ID)
			default:
				o.settleFailure(rec, j, err)
			}
		}
		if n, err := o.cfg.Store.MarkOutboxSent(rec, o.cfg.Owner, marks); err != nil {
			return fmt.Errorf("record %d sent emails: %w", len(marks), err)
		} else if n < int64(len(marks)) {
			o.cfg.Log.Warn("sent emails whose lease had passed to another worker", "sent", len(marks), "recorded", n)
		}
	}
	// Render failures are settled after the sends, with the same rules.
	stopped = stopped || ctx.Err() != nil
	for _, j := range jobs {
		switch {
		case j.done || j.err == nil:
		case stopped && !errors.Is(j.err, ErrPermanent) && !errors.Is(j.err, ErrCancelled):
			release = append(release, j.row.ID)
		default:
			o.settleFailure(rec, j, j.err)
		}
	}
	if len(release) > 0 {
		if _, err := o.cfg.Store.ReleaseOutbox(rec, o.cfg.Owner, release); err != nil {
			return fmt.Errorf("release unsent emails: %w", err)
		}
	}
	return nil
}

// release gives every unsettled row back when a pass cannot go on.
func (o *Outbox) release(ctx context.Context, jobs []*job) {
	var ids []int64
	for _, j := range jobs {
		if !j.done {
			ids = append(ids, j.row.ID)
		}
	}
	if _, err := o.cfg.Store.ReleaseOutbox(ctx, o.cfg.Owner, ids); err != nil {
		o.cfg.Log.Error("release claimed emails", "err", err)
	}
}

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

// outboxKeys is the store.KeyFunc of the mailer: the billing keys of a row.
func outboxKeys(row *store.OutboxEmail) (charge, refund string) {
	return billing.KeyOutboxCharge(row.DedupeKey), billing.KeyOutboxRefund(row.DedupeKey)
}

// expireHeld ends held rows older than HoldFor, at most once a minute of
// the clock's time.
func (o *Outbox) expireHeld(ctx context.Context, now time.Time) error {
	o.mu.Lock()
	due := o.lastExpire.IsZero() || now.Sub(o.lastExpire) >= time.Minute || now.Before(o.lastExpire)
	if due {
		o.lastExpire = now
	}
	o.mu.Unlock()
	if !due {
		return nil
	}
	for {
		rows, err := o.cfg.Store.ExpireHeld(ctx, now, o.cfg.HoldFor, 500, outboxKeys)
		for _, r := range rows {
			o.count(r.Kind, "expired")
		}
		if len(rows) > 0 {
			o.cfg.Log.Info("held email expired", "count", len(rows))
		}
		if err != nil || len(rows) < 500 {
			return err
		}
	}
}

// creditNotice is the store.CreditNotice of the mailer.
func (o *Outbox) creditNotice(userID, episode int64) (string, store.Notice) {
	n := store.Notice{
		Subject: "Your feedmail credits have run out",
		Text: "Your feedmail balance has run out, so new posts from your feeds are waiting instead of being emailed.\n\n" +
			"They wait for up to " + strconv.Itoa(int(o.cfg.HoldFor/(24*time.Hour))) + " days. " +
			"As soon as you add credits, everything that waited is sent.\n\n" +
			"This is the only reminder you will get for this shortage.",
	}
	if o.cfg.Links.Base != "" {
		n.Links = append(n.Links, store.NoticeLink{Label: "Buy credits", URL: o.cfg.Links.Credits()})
		if o.cfg.Links.Tokens != nil {
			n.Links = append(n.Links, store.NoticeLink{Label: "Your account", URL: o.cfg.Links.Account(userID, o.cfg.Clock.Now())})
		}
	}
	return billing.KeyCreditsNotice(userID, episode), n
}

// count adds one to the emails metric.
func (o *Outbox) count(kind, result string) {
	if o.cfg.Metrics != nil {
		o.cfg.Metrics.Emails.WithLabelValues(kind, result).Inc()
	}
}

// render composes the messages of the unsettled jobs, several at a time.
// Item rows are loaded in bulk first.
func (o *Outbox) render(ctx context.Context, jobs []*job, now time.Time) {
	_, customItem := o.cfg.Renderers[store.KindItem]
	var items []*store.OutboxEmail
	for _, j := range jobs {
		if !j.done && j.err == nil && j.row.Kind == store.KindItem && !customItem {
			items = append(items, j.row)
		}
	}
	var deliveries map[int64]store.ItemDelivery
	if len(items) > 0 {
		var err error
		if deliveries, err = o.cfg.Store.ItemDeliveries(ctx, items); err != nil {
			for _, j := range jobs {
				if j.row.Kind == store.KindItem && j.err == nil {
					j.err = fmt.Errorf("%w: load item: %v", ErrTemporary, err)
				}
			}
		}
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, j := range jobs {
		if j.done || j.err != nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if j.row.Kind == store.KindItem && !customItem {
				d, ok := deliveries[j.row.ID]
				if !ok {
					j.err = fmt.Errorf("%w: outbox %d: item or subscription no longer exists", ErrPermanent, j.row.ID)
					return
				}
				j.msg, j.err = o.renderItem(j.row, j.user, d, now)
				return
			}
			r := o.renderers[j.row.Kind]
			if r == nil {
				// Another process may know this kind: retry, don't fail.
				j.err = fmt.Errorf("%w: no renderer for outbox kind %q in this process", ErrTemporary, j.row.Kind)
				return
			}
			j.msg, j.err = r(ctx, j.row)
			if j.err == nil && j.msg == nil {
				j.err = fmt.Errorf("%w: renderer for %q returned no message", ErrPermanent, j.row.Kind)
			}
			j.err = classifyRender(j.err)
		})
	}
	wg.Wait()
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

// recipient is the row's address, else the person's current one.
func recipient(row *store.OutboxEmail, u *store.User) string {
	if strings.TrimSpace(row.ToAddr) != "" {
		return row.ToAddr
	}
	if u != nil {
		return u.Email
	}
	return ""
}

// ItemMessageID is the stable Message-ID of the instant email of item to
// subscription sub: "<item-<sub>-<item>@domain>".
func (s Sender) ItemMessageID(sub, item int64) string {
	return s.MessageID("item-" + strconv.FormatInt(sub, 10) + "-" + strconv.FormatInt(item, 10))
}

// renderItem composes an instant email.
func (o *Outbox) renderItem(row *store.OutboxEmail, u *store.User, d store.ItemDelivery, now time.Time) (*mail.Msg, error) {
	if d.Subscription.State != store.SubActive {
		return nil, fmt.Errorf("%w: subscription %d is %s", ErrCancelled, d.Subscription.ID, d.Subscription.State)
	}
	it, f := d.Item, d.Feed
	e := ItemEmail{
		To:        recipient(row, u),
		FeedTitle: f.Title,
		FeedURL:   f.URL,
		ListID:    o.cfg.Sender.FeedListID(f.ID),
		MessageID: o.cfg.Sender.ItemMessageID(d.Subscription.ID, it.ID),
		Date:      now,
		ItemTitle: it.Title,
		ItemLink:  it.Link,
		ItemHTML:  it.Content,
		Author:    it.Author,
		Footer:    Footer{FeedTitle: f.Title, FeedURL: f.URL, SiteURL: f.SiteURL},
	}
	if it.PublishedAt != nil {
		e.Published = *it.PublishedAt
	}
	l := o.cfg.Links
	if l.Base != "" {
		e.Footer.StatusURL = l.Status(f.URL)
		if l.Tokens != nil {
			e.Footer.ManageURL = l.Account(row.UserID, now)
			e.Footer.UnsubscribeURL = l.Unsubscribe(d.Subscription.ID)
			e.Footer.UnsubscribeMailto = l.UnsubscribeMailto(d.Subscription.ID)
		}
	}
	m, err := o.cfg.Sender.Item(e)
	if err != nil {
		return nil, fmt.Errorf("%w: outbox %d: %w", ErrPermanent, row.ID, err)
	}
	return m, nil
}

// renderNotice composes a free notice from the row's payload.
func (o *Outbox) renderNotice(_ context.Context, row *store.OutboxEmail) (*mail.Msg, error) {
	n, err := store.NoticeOf(row)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPermanent, err)
	}
	e := NoticeEmail{
		To:        row.ToAddr,
		Subject:   n.Subject,
		Text:      n.Text,
		MessageID: o.cfg.Sender.MessageID("notice-" + strconv.FormatInt(row.ID, 10)),
		Date:      o.cfg.Clock.Now(),
	}
	for _, l := range n.Links {
		e.Links = append(e.Links, Link{Label: l.Label, URL: l.URL})
	}
	m, err := o.cfg.Sender.Notice(e)
	if err != nil {
		return nil, fmt.Errorf("%w: outbox %d: %w", ErrPermanent, row.ID, err)
	}
	return m, nil
}
