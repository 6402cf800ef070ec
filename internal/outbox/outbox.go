package outbox

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/channel"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/dbwait"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// The outbox worker. A pass ([Outbox.SendDue]) claims due rows under a
// lease, oldest first, and runs the steps of [Outbox.process]
// (process.go), each row by its way out (way.go: email or
// a channel): hold paid rows to bouncing addresses, render
// (render.go), charge paid rows before anything is sent and hold
// those the balance cannot cover, send in chunks of ChunkSize recording
// each acceptance as its reply comes (marker.go: group commits, and no
// further email handed over while more than MaxUnmarked acceptances wait
// for theirs), then settle each failure by its cause
// (judge.go, retry.go): retry temporary ones with backoff,
// fail permanent ones, counting a hard bounce only for a dead address, and
// put the sender's own problems back behind a pause of their destination
// domain (destinations.go), which also holds back the rows a pass
// claims for a paused domain. Held rows expire after HoldFor
// (held.go). The product rules are in docs/design.md.

// Renderer composes the email of one outbox row. Its errors are read as:
// wrapping [ErrCancelled] or [mailer.ErrEmptyDigest] — nothing to send, the row
// ends without a charge; wrapping [mailer.ErrPermanent] or store.ErrNotFound — the
// row fails; anything else (a database hiccup, say) — retried like a
// temporary delivery failure, with backoff, for up to RetryFor.
type Renderer func(ctx context.Context, row *store.OutboxRow) (*mail.Msg, error)

// ErrCancelled, wrapped in a renderer's error, ends a row without sending
// it and without counting a failure (the delivery no longer applies).
var ErrCancelled = errors.New("delivery cancelled")

// errCrashed is returned by SendDue when a test hook stopped it mid-pass,
// as if the process had died.
var errCrashed = errors.New("outbox: simulated crash")

// Defaults of OutboxConfig.
const (
	DefaultBatch        = 100
	DefaultLease        = time.Minute
	DefaultPollInterval = time.Second
	DefaultHoldFor      = 30 * 24 * time.Hour
	DefaultRetryFor     = 72 * time.Hour
	DefaultBounceLimit  = 3
	DefaultChunkSize    = 50
	DefaultMaxUnmarked  = 16
	DefaultMarkPace     = 10 * time.Millisecond
	// MaxPass is the longest one pass may send, however its lease is
	// renewed.
	MaxPass = 4 * time.Minute
	// RetryBase and RetryCap shape the backoff after temporary failures.
	RetryBase = time.Minute
	RetryCap  = 6 * time.Hour
)

// OutboxConfig configures an Outbox. Store, Transport and Sender are
// required; zero values elsewhere take the defaults above.
type OutboxConfig struct {
	Store     *store.Store
	Transport mailer.Transport
	Sender    mailer.Sender
	// Links makes the account, unsubscribe, status and credits URLs. With
	// a nil Tokens signer, emails carry no signed links (tests only).
	Links   links.Links
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// DBWait, if set, is told the outcome of each pass (role "mailer"): it
	// logs the database going away and coming back.
	DBWait *dbwait.Process
	// Owner names this worker in leases (e.g. "host-pid").
	Owner string
	// Batch is the most rows claimed per pass; Lease how long they are
	// this worker's without a renewal (a pass renews it four times a
	// lease, so a worker that dies gives its rows up within about one
	// Lease; default 1 min).
	Batch int
	Lease time.Duration
	// Renderers add or replace renderers by outbox kind (the built-in ones
	// render "item", "digest" and "notice"; tests replace them).
	Renderers map[string]Renderer
	// PollInterval is how long Run waits when nothing is due.
	PollInterval time.Duration
	// Workers is how many passes Run keeps going at once (default 2, so
	// one batch is sent while the next is claimed and rendered).
	Workers int
	// ChunkSize is how many messages are handed to the transport at once
	// (default 50); between chunks the failures are judged and email to a
	// destination paused meanwhile waits. Acceptances are recorded as
	// they come, not per chunk.
	ChunkSize int
	// MaxUnmarked is how many accepted messages may wait for their record
	// before the transport's connections hold back (default 16): at any
	// instant at most MaxUnmarked plus the messages on the wire (one per
	// connection) are accepted and not yet recorded, which bounds what a
	// crash can send twice, also while the database is away.
	MaxUnmarked int
	// MarkPace is the least time between two commits of marks unless
	// MaxUnmarked wait (default 10 ms): under load the acceptances of
	// that time share one statement; at low load each is committed at once.
	MarkPace time.Duration
	// JournalDir, when set, is a local folder where each pass writes the
	// acceptances it has not yet recorded (journal.go), shared by the
	// mailers of one install on one machine; Run records those of passes
	// whose process died. "" keeps no journal.
	JournalDir string
	// HoldFor is the longest a paid email waits (for credits, or for a
	// bouncing address) counted from when it was queued; RetryFor the
	// longest temporary failures are retried; BounceLimit the consecutive
	// hard bounces that mark an address bouncing.
	HoldFor     time.Duration
	RetryFor    time.Duration
	BounceLimit int
	// Channels are the channels other than email this process delivers
	// by (package channels registers them); a row of another channel is
	// retried for a process that knows it. HTTP is the client they
	// deliver with (default: the fetcher's guarded client, no redirects).
	Channels *channel.Registry
	HTTP     *http.Client
	// PaymentsOn: readers can buy credits here (the credits-out notice
	// then links to the credits page with their account token; otherwise
	// it tells them to ask the operator).
	PaymentsOn bool
}

