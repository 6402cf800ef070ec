package poller

import (
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
)

// Timings of the WebSub subscriber. The spec gives renewal at half the lease
// and "denied → retry in a week"; the rest are choices.
const (
	// DefaultWebSubLease is the lease asked of hubs (hub.lease_seconds):
	// ten days, so a subscription is renewed every five. Hubs may grant
	// another one; RenewAt follows what they grant.
	DefaultWebSubLease = 10 * 24 * time.Hour
	// WebSubDeniedRetry: after hub.mode=denied the feed is polled as usual
	// and the subscription is tried again this much later.
	WebSubDeniedRetry = store.WebSubDeniedRetry
	// WebSubFailedRetry: after a hub refused the request (non-2xx), could
	// not be reached, never verified a request, or let a lease lapse, the
	// feed is polled as usual and the subscription tried again this much later.
	WebSubFailedRetry = store.WebSubFailedRetry
	// WebSubVerifyTimeout is how long a hub has to verify a (un)subscription
	// request it accepted; it is also the claim lease of the renewal loop,
	// so a renewal that was accepted but not verified is retried this often
	// until the lease runs out.
	WebSubVerifyTimeout = store.WebSubVerifyTimeout
	// WebSubUnknownLeaseExpiry is how long a subscription verified without
	// hub.lease_seconds counts as active: it is renewed daily (RenewAt), and
	// if two days pass without a verification the feed goes back to polling.
	WebSubUnknownLeaseExpiry = store.WebSubUnknownLeaseExpiry
	// webSubResumeDelay: when a feed polled just now turns out not to be
	// covered by its hub any more, its next poll is brought forward to at
	// most this far ahead (the poll that just ended may have scheduled a
	// weekly backup poll).
	webSubResumeDelay = 15 * time.Minute
	// hubAnswerLimit caps how much of a hub's answer is read (for the log).
	hubAnswerLimit = 64 << 10
)

// WebSubConfig configures a WebSubManager. Store, HTTP and Callback are
// required; the rest have defaults.
type WebSubConfig struct {
	Store *store.Store
	// HTTP sends requests to hubs: fetcher.NewHTTPClient, so the private
	// network guard applies to hubs (and their redirects) too.
	HTTP *http.Client
	// Callback returns the callback URL of a feed's subscription with its
	// secret: links.Links.WebSubCallback.
	Callback func(feedID int64, secret string) string
	// BaseURL is the install's public URL, for the User-Agent.
	BaseURL string
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// Lease is the lease asked of hubs; default DefaultWebSubLease.
	Lease time.Duration
	// Interval is how often Run looks for due work; default one minute.
	Interval time.Duration
	// Batch is how many feeds one RunOnce claims at most; default 32.
	Batch int
	// Concurrency bounds the hub requests in flight; default 4.
	Concurrency int
	// Rand is where secrets come from; default crypto/rand.
	Rand io.Reader
}

// WebSubManager is the WebSub subscriber's active side: it decides after
// each poll whether a feed should be subscribed to its hub (AfterPoll), and
// a loop (Run, RunOnce) sends every subscription, renewal, retry and
// unsubscription request. The callback side (verification of intent,
// content distribution) is in package web; both meet in the store's websub_*
// columns (see store.WebSubStateNone for the states).
//
// Hub requests are made only by the loop, never by a poll worker: AfterPoll
// just records what it found (one UPDATE when something changed), and Kick
// wakes the loop. The loop claims its work with store.ClaimWebSubWork, so any
// number of processes can run it against one database.
type WebSubManager struct {
	cfg  WebSubConfig
	kick chan struct{}
}

// NewWebSubManager returns a manager for cfg, defaults filled in.
func NewWebSubManager(cfg WebSubConfig) (*WebSubManager, error) {
	if cfg.Store == nil || cfg.HTTP == nil || cfg.Callback == nil {
		return nil, errors.New("websub: Store, HTTP and Callback are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	setDefault(&cfg.Lease, DefaultWebSubLease)
	setDefault(&cfg.Interval, time.Minute)
	setDefault(&cfg.Batch, 32)
	setDefault(&cfg.Concurrency, 4)
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	return &WebSubManager{cfg: cfg, kick: make(chan struct{}, 1)}, nil
}
