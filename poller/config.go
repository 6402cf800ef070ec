package poller

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/dbwait"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// Defaults of Config.
const (
	DefaultConcurrency  = 64
	DefaultBatch        = 1024
	DefaultLease        = 2 * time.Minute
	DefaultWriteBatch   = 500
	DefaultSpreadWindow = 10 * time.Minute
	DefaultIdleWait     = 5 * time.Second
	DefaultPassGap      = time.Second
	DefaultWakeGap      = 50 * time.Millisecond
	// DefaultPassFeedsBatches is Config.PassFeeds's default in batches.
	DefaultPassFeedsBatches = 8
)

// Config configures a Poller. Store and Owner are required.
type Config struct {
	Store *store.Store
	// Fetch configures the HTTP client (BaseURL for the User-Agent,
	// AllowPrivate, limits).
	Fetch fetcher.Config
	Clock clock.Clock // default clock.Real{}
	Log   *slog.Logger
	// Metrics may be nil.
	Metrics *metrics.Metrics
	// DBWait, if set, is told the outcome of each pass (role "poller"): it
	// logs the database going away and coming back.
	DBWait *dbwait.Process
	// Links builds the links in notices (feed gone, blacklisted); nil sends
	// notices without links.
	Links *links.Links
	// Owner names this poller in leases; unique per process.
	Owner string
	// Concurrency is how many fetches run at once, across overlapping
	// passes (default 64). A hung request holds its slot until the fetch
	// timeout: at 1 % of requests hanging for 30 s, 16 slots carried
	// about 50 requests a second; most of the time the per-host limits
	// bind first.
	Concurrency int
	// Batch is how many feeds are claimed per query and at most outstanding
	// in a pass (default 1024).
	Batch int
	// Lease is how long a claimed feed is ours (default 2 min, raised to at
	// least twice the fetch timeout).
	Lease time.Duration
	// MaxPerHost is how many requests may be in flight to one host
	// (default MaxInFlightPerHost, 2).
	MaxPerHost int
	// WriteBatch is how many polls are written per transaction (default 500).
	WriteBatch int
	// SpreadWindow is how far overdue feeds are spread when Run starts.
	SpreadWindow time.Duration
	// IdleWait is the longest Run sleeps between passes (default 5 s).
	IdleWait time.Duration
	// PassGap is the least time from the start of one of Run's passes to
	// the next (default 1 s): feeds coming due one by one wait up to that
	// long, and are claimed and written together.
	PassGap time.Duration
	// PassFeeds is how many feeds one of Run's passes claims at most
	// (default DefaultPassFeedsBatches × Batch): through a backlog, the
	// feeds coming due meanwhile wait about one pass.
	PassFeeds int
	// WakeGap is the least time from the start of a pass to the next one
	// when Wake calls (a ping, a new subscription; default 50 ms).
	WakeGap time.Duration
	// Rand draws the jitter; default seeded from crypto/rand. It is used
	// under a lock.
	Rand *rand.Rand
	// AfterPoll, if set, is called after each poll's write committed (and
	// after each Ingest), from the goroutine that wrote it: it must be quick.
	// The WebSub subscriber uses it to notice hubs.
	AfterPoll func(ctx context.Context, ev PollEvent)
}

// PollEvent is what AfterPoll hears about one recorded poll.
type PollEvent struct {
	Feed   store.Feed     // the feed as claimed, before this poll
	Report *Report        // what happened
	Header http.Header    // response headers (nil without an HTTP answer)
	Parsed *newitems.Feed // the parsed document (nil when not parsed)
	Result store.PollOutcome
}