// Outbox delivers the queued rows of the outbox, by email and by the
// other channels.
type Outbox struct {
	cfg       OutboxConfig
	renderers map[string]Renderer
	// ways are the ways out (way.go), in the order a pass hands
	// rows over: the channels, then email.
	ways []way
	wake chan struct{}

	mu         sync.Mutex
	lastExpire time.Time
	lastDepth  time.Time

	journalOff atomic.Bool // a journal could not be made: said once in the log

	// crash, when set (tests), is asked at each step of a pass ("claimed",
	// "charged", "accepted" for each email the server accepted, from the
	// transport's goroutines, "sent" after each chunk); true stops the pass there without recording
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
	setDefault(&cfg.Batch, DefaultBatch)
	setDefault(&cfg.Lease, DefaultLease)
	setDefault(&cfg.PollInterval, DefaultPollInterval)
	setDefault(&cfg.Workers, 2)
	setDefault(&cfg.ChunkSize, DefaultChunkSize)
	setDefault(&cfg.MaxUnmarked, DefaultMaxUnmarked)
	setDefault(&cfg.MarkPace, DefaultMarkPace)
	setDefault(&cfg.HoldFor, DefaultHoldFor)
	setDefault(&cfg.RetryFor, DefaultRetryFor)
	setDefault(&cfg.BounceLimit, DefaultBounceLimit)
	if cfg.HTTP == nil {
		cfg.HTTP = channel.NewHTTPClient(fetcher.Config{})
	}
	o := &Outbox{cfg: cfg, wake: make(chan struct{}, 1)}
	o.renderers = map[string]Renderer{
		store.KindNotice: o.renderNotice,
		store.KindDigest: NewDigestRenderer(DigestRenderConfig{Store: cfg.Store, Sender: cfg.Sender, Links: cfg.Links, Clock: cfg.Clock}),
	}
	for k, r := range cfg.Renderers {
		if r != nil {
			o.renderers[k] = r
		}
	}
	_, customItem := cfg.Renderers[store.KindItem]
	o.ways = []way{&channelWay{o: o}, &mailWay{o: o, customItem: customItem}}
	o.warmUp()
	return o, nil
}

// Wake makes a waiting Run look for due email now (e.g. after queueing).
func (o *Outbox) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Run sends due email until ctx ends, then returns nil (removing the
// journal folder when no journal is left in it). Database errors are
// logged and retried after a pause; they do not stop the worker.
func (o *Outbox) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if o.cfg.JournalDir != "" {
		wg.Go(func() { o.replayLoop(ctx) })
	}
	for i := range o.cfg.Workers {
		wg.Go(func() { o.loop(ctx, i) })
	}
	wg.Wait()
	o.removeJournalDir()
	return nil
}

func (o *Outbox) loop(ctx context.Context, id int) {
	pause := o.cfg.PollInterval
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for ctx.Err() == nil {
		if id == 0 {
			o.refreshDepths(ctx)
		}
		n, err := o.SendDue(ctx)
		if ctx.Err() != nil {
			return
		}
		away := o.cfg.DBWait.Pass("mailer", err)
		switch {
		case err != nil:
			if !away {
				o.cfg.Log.Error("outbox pass failed", "err", err)
			}
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
	row     *store.OutboxRow
	way     way    // nil when no way carries the row's channel (err set)
	domain  string // the destination domain of pauses, lower case
	user    *store.User
	msg     *mail.Msg
	err     error // render error
	outcome store.ChargeOutcome
	done    bool // settled before sending (held, failed, cancelled, lease lost)

	// A row that goes by a channel of package channel (channel.go):
	// its channel and request, and what a gone target ends.
	ch       channel.Channel
	req      *channel.Request
	digestID int64
	endName  string
}

// SendDue runs one pass: expire held email if due, claim, render, charge,
// send and record. It returns how many rows it claimed.
func (o *Outbox) SendDue(ctx context.Context) (int, error) {
	now := o.cfg.Clock.Now()
	if err := o.expireHeld(ctx, now); err != nil {
		o.cfg.Log.Warn("expire held email", "err", err)
	}
	leaseEnd := time.Now().Add(o.cfg.Lease)
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
	// The lease is renewed while the pass runs; the send must end well
	// inside the lease last granted, or another worker could claim a row
	// that is still on the wire (lease.go). Recording goes on after the
	// caller's context ends, until recordFor after the claim.
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	k, sendCtx := o.keepLease(ctx, ids, leaseEnd)
	defer k.stop()
	sendCtx, cancel := context.WithTimeout(sendCtx, MaxPass)
	defer cancel()
	rec, cancelRec := context.WithTimeout(context.WithoutCancel(ctx), recordFor)
	defer cancelRec()
	return len(rows), o.process(sendCtx, rec, rows, now)
}

func (o *Outbox) dies(step string) bool { return o.crash != nil && o.crash(step) }

// creditNotice is the store.CreditNotice of the mailer: the free notice
// a person gets once per shortage, with its billing key.
func (o *Outbox) creditNotice(userID, episode int64) (string, store.Notice) {
	n := notices.CreditsOut(o.cfg.Links, o.cfg.Clock.Now(), o.cfg.HoldFor, userID, o.cfg.PaymentsOn)
	return billing.KeyCreditsNotice(userID, episode), n
}

// count adds one to the emails metric.
func (o *Outbox) count(kind, result string) {
	if o.cfg.Metrics != nil {
		o.cfg.Metrics.Emails.WithLabelValues(kind, result).Inc()
	}
}

// setDefault sets *v to def when *v is zero or negative (a config field
// left unset).
func setDefault[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
